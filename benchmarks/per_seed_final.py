"""One seed of a final-training job trained alone, compared with the committed population's models (issue 21).

The paper profile trains each dataset's final models, all seeds, as one population job; splitting a dataset's job
per seed (``training.per_seed`` in the workflow config) is only safe if a member's result does not depend on which
other members share its population. This script trains the members of one seed of a job with the workflow's own
``ctbench train`` arguments (outputs under ``--out``, the committed file names) in a child process, measures the
child's CPU (``os.wait4``: user + system), and compares every saved model with the committed one: the weights
bit for bit and every metadata field, listing the fields that differ. Fields that can only differ are timings
(``train_seconds``, the log's ``seconds`` and ``search_seconds``), the population record (size, wall time), the git
commit and the data cache status (``hit`` / ``built``).

    python benchmarks/per_seed_final.py --group main --dataset mnist --seed 1 \
        --committed /work/regen/results/paper --out /tmp/seed1 [--no-train]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
#: metadata that records how and when a model was trained, not what it is
EXPECTED = {"train_seconds", "population", "provenance.git_commit", "dataset.meta.cache", "log.seconds",
            "log.search_seconds"}


def seed_args(config_file: Path, group: str, dataset: str, seed: int, out: Path) -> tuple[list[str], list[str]]:
    """The ``ctbench train`` arguments of ``seed``'s members of the (group, dataset) final job, outputs moved under
    ``out``; and the members' paths relative to the results folder."""
    from ctbench.experiments.final_training import jobs
    from ctbench.workflow_check import typed_config

    config = typed_config([config_file], {})
    # the dataset's all-seeds job, as the stage plans it (whatever training.per_seed says)
    job = next(j for j in jobs(config) if j["group"] == group and j["dataset"] == dataset)
    results = str(config["results"]).rstrip("/")
    args, rel = [], []
    for m in job["members"]:
        if int(m["seed"]) != seed:
            continue
        r = os.path.relpath(m["out"], results)
        rel.append(r)
        args += ["--config-json", json.dumps(m["config"], sort_keys=True), "--out", str(out / r)]
    if not rel:
        raise SystemExit(f"no member of seed {seed} in the {group} job of {dataset}")
    return args, rel


def train(args: list[str]) -> dict[str, float]:
    """Run ``ctbench train`` in a child; its wall and CPU seconds."""
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "ctbench", "train", *args, "--set", "threads=1", "--quiet"],
                         stdout=sys.stderr)  # its "saved ..." lines: stdout is this script's JSON
    _, status, ru = os.wait4(p.pid, 0)
    if status:
        raise SystemExit(f"ctbench train failed (status {status})")
    return {"wall_s": time.perf_counter() - t0, "cpu_s": ru.ru_utime + ru.ru_stime, "maxrss_mb": ru.ru_maxrss / 1024}


def diff(a, b, where: str = "") -> list[str]:
    """Dotted paths of the fields where two metadata trees differ (arrays compared exactly, NaN equal to NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in diff(a.get(k), b.get(k), f"{where}.{k}" if where else k)]
    if torch.is_tensor(a) or torch.is_tensor(b):
        return [] if torch.is_tensor(a) and torch.is_tensor(b) and torch.equal(a, b) else [where]
    if isinstance(a, (list, tuple, np.ndarray)) and isinstance(b, (list, tuple, np.ndarray)):
        try:
            x, y = np.asarray(a), np.asarray(b)
            if x.dtype.kind in "fc" and x.shape == y.shape:
                return [] if np.array_equal(x, y, equal_nan=True) else [where]
        except (ValueError, TypeError):
            pass
        if len(a) != len(b):
            return [where]
        return [where] if any(diff(x, y, where) for x, y in zip(a, b, strict=True)) else []
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return []
    return [] if a == b else [where]


def compare(committed: Path, new: Path) -> dict[str, object]:
    """Weights bitwise equal, and the metadata fields that differ, of one model file against the committed one."""
    a, b = torch.load(committed, weights_only=False), torch.load(new, weights_only=False)
    weights = set(a["state_dict"]) == set(b["state_dict"]) and all(
        torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
    fields = diff(a["meta"], b["meta"], "")
    return {"weights_bitwise": weights, "meta_differs": fields,
            "meta_unexpected": [f for f in fields if not any(f == e or f.startswith(e + ".") for e in EXPECTED)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=ROOT / "workflow" / "config" / "paper.yaml")
    ap.add_argument("--group", default="main")
    ap.add_argument("--dataset", default="mnist")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--committed", type=Path, required=True, help="the results folder of the grouped run")
    ap.add_argument("--out", type=Path, required=True, help="a scratch results folder for the one-seed run")
    ap.add_argument("--no-train", action="store_true", help="compare models already under --out")
    a = ap.parse_args()
    args, rel = seed_args(a.config, a.group, a.dataset, a.seed, a.out)
    cost = None if a.no_train else train(args)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    rows = {r: compare(a.committed / r, a.out / r) for r in rel}
    print(json.dumps({"group": a.group, "dataset": a.dataset, "seed": a.seed, "cost": cost, "loadavg": load,
                      "models": rows}, indent=1))
    if any(not v["weights_bitwise"] or v["meta_unexpected"] for v in rows.values()):
        raise SystemExit("a one-seed model differs from the committed population's")


if __name__ == "__main__":
    main()
