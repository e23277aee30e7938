"""The workflow's config schema and the library side of the DAG (ctbench.workflow)."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from ctbench.facts import DATASETS
from ctbench.paper_settings import apply_best, model_config
from ctbench.workflow import Workflow

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {p.stem: yaml.safe_load(p.read_text()) for p in (ROOT / "workflow" / "config").glob("*.yaml")}


def _validate(cfg):
    from snakemake.utils import validate

    validate(cfg, str(ROOT / "workflow" / "schemas" / "config.schema.yaml"))


@pytest.mark.parametrize("name", ["paper", "quick", "smoke"])
def test_shipped_configs_are_valid(name):
    _validate(CONFIGS[name])


@pytest.mark.parametrize("change,needle", [
    ({"fidelity": "preprint"}, "preprint"),
    ({"datasets": ["lin_sep", "Iris Data"]}, "Iris Data"),
    ({"experiments": ["single", "extra"]}, "extra"),
    ({"evaluation": {"n_run": 3}}, "n_run"),
    ({"grids": {"names": ["everything"]}}, "everything"),
])
def test_bad_config_names_the_key(change, needle):
    from snakemake.exceptions import WorkflowError

    cfg = {**CONFIGS["smoke"], **change}
    with pytest.raises(WorkflowError, match=needle):
        _validate(cfg)


def test_model_config_uses_the_papers_final_settings():
    cfg = model_config("moons", "mutability", "full", seed=3)
    assert cfg["convergence"]["tau"] == 0.9 and cfg["objective"]["lambda_reg"] == 0.25
    assert cfg["training"]["batch_size"] == 30 and cfg["training"]["nce"] == 1000 and cfg["training"]["epochs"] == 100
    assert cfg["mutability"] == "protected" and cfg["seed"] == 3
    adult = model_config("adult", "single", "vanilla", epochs=5, overrides={"training.nce": 10})
    assert adult["training"]["batch_size"] == 1000 and adult["training"]["nce"] == 10 and adult["mutability"] is None
    assert {n for n, d in DATASETS.items() if d.final} == {
        "lin_sep", "circles", "moons", "over", "adult", "california_housing", "credit_default", "gmsc", "mnist"}
    with pytest.raises(ValueError, match="experiment"):
        model_config("lin_sep", "bogus", "full")


def test_apply_best(tmp_path):
    (tmp_path / "best.json").write_text(json.dumps({"best": {"tau": 0.9, "lambda_reg": 0.5}}))
    cfg = apply_best(model_config("lin_sep", "single", "full"), str(tmp_path / "best.json"))
    assert cfg["convergence"]["tau"] == 0.9 and cfg["objective"]["lambda_reg"] == 0.5
    (tmp_path / "bad.json").write_text(json.dumps({"tau": 0.9, "lr": 1}))
    with pytest.raises(ValueError, match="lr"):
        apply_best(cfg, str(tmp_path / "bad.json"))


def test_the_paper_profile_plans_from_the_stages():
    """The workflow's jobs are the stages' plans (ctbench.experiments.*.jobs), looked up by wildcard."""
    from ctbench.experiments.evaluation import jobs as evaluation_jobs
    from ctbench.experiments.final_training import models_of, train_config

    w = Workflow(CONFIGS["paper"])
    assert w.seeds == [0, 1, 2, 3, 4]  # the paper profile trains five seeds per model (issue 11)
    assert len(w.outputs("evaluation")) == 9 * 3 * 5
    assert models_of(w.config, "ablation", "adult", 0) == {
        **{o: f"results/paper/models/ablation/adult/{o}_s0.pt" for o in ("energy", "adversarial")},
        "full": "results/paper/models/single/adult/full_s0.pt",  # the same config as single's CT: one model
        "vanilla": "results/paper/models/baseline/adult/vanilla_s0.pt"}
    assert train_config(w.config, "ablation", "adult", "full", 3) == train_config(w.config, "single", "adult", "full",
                                                                                   3)
    abl = w.job("evaluation", {"experiment": "ablation", "dataset": "adult", "seed": "0"})
    assert set(abl["models"]) == {"energy", "adversarial"}
    alone = evaluation_jobs({**CONFIGS["paper"], "experiments": ["ablation"]})
    assert set(alone[0]["models"]) == {"full", "energy", "adversarial", "vanilla"}
    assert len(w.final_models()) == 9 * 5 * (1 + 1 + 1 + 2)  # per seed: one BL, CT, constrained CT, CD, AR
    mnist = w.job("evaluation", {"experiment": "mutability", "dataset": "mnist", "seed": 0})
    assert mnist["constrained"] and mnist["settings"]["n_individuals"] == 25 and mnist["settings"]["n_runs"] == 100
    assert w.job("evaluation", {"experiment": "single", "dataset": "lin_sep", "seed": 0})["settings"][
        "n_individuals"] == 250
    assert [j["dataset"] for j in w.jobs("robustness")][::5] == w.datasets  # all nine (Figure 3: synthetic too)
    # MNIST's final models train one job per seed (its five-seed jobs were the 34-core critical path)
    assert w.final_datasets(per_seed=True) == ["mnist"]
    assert [(j["rule"], j["seed"]) for j in w.jobs("final_seed")] == [
        *[("train_final_seed", s) for s in range(5)], *[("train_final_ablation_seed", s) for s in range(5)]]
    main = w.job("final", {"dataset": "circles"}, group="main")
    assert main["best"] is None and main["members"][0]["config"]["objective"]["lambda_reg"] == 0.5
    assert Workflow(CONFIGS["smoke"]).job("final", {"dataset": "lin_sep"}, group="main")["best"] == \
        "results/smoke/tune/lin_sep/best.json"
    with pytest.raises(ValueError, match="no evaluation job"):
        w.job("evaluation", {"experiment": "single", "dataset": "iris", "seed": 0})


def test_final_training_is_one_population_job_per_dataset():
    from ctbench.experiments.final_training import jobs, members, models_of

    cfg = {"results": "R", "datasets": ["lin_sep"], "seeds": [0, 1], "experiments": ["single", "ablation"],
           "fidelity": "reference"}
    paths = [m["out"] for j in jobs(cfg) for m in j["members"]]
    # every model the evaluations need, each once (the vanilla baseline is shared)
    needed = {p for e in ("single", "ablation") for s in (0, 1) for p in models_of(cfg, e, "lin_sep", s).values()}
    assert set(paths) == needed and len(paths) == len(set(paths))
    # two jobs per dataset: the main models, and the ablation's CD and AR, so that adding the ablation to a finished
    # run never retrains (and re-evaluates) the main models
    main, abl = members(cfg, "main"), members(cfg, "ablation")
    assert sorted(main + abl) == sorted(members(cfg))
    assert {f for f, _, _ in abl} == {"ablation"} and {o for _, o, _ in abl} == {"energy", "adversarial"}
    assert {f for f, _, _ in main} == {"baseline", "single"}
    with pytest.raises(ValueError, match="not in"):
        members(cfg, "everything")


def test_fidelity_study_uses_the_profiles_seeds_and_reuses_its_final_models():
    from ctbench.experiments.fidelity import jobs

    w = Workflow(CONFIGS["paper"])
    job = w.job("fidelity_effect", {"switch": "mmd_length_scale", "dataset": "lin_sep"})
    assert job["seeds"] == w.seeds
    assert set(job["reuse"]) == {f"{o}_s{s}" for o in ("full", "vanilla") for s in w.seeds}
    assert job["reuse"]["full_s0"] == "results/paper/models/single/lin_sep/full_s0.pt"
    assert job["reuse"]["vanilla_s0"] == "results/paper/models/baseline/lin_sep/vanilla_s0.pt"
    assert w.job("fidelity_effect", {"switch": "synthetic_mutability_zero_reg_adv", "dataset": "over"})["reuse"][
        "full_s1"] == "results/paper/models/mutability/over/full_s1.pt"
    assert set(job["reuse"].values()) <= set(w.final_models())
    alone = jobs({**CONFIGS["paper"], "datasets": ["adult", "lin_sep"], "experiments": ["mutability"],
                  "fidelity_study": {"enabled": True, "seeds": [3]}})
    assert {j["seeds"][0] for j in alone} == {3}
    # the single experiment's CT is not trained by this profile: only the shared baseline can be reused
    assert next(j for j in alone if j["switch"] == "mmd_length_scale" and j["dataset"] == "lin_sep")["reuse"] == {
        "vanilla_s3": "results/paper/models/baseline/lin_sep/vanilla_s3.pt"}
    # Table 1's evaluation of exactly the reused models is the reference setting (read, issue 21): per seed, the
    # evaluation job of the switch's experiment; none where the final CT is not this profile's
    assert job["reference_evals"] == {str(s): f"results/paper/eval/single/lin_sep_s{s}.parquet" for s in w.seeds}
    for s, path in job["reference_evals"].items():
        ev = w.job("evaluation", {"experiment": "single", "dataset": "lin_sep", "seed": s})
        assert ev["models"] == {o: job["reuse"][f"{o}_s{s}"] for o in ("full", "vanilla")}
        assert path == w.path("evaluation", experiment="single", dataset="lin_sep", seed=s)
    assert w.job("fidelity_effect", {"switch": "synthetic_mutability_zero_reg_adv", "dataset": "over"})[
        "reference_evals"]["1"] == "results/paper/eval/mutability/over_s1.parquet"
    assert all(j["reference_evals"] == ({"3": f"results/paper/eval/mutability/{j['dataset']}_s3.parquet"}
                                        if j["switch"] == "synthetic_mutability_zero_reg_adv" else {}) for j in alone)


# --------------------------------------------------------------------------------------------------- Snakemake report


def test_gallery_sorts_report_files_into_stages(tmp_path):
    from ctbench.report.gallery import STAGES, stage_of, write_gallery

    expect = {"table1.csv": "paper_tables", "table3_agreement.csv": "paper_tables", "verdicts.csv": "claims",
              "grids/gen_params_mature.png": "grids", "prop31/prop31_summary.csv": "prop31",
              "consistency_r2.csv": "consistency", "figure1.png": "figures", "benchmarks.csv": "provenance",
              "something_new.csv": "other", "table1.md": None, "robustness.pdf": None, "e.csv.gz.json": None,
              "figure1.json": None}
    assert {rel: stage_of(rel) for rel in expect} == expect
    report = tmp_path / "report"
    for rel in expect:
        (report / rel).parent.mkdir(parents=True, exist_ok=True)
        (report / rel).write_text(rel)
    with pytest.raises(FileNotFoundError, match="index.json missing"):
        write_gallery(report, tmp_path / "gallery")
    (report / "index.json").write_text("{}")
    written = write_gallery(report, tmp_path / "gallery")
    assert set(written) == {*STAGES, "other"} and all((tmp_path / "gallery" / s).is_dir() for s in written)
    assert written["paper_tables"] == ["table1.csv", "table3_agreement.csv"]
    assert written["provenance"] == ["benchmarks.csv", "index.json"] and written["robustness"] == []
    assert (tmp_path / "gallery" / "grids" / "gen_params_mature.png").read_text() == "grids/gen_params_mature.png"


SNAKEMAKE = Path(sys.executable).with_name("snakemake")


@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed next to this Python")
def test_snakemake_report_shows_the_results(tmp_path):
    """`snakemake --report` holds the report stage's tables and figures in their categories, with captions (the
    report_gallery rule alone, on a copy of the committed result set: no training)."""
    for name in ("Snakefile", "workflow", "envs", "claims.yaml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    report = tmp_path / "res" / "report"
    shutil.copytree(ROOT / "paper" / "results" / "report", report)
    (report / "fidelity_effects.csv").write_text("switch,dataset,metric,reference,paper,delta\n")
    if not (report / "report_figures.json").exists():  # a set made before the report_figures job (issue 21)
        (report / "report_figures.json").write_text('{"written": {}}\n')
    if not (report / "seed_ledger.json").exists():  # ... and before the report_seed_ledger job (issue 21)
        (report / "seed_ledger.json").write_text('{"written": ["verdicts_seeds.csv"]}\n')
    shutil.copy(ROOT / "paper" / "_static" / "ctbench.css", report / "unused.css")          # not shown
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    Figure(figsize=(1, 1)).savefig(report / "figure1.png", dpi=20)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "PATH": os.pathsep.join([str(SNAKEMAKE.parent), os.environ.get("PATH", "")])}
    base = [str(SNAKEMAKE), "report_gallery", "--allowed-rules", "report_gallery", "--configfile",
            "workflow/config/smoke.yaml", "--config", f"results={tmp_path / 'res'}"]
    for extra in (["--cores", "1"], ["--report", "report.zip"]):
        p = subprocess.run(base + extra, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    with zipfile.ZipFile(tmp_path / "report.zip") as z:
        names = {Path(n).name for n in z.namelist()}
        html = z.read("report/report.html").decode()
    assert {"table1.csv", "table3.csv", "verdicts.csv", "figure1.png", "benchmarks.csv"} <= names
    assert not {"table1.md", "unused.css"} & names
    for needle in ("1. Claims", "2. Paper tables", "3. Figures", "Table 1: percent reduction", "The claims ledger"):
        assert needle in html, needle



def test_unknown_dataset_is_refused_at_start_up_with_how_to_register_one():
    """The schema accepts any dataset name (user datasets need no schema edit); the registry refuses unknown ones."""
    from ctbench.errors import ConfigError

    _validate({**CONFIGS["smoke"], "datasets": ["lin_sep", "iris"]})
    with pytest.raises(ConfigError, match=r"unknown dataset 'iris'.*known: .*lin_sep.*plugins:"):
        Workflow({**CONFIGS["smoke"], "datasets": ["lin_sep", "iris"]}).check()


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has CUDA")
def test_a_cuda_run_planned_for_a_cluster_is_not_refused_for_the_login_nodes_missing_gpu():
    """Run here, ``device: cuda`` without a GPU is refused at start-up; under a cluster executor the jobs run on other
    nodes, so the planning machine's missing GPU is no reason to refuse (each job's ``ctbench`` checks its own node),
    while a bad value still is."""
    from ctbench.errors import ConfigError

    schema = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
    cuda = Workflow({**CONFIGS["smoke"], "device": "cuda"})
    with pytest.raises(ConfigError, match="device: 'cuda' requested, but this machine has no CUDA device"):
        cuda.check(schema)
    cuda.check(schema, jobs_run_here=False)
    with pytest.raises(ConfigError, match="device"):
        Workflow({**CONFIGS["smoke"], "device": "gpu"}).check(schema, jobs_run_here=False)
    # the Snakefile tells the check where the jobs run: Snakemake's own flag for a cluster (non-local) executor
    assert "jobs_run_here=not (workflow.non_local_exec or workflow.remote_exec)" in (ROOT / "Snakefile").read_text()
