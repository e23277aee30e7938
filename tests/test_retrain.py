"""The retrain stage (issue 24 item 5): extra training seeds of the final models, planned by re-running the final
training and evaluation planners, so that a retrained model is the model the main rule would train for that seed."""

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from ctbench import facts
from ctbench.errors import ConfigError
from ctbench.experiments import retrain
from ctbench.experiments.evaluation import jobs as evaluation_jobs
from ctbench.experiments.final_training import jobs as final_jobs
from ctbench.experiments.final_training import run as train_job
from ctbench.experiments.final_training import train_config
from ctbench.workflow import Workflow

ROOT = Path(__file__).resolve().parent.parent
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
PAPER = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())
TINY = {"profile": "tiny", "results": "R", "fidelity": "reference", "datasets": ["lin_sep"], "seeds": [0],
        "experiments": ["single", "mutability"],
        "data_params": {"lin_sep": {"n_draws": 1000, "n_train": 100, "n_val": 40, "n_test": 40}},
        "training": {"epochs": 2}, "training_overrides": {"training.nce": 10},
        "evaluation": {"n_runs": 1, "lambdas": [1.0], "n_individuals": {"synthetic": 3}, "seed": 0},
        "retrain": {"enabled": True, "seeds": [1, 2], "datasets": ["lin_sep"], "experiments": ["single"]}}


def test_templates_are_the_main_ones_under_retrain():
    for kind, template in retrain.PATHS.items():
        main = facts.PATHS[kind.removeprefix("retrain_")]
        assert template == main.replace("{results}", "{results}/retrain", 1)
    assert not set(retrain.PATHS) & set(facts.PATHS)  # facts.py untouched: every stage's fingerprint stays


def test_the_paper_profile_retrains_single_and_mutability_with_five_more_seeds():
    w = Workflow(PAPER)
    train, evals = w.jobs("retrain_final"), w.jobs("retrain_evaluation")
    datasets = ["lin_sep", "circles", "moons", "over", "adult", "california_housing", "credit_default", "gmsc"]
    assert [j["dataset"] for j in train] == datasets and len(evals) == 8 * 5 * 2   # single and mutability
    assert set(w.seeds) | set(PAPER["retrain"]["seeds"]) == set(range(10))  # ten training seeds per dataset
    job = w.job("retrain_final", {"dataset": "moons"})
    assert {(m["folder"], m["objective"]) for m in job["members"]} == {("single", "full"), ("mutability", "full"),
                                                                       ("baseline", "vanilla")}
    assert sorted(m["seed"] for m in job["members"]) == sorted([5, 6, 7, 8, 9] * 3)
    for m in job["members"]:
        # the main model's config apart from the seed, under results/paper/retrain
        assert m["config"] == train_config(PAPER, m["folder"], "moons", m["objective"], m["seed"])
        main = copy.deepcopy(train_config(PAPER, m["folder"], "moons", m["objective"], 0))
        assert m["config"] == {**main, "seed": m["seed"]}
        assert m["out"] == w.path("retrain_model", folder=m["folder"], dataset="moons", objective=m["objective"],
                                  seed=m["seed"])
        assert m["out"].startswith("results/paper/retrain/models/")
    ev = w.job("retrain_evaluation", {"experiment": "single", "dataset": "adult", "seed": 7})
    main_ev = w.job("evaluation", {"experiment": "single", "dataset": "adult", "seed": 0})
    assert ev["settings"] == main_ev["settings"] and ev["constrained"] == main_ev["constrained"] is False
    assert ev["models"] == {"full": "results/paper/retrain/models/single/adult/full_s7.pt",
                            "vanilla": "results/paper/retrain/models/baseline/adult/vanilla_s7.pt"}
    ev = w.job("retrain_evaluation", {"experiment": "mutability", "dataset": "moons", "seed": 9})
    main_ev = w.job("evaluation", {"experiment": "mutability", "dataset": "moons", "seed": 0})
    assert ev["settings"] == main_ev["settings"] and ev["constrained"] == main_ev["constrained"] is True
    assert ev["models"]["full"] == "results/paper/retrain/models/mutability/moons/full_s9.pt"
    assert w.outputs("retrain_evaluation")[0] == "results/paper/retrain/eval/single/lin_sep_s5.parquet"
    # the main plans are untouched by the block
    # (eight datasets' main and ablation jobs, and MNIST's per seed: training.per_seed)
    assert len(w.jobs("final")) == 2 * 8 and len(w.jobs("final_seed")) == 2 * 5
    assert len(w.jobs("evaluation")) == 9 * 3 * 5


def test_the_block_is_checked_and_off_plans_nothing():
    assert retrain.train_jobs({**TINY, "retrain": {"enabled": False, "seeds": [1]}}) == []
    assert retrain.evaluation_jobs({k: v for k, v in TINY.items() if k != "retrain"}) == []
    with pytest.raises(ConfigError, match=r"retrain.seeds: \[0\] also in `seeds:`.*enabled: false"):
        retrain.train_jobs({**TINY, "retrain": {**TINY["retrain"], "seeds": [0, 1]}})
    with pytest.raises(ConfigError, match="retrain.experiments.*ablation"):
        retrain.train_jobs({**TINY, "retrain": {**TINY["retrain"], "experiments": ["ablation"]}})
    # a profile's `datasets:` narrows the stage as it narrows every other
    assert retrain.train_jobs({**TINY, "retrain": {**TINY["retrain"], "datasets": ["moons"]}}) == []
    both = retrain.evaluation_jobs({**TINY, "retrain": {**TINY["retrain"], "experiments": ["single", "mutability"]}})
    assert {(j["experiment"], j["constrained"]) for j in both} == {("single", False), ("mutability", True)}


def test_the_schema_takes_the_block_and_refuses_the_ablation():
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    schema = str(ROOT / "workflow/schemas/config.schema.yaml")
    validate(copy.deepcopy(PAPER), schema)
    with pytest.raises(WorkflowError, match="ablation"):
        validate({**PAPER, "retrain": {**PAPER["retrain"], "experiments": ["ablation"]}}, schema)
    with pytest.raises(WorkflowError, match="n_seeds"):
        validate({**PAPER, "retrain": {**PAPER["retrain"], "n_seeds": 5}}, schema)


def _state(path):
    return torch.load(path, map_location="cpu", weights_only=False)["state_dict"]


def test_a_retrained_model_is_bitwise_the_model_the_main_rule_trains_for_its_seed(tmp_path):
    """Seed 1 trained by final training (main seeds [1], a population with the mutability CT) and by the retrain
    stage (main seed 0, extra seeds [1, 2], a population of four): the same weights, bit for bit."""
    main_cfg = {**TINY, "results": str(tmp_path / "main"), "seeds": [1], "retrain": {"enabled": False}}
    extra_cfg = {**TINY, "results": str(tmp_path / "extra")}
    main_job = next(j for j in final_jobs(main_cfg) if j["group"] == "main")
    extra_job = retrain.train_jobs(extra_cfg)[0]
    assert len(main_job["members"]) == 3 and len(extra_job["members"]) == 4  # different populations
    assert train_job(main_job)["ok"].all() and train_job(extra_job)["ok"].all()
    for folder, objective in (("single", "full"), ("baseline", "vanilla")):
        a = facts.path("model", main_cfg["results"], folder=folder, dataset="lin_sep", objective=objective, seed=1)
        b = retrain.path("retrain_model", extra_cfg["results"], folder=folder, dataset="lin_sep",
                         objective=objective, seed=1)
        sa, sb = _state(a), _state(b)
        assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa), (folder, objective)
    # and seed 2 is another model (the comparison can fail)
    c = retrain.path("retrain_model", extra_cfg["results"], folder="single", dataset="lin_sep", objective="full",
                     seed=2)
    assert not all(torch.equal(x, y) for x, y in zip(_state(a).values(), _state(c).values(), strict=True))
    assert evaluation_jobs(main_cfg)[0]["settings"] == retrain.evaluation_jobs(extra_cfg)[0]["settings"]


@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed next to this Python")
def test_snakemake_plans_the_stage_and_passes_the_files_to_the_report_only_when_asked(tmp_path):
    cfg = {k: v for k, v in TINY.items() if k != "results"}
    cfg.update({"robustness": {"enabled": False}, "attribution": {"enabled": False}, "grids": {"enabled": False},
                "tune": {"enabled": False}, "prop31": {"enabled": False}, "figures": {"enabled": False},
                "fidelity_study": {"enabled": False}, "consistency": {"enabled": False},
                "book": {"enabled": False}, "report": {"publish": False}})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    outs = {}
    for to_report in (False, True):
        cfg["retrain"] = {**TINY["retrain"], "report": to_report}
        (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(cfg))
        p = subprocess.run([str(SNAKEMAKE), "-n", "-p", "--cores", "1", "--configfile", str(tmp_path / "tiny.yaml"),
                            "--config", f"results={tmp_path / 'res'}"], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        outs[to_report] = p.stdout + p.stderr
    table = outs[False].split("Job stats:", 1)[1].split("total", 1)[0]
    stats = dict(t for t in (line.split() for line in table.splitlines()) if len(t) == 2 and t[1].isdigit())
    # the two retrained seeds' evaluations are one process (evaluation.group_seeds, which the profile inherits from
    # paper.yaml); the per-seed rule runs none
    assert stats["retrain_train"] == "1" and stats["retrain_evaluate_seeds"] == "1" and "retrain_evaluate" not in stats
    for f in ("retrain/models/single/lin_sep/full_s2.pt", "retrain/models/baseline/lin_sep/vanilla_s1.pt",
              "retrain/eval/single/lin_sep_s1.parquet"):
        assert f in outs[False]
    assert "--retrain-eval" not in outs[False]
    assert f"--retrain-eval {tmp_path / 'res'}/retrain/eval/single/lin_sep_s1.parquet" in outs[True]
