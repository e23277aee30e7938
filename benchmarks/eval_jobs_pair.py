"""Paired CPU time of real paper evaluation jobs, old code against new, and every output column compared.

Each job is the exact command of a committed paper job (``snakemake -n -p`` of the paper profile prints it), run
with one thread in a fresh process per code tree (``python -P -m ctbench``: the tree comes from ``PYTHONPATH``, not
from the current folder), CPU = user + sys of the child (``resource.getrusage``), peak RSS of the child. The new
output is compared with the old run's and with the committed one (max abs / rel difference per numeric column,
equality of the others).

    python benchmarks/eval_jobs_pair.py --paper /work/regen/results/paper --old /work/regen --new . \\
        --out benchmarks/results/eval-jobs-pair.csv --jobs evaluate:single:mnist:0 attribution:mnist:0
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
import pandas as pd

LAMBDAS = "lambdas=[0.1, 0.5, 1.0, 5.0, 10.0]"
#: individuals per run by dataset family, as in the paper profile's commands
INDIVIDUALS = {"mnist": 25, "adult": 100, "lin_sep": 250}
#: the protocol seed of every paper evaluate job (the models' seed is in their file names, not here)
PROTOCOL_SEED = 0


def command(job: str, models: Path, out: Path) -> list[str]:
    """The paper job's ``ctbench`` arguments (as its log's shell command), writing to ``out``."""
    kind, *rest = job.split(":")
    if kind == "evaluate":
        exp, ds, seed = rest
        constrained = ["--constrained"] if exp == "mutability" else []  # as the workflow's evaluate rule
        # the ablation job evaluates only its own objectives (full and vanilla are single's rows)
        pairs = ({"energy": "ablation", "adversarial": "ablation"} if exp == "ablation"
                 else {"full": exp, "vanilla": "baseline"})
        return ["evaluate", "--model", *[f"{n}={models}/{d}/{ds}/{n}_s{seed}.pt" for n, d in pairs.items()],
                *constrained, "--set", "n_runs=100", "--set", LAMBDAS,
                "--set", f"seed={PROTOCOL_SEED}", "--set", f"n_individuals={INDIVIDUALS[ds]}", "--experiment", exp,
                "--out", str(out), "--quiet"]
    if kind == "attribution":
        ds, seed = rest
        return ["attribution", "--model", f"full={models}/mutability/{ds}/full_s{seed}.pt",
                f"vanilla={models}/baseline/{ds}/vanilla_s{seed}.pt", "--rounds", "100", "--samples", "2500",
                "--steps", "50", "--seed", seed, "--experiment", "mutability", "--out", str(out)]
    if kind == "robustness":
        ds, seed = rest
        where = {"full": "single", "energy": "ablation", "adversarial": "ablation", "vanilla": "baseline"}
        return ["robustness", "--model", *[f"{n}={models}/{d}/{ds}/{n}_s{seed}.pt" for n, d in where.items()],
                "--seed", seed, "--experiment", "ablation", "--out", str(out)]
    raise ValueError(f"unknown job {job!r}")


def committed(job: str, paper: Path) -> Path:
    kind, *rest = job.split(":")
    if kind == "evaluate":
        exp, ds, seed = rest
        return paper / "eval" / exp / f"{ds}_s{seed}.parquet"
    ds, seed = rest
    return paper / kind / f"{ds}_s{seed}.csv"


def run(tree: Path, args: list[str]) -> tuple[float, float, float]:
    """(CPU s, wall s, peak RSS MB) of one fresh ``ctbench`` process on ``tree`` (``os.wait4``: this child's own
    resource usage)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-P", "-m", "ctbench", *args], env=env, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise RuntimeError(f"ctbench {' '.join(args)} failed ({status})")
    return ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss / 1024


def read(p: Path) -> pd.DataFrame:
    return pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)


def compare(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, float]:
    """Max abs and rel difference over the numeric columns (``seconds`` left out), and whether the rest match."""
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return {"same_shape": 0.0}
    out = {"same_shape": 1.0, "max_abs": 0.0, "max_rel": 0.0, "other_equal": 1.0, "bitwise": 1.0}
    for c in a.columns:
        if c == "seconds":
            continue
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if np.issubdtype(x.dtype, np.number) and np.issubdtype(y.dtype, np.number):
            x, y = x.astype(np.float64), y.astype(np.float64)
            nan_same = np.array_equal(np.isnan(x), np.isnan(y))
            ok = ~np.isnan(x) & ~np.isnan(y)
            d = np.abs(x[ok] - y[ok])
            out["max_abs"] = max(out["max_abs"], float(d.max(initial=0.0)))
            scale = np.maximum(np.abs(x[ok]), np.abs(y[ok]))
            out["max_rel"] = max(out["max_rel"], float((d / np.where(scale > 0, scale, 1.0)).max(initial=0.0)))
            if not nan_same or d.max(initial=0.0) > 0:
                out["bitwise"] = 0.0
        elif not (a[c].astype(str).to_numpy() == b[c].astype(str).to_numpy()).all():
            out["other_equal"] = out["bitwise"] = 0.0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paper", type=Path, required=True, help="the committed result set (models and outputs)")
    ap.add_argument("--old", type=Path, required=True, help="the old tree (on PYTHONPATH)")
    ap.add_argument("--new", type=Path, required=True, help="the new tree (on PYTHONPATH)")
    ap.add_argument("--jobs", nargs="+", required=True,
                    help="evaluate:EXPERIMENT:DATASET:SEED, attribution:DATASET:SEED or robustness:DATASET:SEED")
    ap.add_argument("--tmp", type=Path, default=Path("/tmp/eval-jobs-pair"))
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    a.tmp.mkdir(parents=True, exist_ok=True)
    rows = []
    for job in a.jobs:
        ref = committed(job, a.paper)
        res = {}
        for label, tree in (("old", a.old), ("new", a.new)):
            out = a.tmp / f"{job.replace(':', '_')}_{label}{ref.suffix}"
            load = os.getloadavg()[0]
            cpu, wall, rss = run(tree.resolve(), command(job, a.paper / "models", out))
            res[label] = out
            rows.append({"job": job, "code": label, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
                         "peak_rss_mb": round(rss), "load_1min": load})
            print(json.dumps(rows[-1]), flush=True)
        new = read(res["new"])
        for against, path in (("old_run", res["old"]), ("committed", ref)):
            cmp = compare(read(path), new)
            rows[-1].update({f"{k}_vs_{against}": v for k, v in cmp.items()})
        print(json.dumps(rows[-1]), flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(a.out, index=False)


if __name__ == "__main__":
    main()
