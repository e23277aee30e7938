"""The lenet stage (issue 24 item 1, appendix F.1.2): one CT and one BL LeNet on MNIST at the final MNIST settings,
each its own job, so that training_time.csv gets ``model: lenet`` rows with each model's own measured seconds."""

import copy
import json
import os
from pathlib import Path

import pytest
import yaml

from ctbench import facts
from ctbench.errors import ConfigError
from ctbench.experiments import lenet
from ctbench.experiments.final_training import train_config
from ctbench.workflow import Workflow

ROOT = Path(__file__).resolve().parent.parent
PAPER = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())
DATA = Path(os.environ.get("CTBENCH_DATA", ROOT.parent / "shared" / "data"))


def test_the_jobs_are_the_final_mnist_configs_with_a_lenet():
    cfg = {**PAPER, "lenet": {"enabled": True, "datasets": None, "seed": 0, "epochs": None}}
    w = Workflow(cfg)
    jobs = w.jobs("lenet")
    assert [(j["dataset"], j["objective"], j["seed"]) for j in jobs] == [("mnist", "full", 0), ("mnist", "vanilla", 0)]
    for j in jobs:
        folder = "single" if j["objective"] == "full" else "baseline"
        mlp = train_config(cfg, folder, "mnist", j["objective"], 0)
        assert j["config"] == {**mlp, "model": {"type": "lenet"}}  # only the architecture differs
        assert j["config"]["training"] == {**mlp["training"], "epochs": 100, "batch_size": 1000, "nce": 5000}
        assert j["out"] == w.path("lenet_model", dataset="mnist", objective=j["objective"], seed=0)
        # training_time.csv names a model's experiment by the folder two above its file
        assert Path(j["out"]).parent.parent.name == "lenet"
    short = lenet.jobs({**cfg, "lenet": {"enabled": True, "seed": 3, "epochs": 2}})
    assert {j["config"]["training"]["epochs"] for j in short} == {2} and {j["seed"] for j in short} == {3}
    assert lenet.jobs({**cfg, "datasets": ["lin_sep"]}) == []  # `datasets:` narrows it, as every stage
    with pytest.raises(ConfigError, match="lenet.datasets: 'lin_sep' is a synthetic dataset"):
        lenet.jobs({**cfg, "lenet": {"enabled": True, "datasets": ["lin_sep"]}})
    assert lenet.jobs({**cfg, "lenet": {"enabled": False}}) == []
    assert not set(lenet.PATHS) & set(facts.PATHS)


def test_the_schema_takes_the_block():
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    schema = str(ROOT / "workflow/schemas/config.schema.yaml")
    validate(copy.deepcopy(PAPER), schema)
    with pytest.raises(WorkflowError, match="epochs"):
        validate({**PAPER, "lenet": {"enabled": True, "epochs": 0}}, schema)


@pytest.mark.skipif(not (DATA / "mnist").is_dir(), reason="the MNIST files are not in CTBENCH_DATA")
def test_a_lenet_model_gives_a_lenet_row_of_training_time(tmp_path, monkeypatch):
    """One epoch on a tiny MNIST resample: the sidecar records the LeNet and its own seconds (not a population's)."""
    from ctbench.report.claims import training_times
    from ctbench.training.pipeline import train_from_config

    monkeypatch.setenv("CTBENCH_DATA", str(DATA))
    cfg = {**PAPER, "results": str(tmp_path), "data_params": {"mnist": {"n_per_class": 20, "n_val": 20}},
           "training": {"epochs": 1}, "training_overrides": {"training.nce": 10},
           "lenet": {"enabled": True}}
    sidecars = []
    for job in lenet.jobs(cfg):
        res = train_from_config(job["config"])
        res.save(job["out"])
        sidecars.append(f"{job['out']}.json")
        assert "population" not in res.meta
    tt = training_times(sidecars)
    assert list(tt["model"]) == ["lenet", "lenet"] and list(tt["objective"]) == ["full", "vanilla"]
    assert list(tt["dataset"]) == ["MNIST", "MNIST"] and (tt["train_seconds"] > 0).all()
    assert tt["train_seconds"].nunique() == 2
    assert json.loads(Path(sidecars[0]).read_text())["model_spec"]["type"] == "lenet"
