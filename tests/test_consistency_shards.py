"""The consistency job split into retraining shards and a merge (issue 21): the merged file is bitwise the single
job's, a wrong random stream in a shard shows in those bytes, and bad shard sets are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import ctbench.experiments.consistency as consistency
from ctbench.experiments.consistency import run, train_shard, write
from ctbench.experiments.consistency_shards import parse_shard, shard_slice, write_shard

ROOT = Path(__file__).resolve().parent.parent
SMALL_DATA = {"n_draws": 600, "n_train": 200, "n_val": 0, "n_test": 100}
BLACK = {"part": "black2022", "dataset": "moons", "seed": 0,
         "settings": {"methods": ["min_eps_pgd", "min_eps_pgd+sns", "min_l2"], "n_models": 3, "epochs": 3,
                      "n_factuals": 25, "data_params": SMALL_DATA}}
CT = {"part": "ct", "dataset": "lin_sep", "seed": 1,
      "settings": {"n_models": 2, "epochs": 2, "n_factuals": 20,
                   "data_params": {**SMALL_DATA, "centers": [[-2.0, -2.0], [2.0, 2.0]]}}}
#: sidecar fields that differ between any two runs (CPU times, host, time of day)
RUN_FIELDS = ("cpu_seconds", "provenance")


def _single(job, d: Path) -> Path:
    return write(run(job), d / f"single_{job['part']}.csv.gz")


def _shards(job, k: int, d: Path) -> list[Path]:
    return [write_shard(train_shard(job, i, k), d / f"shard{i}.pt") for i in range(k)]


def _merged(job, shards, d: Path) -> Path:
    return write(run(job, retrained=shards), d / "merged.csv.gz")


def _sidecar(path: Path) -> dict:
    meta = json.loads(Path(f"{path}.json").read_text())
    return {k: v for k, v in meta.items() if k not in RUN_FIELDS}


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    d = tmp_path_factory.mktemp("single")
    return {"black2022": _single(BLACK, d), "ct": _single(CT, d)}


@pytest.mark.parametrize("job,k", [(BLACK, 2), (BLACK, 5), (CT, 3)], ids=["black-by-source", "black-mixed", "ct"])
def test_the_merged_file_is_bitwise_the_single_jobs(job, k, single, tmp_path):
    """K = 2 cuts Black's 3 RS + 3 LOO models by source, K = 5 puts an RS and a LOO model in one shard; the CT part
    has two base models (CT, BL), each with its own RS and LOO models, cut across the two."""
    merged = _merged(job, _shards(job, k, tmp_path), tmp_path)
    assert merged.read_bytes() == single[job["part"]].read_bytes()
    assert _sidecar(merged) == _sidecar(single[job["part"]])
    cpu = json.loads(Path(f"{merged}.json").read_text())["cpu_seconds"]
    assert len(cpu["train_shards"]) == k and cpu["train"] >= sum(cpu["train_shards"]) > 0


def test_a_loo_shard_on_another_stream_changes_the_bytes(single, tmp_path, monkeypatch):
    """The comparison above can fail: LOO models copied from a base of another seed (other initial weights and
    batch order than the base's) carry the plan's names, so the merge takes them, and the file differs."""
    real = consistency.retraining_members

    def wrong_base(base, make, plan, n_train, prefix=""):
        return real(make(base.params.seed + 1), make, plan, n_train, prefix)

    monkeypatch.setattr(consistency, "retraining_members", wrong_base)
    shards = _shards(BLACK, 2, tmp_path)
    monkeypatch.setattr(consistency, "retraining_members", real)
    assert _merged(BLACK, shards, tmp_path).read_bytes() != single["black2022"].read_bytes()


def test_the_cli_round_trip_is_bitwise_the_single_job(single, tmp_path):
    """What the workflow runs: `--shard I/K` jobs, then `--retrained` (the settings as the rule passes them)."""
    base = [sys.executable, "-m", "ctbench", "consistency", "--part", "black2022", "--dataset", "moons", "--seed",
            "0", "--settings", json.dumps(BLACK["settings"], sort_keys=True), "--quiet"]
    shards = [tmp_path / f"s{i}.pt" for i in range(2)]
    for i, s in enumerate(shards):
        subprocess.run([*base, "--shard", f"{i}/2", "--out", str(s)], check=True, cwd=ROOT, capture_output=True)
    out = tmp_path / "merged.csv.gz"
    subprocess.run([*base, "--retrained", *map(str, shards), "--out", str(out)], check=True, cwd=ROOT,
                   capture_output=True)
    assert out.read_bytes() == single["black2022"].read_bytes()


def test_bad_shard_sets_are_refused(tmp_path):
    shards = _shards(BLACK, 2, tmp_path)
    with pytest.raises(ValueError, match="need shards 0..K-1"):
        run(BLACK, retrained=shards[:1])
    with pytest.raises(ValueError, match="need shards 0..K-1"):
        run(BLACK, retrained=[shards[0], shards[0]])
    with pytest.raises(ValueError, match="another job or settings"):
        run({**BLACK, "seed": 1}, retrained=shards)
    with pytest.raises(ValueError, match="another job or settings"):
        run({**BLACK, "settings": {**BLACK["settings"], "epochs": 4}}, retrained=shards)
    d = torch.load(shards[1], weights_only=True)
    d["names"] = d["names"][::-1]
    write_shard(d, shards[1])
    with pytest.raises(ValueError, match="not this job's retraining plan: member 3"):
        run(BLACK, retrained=shards)
    torch.save({"x": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a shard file"):
        run(BLACK, retrained=[tmp_path / "other.pt"])


def test_shard_slices_and_arguments():
    cuts = [shard_slice(200, i, 4) for i in range(4)]
    assert [(c.start, c.stop) for c in cuts] == [(0, 50), (50, 100), (100, 150), (150, 200)]
    assert sum(c.stop - c.start for c in (shard_slice(7, i, 3) for i in range(3))) == 7
    assert parse_shard("1/4") == (1, 4)
    for bad in ("4/4", "-1/2", "a/b", "3"):
        with pytest.raises(ValueError, match="--shard"):
            parse_shard(bad)
    with pytest.raises(ValueError, match="allowed: 1..6"):
        shard_slice(6, 0, 7)


def test_missing_data_skips_the_shards_and_the_merge_as_the_single_job(tmp_path, monkeypatch):
    """A dataset whose raw file is absent: the shard jobs write a `skipped` shard (the workflow still gets its
    files) and the merge writes the single job's skipped frame, without reading them."""
    monkeypatch.setenv("CTBENCH_DATA", str(tmp_path / "no-data"))
    monkeypatch.setenv("CTBENCH_CACHE", str(tmp_path / "no-cache"))  # no processed split to fall back on
    job = {"part": "black2022", "dataset": "cardiotocography", "seed": 0, "settings": {"n_models": 2, "epochs": 1}}
    shard = train_shard(job, 0, 2)
    assert shard["skipped"].startswith("skipped: data for cardiotocography not found") and shard["names"] == []
    single = run(job)
    merged = run(job, retrained=[write_shard(shard, tmp_path / "k0.pt")])
    assert len(merged) == len(single) == 0 and merged.attrs["meta"]["skipped"] == single.attrs["meta"]["skipped"]
