"""Populations vs a loop, old code vs new, interleaved: ``python benchmarks/population_pair.py --base DIR``.

``DIR`` is a checkout of the old code (e.g. ``git worktree add --detach ../wt-base main``); the new code is this
working tree. Every case is ``ctbench.experiments.bench_population.run_case`` in its own process on one torch
thread; per (data set, G) and repetition it runs the loop of single-model runs (new code; ``--base-loop`` also the
old code's), then the old population, then the new one, back to back, so that load on a shared machine hits them
alike. Reported: medians over the repetitions, and the load average around every case. Ratios are taken on CPU
seconds (on a busy machine wall time also counts the time the process waited for a core).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def case(tree: str, dataset: str, G: int, mode: str, epochs: int) -> dict:
    # the module moved to ctbench.experiments (issue 10); a base tree from before the move has the old path
    code = ("import json\ntry:\n    from ctbench.experiments.bench_population import run_case\n"
            "except ImportError:\n    from ctbench.bench_population import run_case\n"
            f"print(json.dumps(run_case({dataset!r}, {G}, {mode!r}, {epochs})))")
    env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1")
    load0 = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env,
                         cwd="/tmp")  # not the repository root: ``-c`` puts the working directory on sys.path
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row.update(tree=tree, load_before=load0, load_after=os.getloadavg()[0])
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="checkout of the old code")
    ap.add_argument("--cases", nargs="+", default=["lin_sep:9:3", "lin_sep:36:3"],
                    help="DATASET:G:REPS (run in this order)")
    ap.add_argument("--epochs", type=json.loads, default={"lin_sep": 30, "adult_size": 5})
    ap.add_argument("--base-loop", action="store_true", help="also time the old code's loop")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "population-pair-cpu1"))
    args = ap.parse_args()
    new, base = str(ROOT), str(Path(args.base).resolve())
    commits = {k: subprocess.run(["git", "-C", p, "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True).stdout.strip() for k, p in (("new", new), ("base", base))}
    rows: list[dict] = []
    for spec in args.cases:
        dataset, G, reps = spec.split(":")
        runs = [("new", "loop"), ("base", "population"), ("new", "population")]
        if args.base_loop:
            runs.insert(1, ("base", "loop"))
        for rep in range(int(reps)):
            for side, mode in runs:
                r = case(new if side == "new" else base, dataset, int(G), mode, args.epochs[dataset])
                r.update(side=side, rep=rep)
                rows.append(r)
                print(json.dumps(r), file=sys.stderr, flush=True)
                _write(args.out, rows, commits, args)
    return 0


def _median(rows, key):
    return statistics.median(r[key] for r in rows) if rows else float("nan")


def _write(out: str, rows: list[dict], commits: dict, args) -> None:
    report = {"commits": commits, "epochs": args.epochs, "threads": 1, "cases": rows,
              "written": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    Path(out + ".json").write_text(json.dumps(report, indent=1))
    lines = [f"# Population vs loop, old ({commits['base']}) vs new ({commits['new']}), interleaved",
             "", f"One torch thread per process; epochs per model {args.epochs}; medians over the repetitions; "
             f"speed-ups on CPU seconds. Written {report['written']}.", "",
             "| data | G | reps | loop CPU s (new) | population CPU s old | population CPU s new | new/old time | "
             "speed-up old | speed-up new | wall s loop / pop new | load average (1 min) during |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in dict.fromkeys((r["dataset"], r["G"]) for r in rows):
        sel = [r for r in rows if (r["dataset"], r["G"]) == key]
        loop = [r for r in sel if r["mode"] == "loop" and r["side"] == "new"]
        po = [r for r in sel if r["mode"] == "population" and r["side"] == "base"]
        pn = [r for r in sel if r["mode"] == "population" and r["side"] == "new"]
        lc, oc, nc = _median(loop, "cpu_s"), _median(po, "cpu_s"), _median(pn, "cpu_s")
        loads = [r[k] for r in sel for k in ("load_before", "load_after")]
        lines.append(f"| {key[0]} | {key[1]} | {min(len(po), len(pn))} | {lc:.1f} | {oc:.2f} | {nc:.2f} | "
                     f"{nc / oc:.2f} | {lc / oc:.1f}× | {lc / nc:.1f}× | {_median(loop, 'wall_s'):.1f} / "
                     f"{_median(pn, 'wall_s'):.2f} | {min(loads):.1f}–{max(loads):.1f} |")
    Path(out + ".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
