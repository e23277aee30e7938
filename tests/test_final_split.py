"""Final training per seed (``training.per_seed``, ctbench.experiments.final_split): the planned jobs, the rules'
DAG, and the models, which must be those of the dataset's all-seeds job bit for bit."""

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from ctbench.errors import ConfigError
from ctbench.experiments import final_training
from ctbench.experiments.final_split import per_seed_datasets, split_jobs
from ctbench.workflow import Workflow

ROOT = Path(__file__).resolve().parent.parent
SMOKE = yaml.safe_load((ROOT / "workflow" / "config" / "smoke.yaml").read_text())
SNAKEMAKE = Path(sys.executable).with_name("snakemake")


def _cfg(**change):
    return {**SMOKE, "seeds": [0, 2], "training": {"epochs": 3, "per_seed": ["circles", "mnist"]}, **change}


def test_per_seed_datasets_are_planned_one_job_per_seed_and_group():
    w = Workflow(_cfg())
    # mnist is not trained by this profile (a profile merged over paper.yaml inherits its list): left out
    assert w.final_datasets(per_seed=True) == ["circles"] and w.final_datasets(per_seed=False) == ["lin_sep"]
    assert [(j["group"], j["dataset"]) for j in w.jobs("final")] == [("main", "lin_sep"), ("ablation", "lin_sep")]
    seeded = w.jobs("final_seed")
    assert [(j["rule"], j["seed"]) for j in seeded] == [
        ("train_final_seed", 0), ("train_final_seed", 2), ("train_final_ablation_seed", 0),
        ("train_final_ablation_seed", 2)]
    whole = {j["group"]: j for j in final_training.jobs(w.config) if j["dataset"] == "circles"}
    for group, job in whole.items():
        # the per-seed jobs hold exactly the whole job's members (same outs, same configs), each once
        parts = [w.job("final_seed", {"dataset": "circles", "seed": str(s)}, group=group) for s in (0, 2)]
        assert all({m["seed"] for m in p["members"]} == {p["seed"]} for p in parts)
        assert sorted(m["out"] for p in parts for m in p["members"]) == sorted(m["out"] for m in job["members"])
        assert [m for p in parts for m in p["members"]] == sorted(job["members"], key=lambda m: m["seed"])
        assert all(p["best"] == job["best"] for p in parts)
    assert w.final_members("main", per_seed=True) == {"folder": ["single", "baseline", "mutability"],
                                                       "objective": ["full", "vanilla", "full"]}
    with pytest.raises(ValueError, match="no final job"):
        w.job("final", {"dataset": "circles"}, group="main")
    # without the setting every dataset keeps one job (the plan is the stage's own)
    plain = {**SMOKE, "training": {"epochs": 3}}
    assert split_jobs(plain, final_training.jobs(plain)) == final_training.jobs(plain)
    assert Workflow(plain).jobs("final_seed") == []


def test_bad_per_seed_setting_is_refused():
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    schema = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
    validate(_cfg(), schema)
    with pytest.raises(WorkflowError, match="per_seed"):
        validate(_cfg(training={"epochs": 3, "per_seed": "circles"}), schema)
    with pytest.raises(ConfigError, match="training.per_seed"):
        per_seed_datasets(_cfg(training={"per_seed": "circles"}))
    with pytest.raises(ConfigError, match=r"training.per_seed: unknown dataset 'iris'"):
        Workflow(_cfg(training={"per_seed": ["iris"]})).check()
    with pytest.raises(ConfigError, match="lists 'circles' twice"):
        Workflow(_cfg(training={"per_seed": ["circles", "circles"]})).check()


def test_per_seed_models_are_the_all_seeds_jobs_models_bit_for_bit(tmp_path):
    """Two seeds of every final model of a dataset (BL, CT, constrained CT, CD, AR) trained as the dataset's jobs
    and as one job per seed: the same weights and training logs but for the timings."""
    cfg = {**_cfg(), "datasets": ["lin_sep"], "training": {"epochs": 2, "per_seed": ["lin_sep"]},
           "training_overrides": {"training.nce": 60}, "tune": {"enabled": False}}
    grouped = final_training.jobs({**cfg, "results": str(tmp_path / "grouped")})
    seeded = split_jobs(cfg, final_training.jobs({**cfg, "results": str(tmp_path / "seeded")}))
    assert len(grouped) == 2 and len(seeded) == 4
    for j in [*grouped, *seeded]:
        assert final_training.run(j)["ok"].all()
    outs = [m["out"] for j in grouped for m in j["members"]]
    assert len(outs) == 2 * 5
    for a in outs:
        b = a.replace(str(tmp_path / "grouped"), str(tmp_path / "seeded"))
        x, y = torch.load(a, weights_only=False), torch.load(b, weights_only=False)
        assert x["state_dict"].keys() == y["state_dict"].keys()
        assert all(torch.equal(x["state_dict"][k], y["state_dict"][k]) for k in x["state_dict"]), a
        assert x["meta"]["population"]["size"] > y["meta"]["population"]["size"]  # it did train in other company
        for col, values in x["meta"]["log"].items():
            if col not in ("seconds", "search_seconds"):
                np.testing.assert_array_equal(values, y["meta"]["log"][col], err_msg=f"{a} {col}")  # NaN == NaN


@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed next to this Python")
def test_dry_run_trains_the_per_seed_dataset_one_job_per_seed_and_feeds_its_consumers(tmp_path):
    for name in ("Snakefile", "workflow", "envs", "claims.yaml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([str(SNAKEMAKE), "-n", "--cores", "1", "--configfile", "workflow/config/smoke.yaml",
                        "--config", "seeds=[0, 2]", "training={per_seed: [circles]}"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    jobs = []
    for line in out.splitlines():
        m = re.match(r"(?:local)?rule (\w+):$", line)
        if m:
            jobs.append({"rule": m.group(1)})
        elif jobs and line.startswith("    ") and ": " in line:
            k, v = line.strip().split(": ", 1)
            jobs[-1][k] = v
    count = Counter(j["rule"] for j in jobs)
    # lin_sep: one job per group; circles: one per group and seed
    assert count["train_final"] == count["train_final_ablation"] == 1
    assert count["train_final_seed"] == count["train_final_ablation_seed"] == 2
    for s in (0, 2):
        job = next(j for j in jobs if j["rule"] == "train_final_seed" and j["wildcards"].endswith(f"seed={s}"))
        assert job["wildcards"] == f"dataset=circles, seed={s}"
        assert sorted(job["output"].split(", ")) == sorted(
            f"results/smoke/models/{f}/circles/{o}_s{s}.pt" for f, o in (("single", "full"),
                                                                         ("baseline", "vanilla"),
                                                                         ("mutability", "full")))
        assert job["benchmark"] == f"results/smoke/benchmarks/train_final_seed/circles_s{s}.tsv"
    # the consumers read the per-seed models (the DAG resolved them to the per-seed rules' outputs)
    ev = next(j for j in jobs if j["rule"] == "evaluate" and j["wildcards"] ==
              "experiment=ablation, dataset=circles, seed=2")
    assert set(ev["input"].split(", ")) == {f"results/smoke/models/ablation/circles/{o}_s2.pt"
                                            for o in ("energy", "adversarial")}
