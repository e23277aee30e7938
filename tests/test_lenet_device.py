"""``lenet.device`` (issue 21): the LeNet pair trains on a GPU when asked (the CT model's 100 epochs are the paper
profile's longest CPU job), its rule then asks for one GPU, and nothing else in the plan moves; by default the plan
is byte for byte today's. No GPU is needed: the plans are dry runs."""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ctbench.errors import ConfigError
from ctbench.experiments import lenet
from ctbench.workflow_check import check_schema

ROOT = Path(__file__).resolve().parent.parent
PAPER = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())
SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
DATA = Path(os.environ.get("CTBENCH_DATA", ROOT.parent / "shared" / "data"))
RES = "results/lenet_device_plan"


def _cfg(**block):
    return {**copy.deepcopy(PAPER), "lenet": {**PAPER["lenet"], **block}}


def test_the_planner_puts_the_pair_on_lenet_device_and_the_profile_device_by_default():
    assert lenet.device(PAPER) == "cpu" and lenet.gpus(PAPER) == 0
    default = lenet.jobs(PAPER)
    assert lenet.jobs(_cfg(device=None)) == default and lenet.jobs(_cfg(device="cpu")) == default
    assert {j["config"]["device"] for j in default} == {"cpu"}
    for dev in ("cuda", "cuda:1"):
        jobs = lenet.jobs(_cfg(device=dev))
        assert {j["config"]["device"] for j in jobs} == {dev} and lenet.gpus(_cfg(device=dev)) == 1
        # only the device differs from the CPU jobs; the evaluation (on the CPU) is the same job
        assert [{**j, "config": {**j["config"], "device": "cpu"}} for j in jobs] == default
        assert lenet.evaluation_jobs(_cfg(device=dev)) == lenet.evaluation_jobs(PAPER)
    # null follows the profile's device; an explicit one overrides it
    assert lenet.device({**_cfg(device=None), "device": "cuda"}) == "cuda"
    assert lenet.device({**_cfg(device="cpu"), "device": "cuda"}) == "cpu"


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "CUDA", 0, "cuda:"])
def test_a_bad_device_is_refused_saying_what_to_write(bad):
    with pytest.raises(ConfigError, match=r"lenet.device: .* is not a device; write cpu, cuda or cuda:N"):
        lenet.jobs(_cfg(device=bad))
    with pytest.raises(ConfigError, match="lenet.device: "):  # also while the stage is off
        lenet.jobs(_cfg(device=bad, enabled=False))
    with pytest.raises(ConfigError, match=r"lenet.device: .*write cpu, cuda or cuda:N"):
        check_schema(_cfg(device=bad), SCHEMA)
    check_schema(_cfg(device="cuda:0"), SCHEMA)
    check_schema(_cfg(device=None), SCHEMA)


def _plan(tmp_path, *config):
    """The jobs of a dry run of the paper profile narrowed to MNIST (its MLP and LeNet jobs, 59 in all)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from workflow_plan import parse

    work = tmp_path / "wf"
    if not work.exists():
        work.mkdir()
        for name in ("Snakefile", "workflow", "envs", "claims.yaml"):
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy)(src, work / name)
    env = {**os.environ, "CTBENCH_DATA": str(DATA),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([str(SNAKEMAKE), "-n", "-p", "--cores", "1", "--config", f"results={RES}", "datasets=[mnist]",
                        *config], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    return [json.loads(j) for j in parse(p.stdout + p.stderr, RES)]


def _without_config_record(jobs):
    """The jobs, the report's ``--config-json`` (its record of every setting written, this one too) left out."""
    out = []
    for j in jobs:
        if j["rule"] == "report":
            j = {**j, "shell": re.sub(r"--config-json '[^']*'", "--config-json ...", j["shell"])}
        out.append(j)
    return out


@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed next to this Python")
@pytest.mark.skipif(not (DATA / "mnist").is_dir(), reason="the MNIST files are not in CTBENCH_DATA")
def test_on_cuda_only_the_lenet_trainings_change_and_they_ask_for_a_gpu(tmp_path):
    default = _plan(tmp_path)
    # null: the profile's plan (the report records the setting it was given, as it does every setting)
    assert _without_config_record(_plan(tmp_path, "lenet={device: null}")) == _without_config_record(default)
    cuda = _plan(tmp_path, "lenet={device: cuda}")
    train = [j for j in default if j["rule"] == "lenet_train"]
    assert len(train) == 2 and all("gpu" not in j["resources"] and '"device": "cpu"' in j["shell"] for j in train)
    gpu = [j for j in cuda if j["rule"] == "lenet_train"]
    for before, after in zip(train, gpu, strict=True):
        # the snakemake-executor-plugin-slurm resource (sbatch --gpus=1) and the train config's device
        assert set(after["resources"].split(", ")) == {*before["resources"].split(", "), "gpu=1"}
        assert after["shell"] == before["shell"].replace('"device": "cpu"', '"device": "cuda"')
        assert {k: v for k, v in after.items() if k not in ("resources", "shell")} == {
            k: v for k, v in before.items() if k not in ("resources", "shell")}
    # every other job, the LeNet evaluation and the MNIST MLPs' training included, is unchanged
    others = _without_config_record([j for j in default if j["rule"] != "lenet_train"])
    assert _without_config_record([j for j in cuda if j["rule"] != "lenet_train"]) == others
    assert {j["rule"] for j in others} >= {"lenet_evaluate", "train_final_seed", "evaluate", "report"}
