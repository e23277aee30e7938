"""Every stage of ctbench.experiments: ``jobs(config)`` on the smoke profile (loaded as the Snakefile loads it) plans
the work the paper needs (each stage is the one planner of its jobs: the workflow looks jobs up in these lists), the
models a job reads are models that final training makes, and one cheap ``run(job)`` returns a table with the stage's
columns."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ctbench.experiments import STAGES, stage
from ctbench.facts import path as result_path
from ctbench.workflow_check import typed_config

ROOT = Path(__file__).resolve().parent.parent
SMOKE = typed_config([ROOT / "workflow/config/paper.yaml", ROOT / "workflow/config/smoke.yaml"], {})
#: every model file the final-training jobs make
TRAINED = {m["out"] for j in stage("final").jobs(SMOKE) for m in j["members"]}
SMALL = {"n_draws": 2000, "n_train": 200, "n_val": 50, "n_test": 100}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """The mutability experiment's CT and BL models of lin_sep (one epoch), as the workflow's files."""
    from ctbench.api import train_from_config
    from ctbench.paper_settings import model_config

    d = tmp_path_factory.mktemp("models")
    return {o: str(train_from_config(model_config("lin_sep", "mutability", o, 0, epochs=1, data_params=SMALL,
                                                  overrides={"training.nce": 50})).save(d / f"{o}.pt"))
            for o in ("full", "vanilla")}


def test_final_training():
    jobs = stage("final").jobs(SMOKE)
    assert [(j["group"], j["dataset"]) for j in jobs] == [("main", "lin_sep"), ("main", "circles"),
                                                          ("ablation", "lin_sep"), ("ablation", "circles")]
    main = jobs[0]
    assert [(m["folder"], m["objective"]) for m in main["members"]] == [
        ("single", "full"), ("baseline", "vanilla"), ("mutability", "full")]
    assert {(m["folder"], m["objective"]) for m in jobs[2]["members"]} == {("ablation", "energy"),
                                                                           ("ablation", "adversarial")}
    cfg = main["members"][0]["config"]  # the profile's training settings reach every member's config
    assert cfg["training"]["epochs"] == 3 and cfg["training"]["nce"] == 100 and cfg["data"]["params"] == \
        SMOKE["data_params"]["lin_sep"]
    assert main["members"][2]["config"]["mutability"] == "protected"
    assert main["best"] == "results/smoke/tune/lin_sep/best.json" and jobs[1]["best"] is None  # tune.select on
    assert len(TRAINED) == 2 * 5


def test_every_model_read_is_trained_and_every_trained_model_is_read():
    read = set()
    for name in ("evaluation", "robustness", "attributions"):
        for j in stage(name).jobs(SMOKE):
            assert set(j["models"].values()) <= TRAINED, (name, j)
            read |= set(j["models"].values())
    for j in stage("fidelity").jobs(SMOKE):
        assert set(j["reuse"].values()) <= TRAINED
    assert read == TRAINED


def test_evaluation(models):
    jobs = stage("evaluation").jobs(SMOKE)
    assert len(jobs) == 6
    # the ablation evaluation searches only CD and AR; CT's and BL's rows come from the single evaluation
    assert {j["experiment"]: set(j["models"]) for j in jobs} == {
        "single": {"full", "vanilla"}, "mutability": {"full", "vanilla"}, "ablation": {"energy", "adversarial"}}
    assert [j["constrained"] for j in jobs] == [j["experiment"] == "mutability" for j in jobs]
    assert jobs[0]["settings"] == {"n_runs": 3, "lambdas": [0.5, 5.0], "seed": 0, "n_individuals": 20}
    df = stage("evaluation").run({"models": models, "experiment": "mutability", "constrained": True,
                                  "settings": {"n_runs": 1, "n_individuals": 5, "lambdas": [1.0]}})
    assert {"model", "experiment", "seed", "valid", "cost", "ip", "ip_star"} <= set(df.columns)
    assert set(df["model"]) == {"full", "vanilla"} and df.attrs["meta"]["kind"] == "counterfactual_evaluation"


def test_robustness(models):
    jobs = stage("robustness").jobs(SMOKE)
    assert [(j["dataset"], j["experiment"]) for j in jobs] == [("lin_sep", "ablation"), ("circles", "ablation")]
    assert set(jobs[0]["models"]) == {"full", "vanilla", "energy", "adversarial"}
    df = stage("robustness").run({"models": models, "seed": 0, "experiment": "mutability", "eps_grid": [0.0, 0.1]})
    assert {"dataset", "experiment", "model", "objective", "attack", "eps", "accuracy"} <= set(df.columns)


def test_attributions(models):
    jobs = stage("attributions").jobs(SMOKE)
    assert len(jobs) == 2 and all(set(j["models"]) == {"full", "vanilla"} for j in jobs)
    assert (jobs[0]["n_rounds"], jobs[0]["n_samples"], jobs[0]["steps"]) == (5, 100, 10)
    df = stage("attributions").run({"models": models, "seed": 0, "experiment": "mutability", "n_rounds": 2,
                                    "n_samples": 20, "steps": 4})
    assert {"dataset", "experiment", "model", "objective", "value"} <= set(df.columns)
    assert len(df) == 2 * 2


def test_grids(tmp_path):
    from ctbench.api import train_from_config
    from ctbench.experiments.grids import SUMMARY_COLUMNS, baseline_config, baseline_key, grid_points, select_jobs

    jobs = stage("grids").jobs(SMOKE)
    for grid, section in (("gen_params", "grids"), ("tune", "tune")):
        mine = [j for j in jobs if j["grid"] == grid]
        points = grid_points(grid, SMOKE[section]["overrides"][grid])
        # every point once, in chunks of at most chunk_size that share one baseline model
        assert sorted(p for j in mine for p in j["points"]) == sorted(p["id"] for p in points)
        assert all(len(j["points"]) <= SMOKE[section]["chunk_size"] for j in mine)
        key = {p["id"]: baseline_key(grid, p) for p in points}
        assert all({key[p] for p in j["points"]} == {j["key"]} for j in mine)
        assert all(j["baseline"] == result_path("grid_baseline", "results/smoke", grid=grid, dataset=j["dataset"],
                                                key=j["key"], seed=0) for j in mine)
    tune = select_jobs(SMOKE)
    assert [t["dataset"] for t in tune] == ["lin_sep"]
    assert len(tune[0]["chunks"]["grid"]) == len([j for j in jobs if j["grid"] == "tune"])
    job = {**jobs[0], "points": jobs[0]["points"][:1], "data_params": SMALL, "epochs": 1,
           "evaluation": {"n_runs": 1, "n_individuals": 5, "lambdas": [1.0]}}
    cfg = baseline_config(job["grid"], job["key"], job["dataset"], 0, "reference", 1, data_params=SMALL,
                          grid_overrides=job["grid_overrides"])
    job["baseline"] = str(train_from_config(cfg).save(tmp_path / "bl.pt"))
    df = stage("grids").run(job)
    assert list(df.columns) == SUMMARY_COLUMNS and len(df) == 1
    assert set(df.attrs) == {"epochs", "meta"}


def test_fidelity():
    jobs = stage("fidelity").jobs(SMOKE)
    assert {j["switch"] for j in jobs} == {"mmd_length_scale"} and {j["dataset"] for j in jobs} <= {"lin_sep",
                                                                                                   "circles"}
    assert all(j["seeds"] == [0] for j in jobs)  # fidelity_study.seeds null: the profile's seeds
    assert set(jobs[0]["reuse"]) == {"full_s0", "vanilla_s0"}
    from ctbench.experiments.fidelity import COLUMNS, METRICS

    job = {**jobs[0], "reuse": {}, "epochs": 1, "n_runs": 2, "n_individuals": 5, "lambdas": (1.0,)}
    df = stage("fidelity").run(job)
    assert list(df.columns) == COLUMNS and list(df["metric"]) == list(METRICS)


def test_consistency():
    jobs = stage("consistency").jobs(SMOKE)
    assert [(j["part"], j["dataset"], j["seed"]) for j in jobs] == [("black2022", "cardiotocography", 0),
                                                                    ("ct", "lin_sep", 0), ("ct", "lin_sep", 1)]
    assert jobs[1]["settings"]["data_params"] == SMOKE["data_params"]["lin_sep"]
    from ctbench.experiments.consistency_search import FRAME_COLUMNS

    ct = next(j for j in jobs if j["part"] == "ct")
    job = {**ct, "settings": {**ct["settings"], "n_models": 2, "epochs": 1, "n_factuals": 5, "methods": ["ecco"],
                              "data_params": SMALL}}
    df = stage("consistency").run(job)
    assert set(FRAME_COLUMNS) <= set(df.columns) and len(df) > 0


def test_prop31():
    from ctbench.experiments import prop31 as P

    assert stage("prop31").jobs(SMOKE) == [{"quick": True}]
    assert stage("prop31").jobs({**SMOKE, "prop31": {"enabled": False}}) == []
    df = stage("prop31").run({"quick": True, "cfg": P.TrainConfig(n_iter=20, record_every=10), "seeds": [0],
                              "trainer_cfg": P.TrainerArmConfig(epochs=1)})
    assert {"by", "group", "runs", "lowered", "share", "ci_low", "ci_high"} <= set(df.columns)
    assert {"violations", "settings", "trainer_runs", "paths"} <= set(df.attrs)


def test_figures():
    jobs = stage("figures").jobs(SMOKE)
    assert jobs == [{"figure": "figure1", "quick": True, "fidelity": "reference", "fidelity_overrides": {}},
                    {"figure": "black_figure1", "quick": True, "seed": 0, "fidelity": "reference"},
                    {"figure": "black_figure2", "quick": True, "seed": 0, "fidelity": "reference"}]
    mnist = next(j for j in stage("figures").jobs({**SMOKE, "datasets": ["mnist"]}) if j["figure"] == "mnist")
    assert (mnist["ct"], mnist["bl"]) == ("results/smoke/models/mutability/mnist/full_s0.pt",
                                          "results/smoke/models/baseline/mnist/vanilla_s0.pt")
    df = stage("figures").run({**jobs[0], "epochs": 1, "n_factuals": 2})
    assert {"panel", "objective", "x1", "x2", "cf_x1", "cf_x2", "valid", "sensitivity_ratio"} <= set(df.columns)
    assert len(df) == 4 * 2


def test_bench():
    jobs = stage("bench").jobs(SMOKE)  # the workflow runs no benchmark: the full CPU suite of `ctbench bench`
    assert len(jobs) == 15 and {j["bench"] for j in jobs} == {"search", "train", "evaluate"}
    assert len(stage("bench").jobs({"bench": {"quick": True}})) == 10
    df = stage("bench").run({"bench": "search", "n_features": 12, "n_classes": 2, "batch": 64, "repeats": 1})
    assert isinstance(df, pd.DataFrame) and len(df) == 1
    assert {"bench", "n_features", "batch", "cf_per_s"} <= set(df.columns)


def test_every_stage_plans_jobs_the_workflow_can_carry():
    """Every stage has jobs and run; its jobs are plain data (a rule's params are the job: JSON, so Snakemake can
    record and compare them), and the API reaches every stage by name."""
    import json

    from ctbench import api

    for name in STAGES:
        mod = stage(name)
        assert callable(mod.jobs) and callable(mod.run), name
        jobs = api.jobs(name, SMOKE)
        assert isinstance(jobs, list) and all(isinstance(j, dict) for j in jobs), name
        assert json.loads(json.dumps(jobs)) == jobs, name  # no tuples, paths or objects: what params record
    with pytest.raises(ValueError, match="unknown stage"):
        api.jobs("tables", SMOKE)
