"""CPU of Snakemake's own process under two scheduler settings, run by run (issue 21).

Snakemake 9's scheduler (``JobScheduler.schedule``) arms a ``threading.Timer`` of one ``--max-jobs-per-timespan``
timespan (default ``100/1s``) after every pass that leaves ready jobs waiting, and every pass that a finished job
triggers starts one more such chain: with more ready jobs than cores (the paper's DAG on 2 cores), the passes per
second grow with the jobs finished, and each pass resets the params and resources of every ready job and stats their
inputs. A finished job wakes the scheduler by itself, so a long timespan costs no start latency on a local run.

    python benchmarks/snakemake_overhead.py --configfile workflow/config/quick.yaml --pairs 2 \
        --out benchmarks/results/snakemake-overhead-quick.md
    python benchmarks/snakemake_overhead.py --synthetic 300 1 --pairs 2 \
        --out benchmarks/results/snakemake-overhead-synthetic.md

Side A is Snakemake's default (``100/1s``), side B the profile's (``1000/10s``), both written on the command line
(which wins over the profile). The timers are not daemon threads, so a process exits up to one timespan after its
last job: B's wall time includes that.

Each run is a fresh results folder (``--config results=TMP``) and a fresh Snakemake process. The launcher runs
Snakemake in-process and records, at exit, its own CPU (``RUSAGE_SELF``: the scheduler and its threads) and its
jobs' (``RUSAGE_CHILDREN``). After the runs, the two sides' report folders are compared file by file (the setting
must move no output byte).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = r'''
import atexit, json, resource, sys, time
t0, out = time.perf_counter(), sys.argv[1]
def _record():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w") as f:
        json.dump({"self_cpu_s": s.ru_utime + s.ru_stime, "jobs_cpu_s": c.ru_utime + c.ru_stime,
                   "wall_s": time.perf_counter() - t0}, f)
atexit.register(_record)
from snakemake.cli import main
sys.argv = ["snakemake"] + sys.argv[2:]
main()
'''


def run_once(extra: str, configfile: str, cores: int, results: Path, record: Path) -> dict:
    argv = [sys.executable, "-c", LAUNCHER, str(record), "--cores", str(cores), "--configfile", configfile,
            "--config", f"results={results}", *shlex.split(extra)]
    proc = subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        raise SystemExit(f"snakemake failed ({extra!r}):\n{proc.stdout[-5000:]}")
    return json.loads(record.read_text())


SYNTHETIC = """
rule all:
    input: expand("out/{i}.txt", i=range(%d))

rule job:
    output: "out/{i}.txt"
    shell: "sleep %s; echo {wildcards.i} > {output}"
"""


def run_synthetic(extra: str, n_jobs: int, sleep: float, cores: int, work: Path, record: Path) -> dict:
    """N independent jobs that only sleep, on ``cores`` cores: the ready queue stays long for the whole run, as the
    paper DAG's on 2 cores, and every CPU-second of Snakemake's own is its scheduling."""
    work.mkdir(parents=True)
    (work / "Snakefile").write_text(SYNTHETIC % (n_jobs, sleep))
    argv = [sys.executable, "-c", LAUNCHER, str(record), "--cores", str(cores), "--scheduler", "greedy",
            *shlex.split(extra)]
    proc = subprocess.run(argv, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        raise SystemExit(f"snakemake failed ({extra!r}):\n{proc.stdout[-5000:]}")
    return json.loads(record.read_text())


def same_outputs(a: Path, b: Path) -> tuple[int, list[str]]:
    """Files of the two report folders compared byte for byte (provenance, which carries times, excepted)."""
    skip = {"provenance.json", "benchmarks.csv", "benchmarks.md", "index.json"}
    files = sorted(p.relative_to(a / "report") for p in (a / "report").rglob("*")
                   if p.is_file() and p.name not in skip)
    differ = [str(f) for f in files if not filecmp.cmp(a / "report" / f, b / "report" / f, shallow=False)]
    return len(files), differ


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configfile", default="workflow/config/quick.yaml")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--a", default="--max-jobs-per-timespan 100/1s",
                    help="extra Snakemake arguments of side A (default: Snakemake's own default, written out)")
    ap.add_argument("--b", default="--max-jobs-per-timespan 1000/10s", help="... of side B (the profile's)")
    ap.add_argument("--synthetic", nargs=2, metavar=("N_JOBS", "SLEEP_S"), default=None,
                    help="instead of a profile: N independent jobs that sleep SLEEP_S seconds each")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="smk-overhead-") as tmp:
        for i in range(args.pairs):
            for side, extra in (("A", args.a), ("B", args.b)) if i % 2 == 0 else (("B", args.b), ("A", args.a)):
                res = Path(tmp) / f"{side}{i}"
                load = os.getloadavg()[0]
                if args.synthetic:
                    rec = run_synthetic(extra, int(args.synthetic[0]), float(args.synthetic[1]), args.cores, res,
                                        Path(tmp) / f"{side}{i}.json")
                else:
                    rec = run_once(extra, args.configfile, args.cores, res, Path(tmp) / f"{side}{i}.json")
                rows.append({"pair": i, "side": side, "args": extra, "load1_before": round(load, 2), **rec})
                print(json.dumps(rows[-1]), flush=True)
        n, differ = (0, []) if args.synthetic else same_outputs(Path(tmp) / "A0", Path(tmp) / "B0")
    what = (f"--synthetic {args.synthetic[0]} {args.synthetic[1]}" if args.synthetic
            else f"--configfile {args.configfile}")
    lines = [f"# Snakemake's own CPU, A `{args.a or '(profile default)'}` vs B `{args.b}`", "",
             f"`python benchmarks/snakemake_overhead.py {what} --cores {args.cores} "
             f"--pairs {args.pairs} --a '{args.a}' --b '{args.b}'` ({time.strftime('%Y-%m-%d %H:%M')} UTC, "
             f"2-core machine, one thread per job)", "",
             "| pair | side | Snakemake's own CPU-s | jobs' CPU-s | wall s | load (1 min) before |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['pair']} | {r['side']} | {r['self_cpu_s']:.1f} | {r['jobs_cpu_s']:.1f} | {r['wall_s']:.0f} | "
              f"{r['load1_before']} |" for r in rows]
    mean = {s: sum(r["self_cpu_s"] for r in rows if r["side"] == s) / args.pairs for s in "AB"}
    lines += ["", f"Mean own CPU: A {mean['A']:.1f} s, B {mean['B']:.1f} s (B/A {mean['B'] / mean['A']:.2f}).",
              (f"Report files compared byte for byte (pair 0): {n}, differing: {len(differ)} {differ[:5]}"
               if not args.synthetic else "Jobs that only sleep: Snakemake's own CPU is its start-up and scheduling.")]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
