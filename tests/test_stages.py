"""Every stage of ctbench.experiments: ``jobs(config)`` on the smoke profile (loaded as the Snakefile loads it) asks
for exactly the work the workflow schedules, and one cheap ``run(job)`` returns a table with the stage's columns."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ctbench.experiments import stage
from ctbench.workflow import Workflow
from ctbench.workflow_check import typed_config

ROOT = Path(__file__).resolve().parent.parent
SMOKE = typed_config([ROOT / "workflow/config/paper.yaml", ROOT / "workflow/config/smoke.yaml"], {})
W = Workflow(SMOKE)
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


def test_evaluation(models):
    jobs = stage("evaluation").jobs(SMOKE)
    assert len(jobs) == len(W.evaluations()) == 6
    assert all(j["models"] == W.evaluated_models(j["experiment"], j["dataset"], j["seed"]) for j in jobs)
    assert [j["constrained"] for j in jobs] == [j["experiment"] == "mutability" for j in jobs]
    assert jobs[0]["settings"] == W.eval_settings(jobs[0]["dataset"])
    df = stage("evaluation").run({"models": models, "experiment": "mutability", "constrained": True,
                                  "settings": {"n_runs": 1, "n_individuals": 5, "lambdas": [1.0]}})
    assert {"model", "experiment", "seed", "valid", "cost", "ip", "ip_star"} <= set(df.columns)
    assert set(df["model"]) == {"full", "vanilla"} and df.attrs["meta"]["kind"] == "counterfactual_evaluation"


def test_robustness(models):
    jobs = stage("robustness").jobs(SMOKE)
    assert len(jobs) == len(W.outputs("robustness")) == 2
    assert all(j["models"] == W.eval_models(W.robustness_experiment(), j["dataset"], j["seed"]) for j in jobs)
    df = stage("robustness").run({"models": models, "seed": 0, "experiment": "mutability", "eps_grid": [0.0, 0.1]})
    assert {"dataset", "experiment", "model", "objective", "attack", "eps", "accuracy"} <= set(df.columns)


def test_attributions(models):
    jobs = stage("attributions").jobs(SMOKE)
    assert len(jobs) == len(W.outputs("attribution")) == 2
    assert (jobs[0]["n_rounds"], jobs[0]["n_samples"], jobs[0]["steps"]) == (5, 100, 10)
    df = stage("attributions").run({"models": models, "seed": 0, "experiment": "mutability", "n_rounds": 2,
                                    "n_samples": 20, "steps": 4})
    assert {"dataset", "experiment", "model", "objective", "value"} <= set(df.columns)
    assert len(df) == 2 * 2


def test_grids(tmp_path):
    from ctbench.api import train_from_config
    from ctbench.experiments.grids import SUMMARY_COLUMNS, baseline_config

    jobs = stage("grids").jobs(SMOKE)
    assert len(jobs) == len(W.grid_outputs())
    fields = ("grid", "dataset", "key", "chunk", "seed")
    assert [W.path("grid_chunk", **{f: j[f] for f in fields}) for j in jobs] == W.grid_outputs()
    assert all(j["points"] == W.grid_chunk_ids(j["grid"], j["key"], j["chunk"]) for j in jobs)
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
    assert [(j["switch"], j["dataset"]) for j in jobs] == W.fidelity_pairs()
    assert all(j["seeds"] == W.fidelity_seeds() for j in jobs)
    from ctbench.experiments.fidelity import COLUMNS, METRICS

    job = {**jobs[0], "epochs": 1, "n_runs": 2, "n_individuals": 5, "lambdas": (1.0,)}
    df = stage("fidelity").run(job)
    assert list(df.columns) == COLUMNS and list(df["metric"]) == list(METRICS)


def test_consistency():
    jobs = stage("consistency").jobs(SMOKE)
    assert jobs == W.consistency_jobs() and len(jobs) == 3
    from ctbench.experiments.consistency_search import FRAME_COLUMNS

    ct = next(j for j in jobs if j["part"] == "ct")
    job = {**ct, "settings": {**ct["settings"], "n_models": 2, "epochs": 1, "n_factuals": 5, "methods": ["ecco"],
                              "data_params": SMALL}}
    df = stage("consistency").run(job)
    assert set(FRAME_COLUMNS) <= set(df.columns) and len(df) > 0


def test_prop31():
    from ctbench.experiments import prop31 as P

    assert stage("prop31").jobs(SMOKE) == [{"quick": True}] and len(W.prop31_outputs()) == 2
    df = stage("prop31").run({"quick": True, "cfg": P.TrainConfig(n_iter=20, record_every=10), "seeds": [0],
                              "trainer_cfg": P.TrainerArmConfig(epochs=1)})
    assert {"by", "group", "runs", "lowered", "share", "ci_low", "ci_high"} <= set(df.columns)
    assert {"violations", "settings", "trainer_runs", "paths"} <= set(df.attrs)


def test_figures():
    jobs = stage("figures").jobs(SMOKE)
    assert jobs == [{"figure": "figure1", "quick": True}] and len(W.figure_outputs()) == 1
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


def test_api_reaches_every_stage():
    from ctbench import api

    assert api.jobs("prop31", SMOKE) == stage("prop31").jobs(SMOKE)
    with pytest.raises(ValueError, match="unknown stage"):
        api.jobs("tables", SMOKE)
