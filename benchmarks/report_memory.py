"""The report's memory and CPU time on a paper-sized synthetic evaluation set (issue 21, lever 3).

The paper run's evaluation files (736 MB, 21.4M per-counterfactual rows from 135 files) are not committed, so this
script writes a synthetic set with the real schema (the 24 columns of ``ctbench evaluate``, their dtypes) and the
paper profile's row counts (``workflow/config/paper.yaml``: 3 experiments × 9 datasets × 5 seeds, 2 models per
file, 5 λ × 100 runs × n_individuals per family: 250 synthetic, 100 tabular, 25 vision), scaled by ``--scale``,
then runs ``ctbench.report.tables.paper_tables.write_report`` on it in a child process per reader and records its peak
resident memory (``ru_maxrss``) and CPU seconds (user + system):

* ``old``: every column of every file through ``pd.read_csv``, text as Python string objects (the reader before
  this change, in the environment before it: without pyarrow, pandas 3 stores ``str`` columns as Python objects);
* ``new``: :func:`ctbench.evaluation.files.read_evaluations` (the report's 17 columns; with pyarrow installed,
  pandas' ``str`` columns are Arrow-backed), on the same CSV files or on Parquet files of the same rows.

Since the report reads in three narrow passes (``_evaluation_tables``, issue 21 second pass) ``old`` no longer
changes what ``write_report`` reads; compare two code trees on the same files with ``benchmarks/report_pair.py``.

    python benchmarks/report_memory.py --scale 0.1 --formats csv.gz parquet --readers old new \\
        --work /tmp/report-mem --out benchmarks/results/report-memory-cpu1.md
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

N_IND = {"synthetic": 250, "tabular": 100, "vision": 25}
COLUMNS = ("dataset", "experiment", "seed", "model", "objective", "lambda_energy", "run", "individual", "index",
           "factual", "target", "valid", "valid_strict", "p_target", "mature", "steps", "cost", "ip", "redundancy",
           "seconds", "ip_star_run", "ip_star_pooled", "ip_star", "ip_star_raw")


def plan(scale: float) -> list[dict]:
    """One entry per evaluation file of the paper profile: experiment, dataset, family, seed, models, rows."""
    import yaml

    from ctbench.facts import DATASETS, EXPERIMENTS

    root = Path(__file__).resolve().parents[1]
    cfg = yaml.safe_load((root / "workflow" / "config" / "paper.yaml").read_text())
    ev = cfg["evaluation"]
    out = []
    for e in cfg["experiments"]:
        models = [o for o in EXPERIMENTS[e] if not (e == "ablation" and "single" in cfg["experiments"]
                                                     and o in EXPERIMENTS["single"])]
        for d in cfg["datasets"]:
            fam = DATASETS[d]["family"] if isinstance(DATASETS[d], dict) else DATASETS[d].family
            n_ind = max(1, round(ev["n_individuals"][fam] * scale))
            for s in cfg["seeds"]:
                out.append({"experiment": e, "dataset": d, "family": fam, "seed": int(s), "models": models,
                            "n_runs": ev["n_runs"], "lambdas": ev["lambdas"], "n_individuals": n_ind})
    return out


def synthetic_frame(job: dict, rng: np.random.Generator) -> pd.DataFrame:
    n_l, n_r, n_i = len(job["lambdas"]), job["n_runs"], job["n_individuals"]
    per_model = n_l * n_r * n_i
    n = per_model * len(job["models"])
    k = 10 if job["family"] == "vision" else 2
    factual = rng.integers(0, k, n)
    valid = rng.random(n) < 0.9
    ip_run = rng.gamma(2.0, 0.3, n)
    return pd.DataFrame({
        "dataset": job["dataset"], "experiment": job["experiment"], "seed": job["seed"],
        "model": np.repeat(job["models"], per_model), "objective": np.repeat(job["models"], per_model),
        "lambda_energy": np.tile(np.repeat(np.asarray(job["lambdas"], float), n_r * n_i), len(job["models"])),
        "run": np.tile(np.repeat(np.arange(n_r), n_i), n_l * len(job["models"])),
        "individual": np.tile(np.arange(n_i), n_l * n_r * len(job["models"])),
        "index": rng.integers(0, 1000, n), "factual": factual, "target": (factual + rng.integers(1, k, n)) % k,
        "valid": valid, "valid_strict": valid & (rng.random(n) < 0.8), "p_target": rng.random(n).astype(np.float32),
        "mature": valid, "steps": rng.integers(1, 51, n), "cost": rng.gamma(2.0, 1.0, n), "ip": rng.gamma(3.0, 1.0, n),
        "redundancy": rng.random(n), "seconds": rng.random(n), "ip_star_run": ip_run,
        "ip_star_pooled": rng.gamma(2.0, 0.3, n), "ip_star": ip_run, "ip_star_raw": ip_run,
    }, columns=list(COLUMNS))


def generate(work: Path, scale: float, formats: list[str], seed: int = 0) -> dict[str, list[Path]]:
    from ctbench.experiments.evaluation import write

    rng = np.random.default_rng(seed)
    files: dict[str, list[Path]] = {f: [] for f in formats}
    rows = 0
    for job in plan(scale):
        df = synthetic_frame(job, rng)
        rows += len(df)
        df.attrs["meta"] = {"kind": "counterfactual_evaluation", "synthetic": True, "n_rows": len(df),
                            "protocol": {"n_runs": job["n_runs"], "lambdas": job["lambdas"],
                                         "n_individuals": job["n_individuals"], "ip_star_per_run": True}}
        for f in formats:
            p = work / f / job["experiment"] / f"{job['dataset']}_s{job['seed']}.{f}"
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.exists():
                write(df, p)
            files[f].append(p)
    print(f"{rows:,} rows in {len(plan(scale))} files per format", flush=True)
    return files


def child(files: list[str], reader: str, out: str, n_boot: int) -> None:
    """Runs in its own process: the report's evaluation tables from ``files``; prints peak RSS and CPU time."""
    import ctbench.report.tables.paper_tables as T

    if reader == "old":  # as before: all columns, and pandas' str columns as Python objects (no pyarrow installed)
        pd.set_option("mode.string_storage", "python")
        T.read_evaluations = lambda paths: T.read_frames(paths, "evaluation file", ("experiment", "dataset", "model"))
    t0 = time.perf_counter()
    T.write_report(out, evaluations=files, published_dir=T.PUBLISHED_DIR, n_boot=n_boot)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"peak_rss_mb": ru.ru_maxrss / 1024, "cpu_s": ru.ru_utime + ru.ru_stime,
                      "wall_s": time.perf_counter() - t0}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the paper's n_individuals (1 = 21.4M rows)")
    ap.add_argument("--formats", nargs="+", default=["parquet"], choices=["csv.gz", "parquet"])
    ap.add_argument("--readers", nargs="+", default=["new"], choices=["old", "new"])
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--work", default="/tmp/report-memory")
    ap.add_argument("--out", default=None, help="Markdown file for the results")
    ap.add_argument("--child", nargs=3, metavar=("READER", "OUT", "FILELIST"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        reader, out, filelist = args.child
        child(Path(filelist).read_text().split("\n"), reader, out, args.n_boot)
        return
    work = Path(args.work)
    t0 = time.process_time()
    files = generate(work, args.scale, args.formats)
    print(f"generated in {time.process_time() - t0:.0f} CPU-s", flush=True)
    lines = ["| rows | format | reader | peak RSS MB | CPU s | wall s | load (1 min) before / after |",
             "|---|---|---|---|---|---|---|"]
    n_rows = sum(json.loads(Path(f"{p}.json").read_text())["n_rows"] for p in files[args.formats[0]])
    for fmt in args.formats:
        for reader in args.readers:
            if reader == "old" and fmt == "parquet":
                continue
            lst = work / f"files-{fmt}.txt"
            lst.write_text("\n".join(str(p) for p in files[fmt]))
            load0 = os.getloadavg()[0]
            res = subprocess.run([sys.executable, __file__, "--n-boot", str(args.n_boot), "--child", reader,
                                  str(work / f"report-{fmt}-{reader}"), str(lst)],
                                 capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
            if res.returncode:
                print(res.stderr[-3000:])
                raise SystemExit(res.returncode)
            r = json.loads(res.stdout.strip().splitlines()[-1])
            line = (f"| {n_rows:,} | {fmt} | {reader} | {r['peak_rss_mb']:.0f} | {r['cpu_s']:.1f} | "
                    f"{r['wall_s']:.1f} | {load0:.1f} / {os.getloadavg()[0]:.1f} |")
            print(line, flush=True)
            lines.append(line)
    text = (f"`python benchmarks/report_memory.py --scale {args.scale} --formats {' '.join(args.formats)} --readers "
            f"{' '.join(args.readers)} --n-boot {args.n_boot}` (one thread per child; the evaluation tables of "
            "`write_report`, bootstrap included)\n\n" + "\n".join(lines) + "\n")
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
