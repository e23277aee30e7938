"""The catalog of facts (ctbench.facts): the registry, the workflow, its rules and schema, and the report agree
with it, and a user's dataset takes its family and label from its loader."""

import re
import sys
from pathlib import Path

import pytest
import yaml

from ctbench import facts
from ctbench.data import available, load_dataset, registry
from ctbench.errors import ConfigError
from ctbench.facts import DATASETS, EXPERIMENTS, GRID_NAMES, PAPER_DATASETS, PATHS, TUNING_GRIDS
from ctbench.workflow import Workflow

ROOT = Path(__file__).resolve().parent.parent
SMOKE = yaml.safe_load((ROOT / "workflow/config/smoke.yaml").read_text())
PAPER = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())


def test_the_papers_datasets_labels_and_order():
    assert PAPER_DATASETS == ("lin_sep", "circles", "moons", "over", "adult", "california_housing", "credit_default",
                              "gmsc", "mnist")
    assert facts.PAPER_ORDER == ("LS", "Circ", "Moon", "OL", "Adult", "CH", "Cred", "GMSC", "MNIST")
    assert facts.SYNTHETIC == ("lin_sep", "circles", "moons", "over")
    assert facts.published_hyperparameters("moons") == {"batch_size": 30, "tau": 0.9, "nce": 1000, "lambda_reg": 0.25}
    assert facts.published_hyperparameters("gauss10") == facts.DEFAULT_FINAL  # not in the paper's table
    assert set(facts.BLACK2022_LABELS.values()) < set(facts.BLACK2022_ORDER)  # Warfarin: no loader


def test_catalog_and_registry_agree():
    info = available()
    assert set(DATASETS) <= set(info)
    for name, known in DATASETS.items():
        assert info[name]["family"] == known.family, name
        assert info[name]["label"] == known.label, name
        assert registry.family(name) == known.family
    # the paper's short labels are aliases of the loaders: `ctbench data prepare LS` works
    for name in PAPER_DATASETS:
        if name != "adult":
            assert DATASETS[name].label in info[name]["aliases"], name
    with pytest.raises(ValueError, match="the catalog"):
        registry.register("lin_sep", family="tabular")(lambda **kw: None)


def test_a_users_dataset_takes_family_and_label_from_its_loader(monkeypatch):
    monkeypatch.setattr(registry, "_LOADERS", dict(registry._LOADERS))
    monkeypatch.setattr(registry, "_INFO", dict(registry._INFO))
    registry.register("my_blobs", family="synthetic", label="MB")(lambda **kw: None)
    registry.register("my_table", family="vision")(lambda **kw: None)
    assert (registry.family("my_blobs"), registry.label("my_blobs")) == ("synthetic", "MB")
    assert (registry.family("my_table"), registry.label("my_table")) == ("vision", "my_table")
    assert (registry.family("never_registered"), registry.label("never_registered")) == ("tabular", "never_registered")
    w = Workflow({**SMOKE, "datasets": ["my_blobs", "my_table"]})
    assert w.mem_mb("my_blobs") == 1000 and w.runtime_min("my_table", "evaluate") == 180
    with pytest.raises(ValueError, match="family 'images' is not one of"):
        registry.register("my_images", family="images")(lambda **kw: None)


def test_an_unknown_name_lists_the_known_ones_and_says_how_to_register():
    with pytest.raises(ValueError, match=r"unknown name 'iris'.*lin_sep.*register a loader.*plugins:"):
        load_dataset("iris")
    for change, where in (({"grids": {**SMOKE["grids"], "datasets": ["irs"]}}, "grids.datasets"),
                          ({"consistency": {**SMOKE.get("consistency", {}), "datasets": ["irs"]}},
                           "consistency.datasets")):
        with pytest.raises(ConfigError, match=rf"{where}: unknown dataset 'irs'.*plugins:"):
            Workflow({**SMOKE, **change}).check()
    with pytest.raises(ConfigError, match="grids.datasets: 'adult' is a tabular dataset"):
        Workflow({**SMOKE, "grids": {**SMOKE["grids"], "datasets": ["adult"]}}).check()


def test_path_templates():
    assert facts.fields("grid_chunk") == {"results", "grid", "dataset", "key", "chunk", "seed"}
    assert facts.path("evaluation", "R/", experiment="single", dataset="lin_sep", seed=0) == \
        "R/eval/single/lin_sep_s0.parquet"
    assert facts.pattern("model", "R", dataset="{{dataset}}") == \
        "R/models/{folder}/{{dataset}}/{objective}_s{seed}.pt"
    with pytest.raises(ValueError, match=r"takes the fields \['dataset', 'seed'\]"):
        facts.path("robustness", "R", dataset="lin_sep")
    with pytest.raises(ValueError, match="no result path 'evals'"):
        facts.path("evals", "R")


def _every_path(w: Workflow) -> list[str]:
    kinds = ("evaluation", "robustness", "attribution", "grid_chunk", "tune_best", "fidelity_effect", "consistency")
    out = [p for k in kinds for p in w.outputs(k)]
    out += [*w.final_models(), w.path("report_index"), w.path("book_index"), w.path("fidelity_effects"),
            w.path("stage_times"), w.path("stage_times_jobs")]
    out += [w.path("prop31_file", table=t) for t in ("summary", "settings")]
    out += [w.path("report_figure", name=n) for n in ("figure1", "mnist_counterfactuals")]
    out += [w.path(k) for k in ("report", "prop31", "benchmarks", "report_gallery", "book", "report_figures")]
    out += [w.path("data", dataset="lin_sep")]
    shards = (w.config.get("consistency") or {}).get("shards") or {}  # part black2022's retraining in K jobs
    out += [w.path("consistency_shard", part=j["part"], dataset=j["dataset"], seed=j["seed"], shard=i, n=k)
            for j in w.jobs("consistency") if j["part"] == "black2022" and (k := int(shards.get(j["dataset"], 1))) > 1
            for i in range(k)]
    return out + [j["baseline"] for j in w.jobs("grid_chunk")]


@pytest.mark.parametrize("config", [SMOKE, PAPER], ids=["smoke", "paper"])
def test_every_template_is_filled_by_the_workflow(config):
    w = Workflow({**config, "results": "R", "grids": {**(config.get("grids") or {}), "enabled": True}})
    paths = _every_path(w)
    assert not [p for p in paths if "{" in p or "}" in p]
    for kind, template in PATHS.items():
        rx = re.escape(template).replace(re.escape("{results}"), "R")
        rx = re.sub(r"\\\{(\w+)\\\}", r"[^/]+", rx)
        assert any(re.fullmatch(rx, p) for p in paths), f"no workflow path fills {kind}: {template}"


def test_schema_vocabularies_are_the_catalogs():
    from ctbench.experiments.grids import GRIDS as GRID_DEFINITIONS

    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())["properties"]
    assert schema["experiments"]["items"]["enum"] == list(EXPERIMENTS)
    assert schema["grids"]["properties"]["names"]["items"]["enum"] == list(GRID_NAMES)
    assert schema["tune"]["properties"]["names"]["items"]["enum"] == list(TUNING_GRIDS)
    assert list(GRID_DEFINITIONS) == [*GRID_NAMES, *TUNING_GRIDS]
    enums = re.findall(r"enum: \[([^\]]*)\]", (ROOT / "workflow/schemas/config.schema.yaml").read_text())
    assert not {v.strip() for e in enums for v in e.split(",")} & set(DATASETS)  # dataset names: the registry's


def test_rules_take_paths_from_the_catalog_and_name_the_environment():
    for smk in sorted((ROOT / "workflow/rules").glob("*.smk")):
        text = smk.read_text()
        # results under {RES} are the catalog's; only Snakemake's own logs and benchmarks are spelt in the rules
        assert not re.findall(r"\{RES\}/(?!logs/|benchmarks/)", text), smk.name
        for rule in re.split(r"\n\s*rule ", text)[1:]:
            if re.search(r"shell:\s*\n\s*\"(ctbench|python -m ctbench|OMP_NUM_THREADS=\S+ ctbench)", rule):
                assert 'conda:\n' in rule and '"../../envs/ctbench.yaml"' in rule, f"{smk.name}: {rule[:40]}"


@pytest.mark.skipif(not Path(sys.executable).with_name("snakemake").exists(), reason="snakemake not installed")
def test_plan_script_reads_every_job_of_a_dry_run(tmp_path):
    sys.path.insert(0, str(ROOT / "tests"))
    from workflow_plan import diff, plan

    jobs = plan(ROOT, "smoke", str(tmp_path / "res"))
    parsed = [yaml.safe_load(j) for j in jobs]
    # 33 + stage_times + the retrain stage (one training job, one evaluation) + Black et al.'s Figures 1 and 2
    # + cardiotocography's consistency retraining in 2 shard jobs + report_figures + report_seed_ledger
    assert len(parsed) == 42 and [j["rule"] for j in parsed].count("all") == 1
    assert all(j["output"] and "shell" in j for j in parsed if j["rule"] != "all")
    assert {j["rule"] for j in parsed} >= {"data", "train_final", "evaluate", "report", "book", "tune_select",
                                           "black_figure1", "black_figure2", "report_figures",
                                           "report_seed_ledger"}
    assert diff(jobs, jobs) == ([], []) and diff(jobs, jobs[1:]) == ([jobs[0]], [])


def test_the_evaluation_defaults_have_one_home():
    """Issue 22 item 3: ``facts.EVALUATION`` and ``FAMILY_FACTS`` are the evaluation protocol's defaults; the paper
    profiles state the same values (YAML cannot import them, so they are held equal here)."""
    from ctbench.evaluation.protocol import EvalProtocol

    for family, f in facts.FAMILY_FACTS.items():
        p = EvalProtocol.reference(family)
        assert (p.lambdas, p.n_runs, p.n_individuals) == (facts.EVALUATION["lambdas"], facts.EVALUATION["n_runs"],
                                                          f["n_individuals"])
    for name in ("paper", "paper_table1", "verify"):
        ev = yaml.safe_load((ROOT / f"workflow/config/{name}.yaml").read_text())["evaluation"]
        assert tuple(ev["lambdas"]) == facts.EVALUATION["lambdas"] and ev["n_runs"] == facts.EVALUATION["n_runs"]
        assert ev["n_individuals"] == {f: v["n_individuals"] for f, v in facts.FAMILY_FACTS.items()}, name


def test_each_switch_has_its_study_facts_on_its_field():
    """Issue 22 item 3: the fidelity study's catalogue is read from the fields' metadata (one home): every study
    entry is a switch of the study, with the presets' values unless the entry names the value flipped to."""
    from dataclasses import fields

    from ctbench.evaluation.protocol import EvalProtocol
    from ctbench.experiments.fidelity_switches import SWITCHES
    from ctbench.fidelity import PRESETS, Fidelity, Study

    entries = {f.name: f.metadata["study"] for cls in (Fidelity, EvalProtocol) for f in fields(cls)
               if "study" in f.metadata}
    assert list(SWITCHES) == sorted(entries, key=lambda n: entries[n].rank)
    for name, study in entries.items():
        assert isinstance(study, Study)
        spec = SWITCHES[name]
        assert (spec.retrain, spec.experiment, spec.datasets, spec.metrics) == (study.retrain, study.experiment,
                                                                               study.datasets, study.metrics)
        if spec.kind == "fidelity":
            assert spec.reference == getattr(PRESETS["reference"], name)
            assert spec.paper == (study.alternative if study.alternative is not None
                                  else getattr(PRESETS["paper"], name))
            assert spec.reference != spec.paper, name
