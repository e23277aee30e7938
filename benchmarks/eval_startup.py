"""What a fresh process costs each small evaluation job, and what ``ctbench each`` saves (issue 21: 135 evaluate, 80
retrain_evaluate, 45 robustness and 45 attribution jobs, median 3.6–6.3 CPU-s each). One group of jobs of one command
(e.g. one dataset's seeds) is run

* ``fresh``: each job in its own ``python -P -m ctbench COMMAND ...`` process, as the workflow's per-seed rules run
  them, on the ``--old`` tree;
* ``each``: all of them in one ``python -P -m ctbench each COMMAND --jobs ...`` process (the ``*_seeds`` rules), on
  the new tree;
* ``split`` (``--split``): one after another in one process by ``ctbench.cli.run``, with the process's own CPU read
  before and after each job (where the CPU goes: imports, first job, later jobs, exit);
* ``imports``: a process that only imports what such a job imports (torch, pandas, pyarrow, the command's modules).

CPU = user + sys of the child (``os.wait4``), one thread. Outputs of ``each`` and ``split`` are compared with
``fresh``'s and with the committed files (timing columns left out). Jobs (arguments from ``ctbench.workflow``'s plan
of the paper profile, as the rules build them): ``evaluate:EXPERIMENT:DATASET:SEED``,
``retrain_evaluate:EXPERIMENT:DATASET:SEED``, ``robustness:DATASET:SEED``, ``attribution:DATASET:SEED``.

    PYTHONPATH=. CTBENCH_DATA=/work/shared/data python benchmarks/eval_startup.py \\
        --paper /work/regen2/results/paper --old /work/old-next2 --out benchmarks/results/eval-speed.csv \\
        --jobs evaluate:single:lin_sep:0 evaluate:single:lin_sep:1 evaluate:single:lin_sep:2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alloc_jobs_pair import same, workflow  # noqa: E402

#: job kind → (the plan's kind, the command)
KINDS = {"evaluate": ("evaluation", "evaluate"), "retrain_evaluate": ("retrain_evaluation", "evaluate"),
         "robustness": ("robustness", "robustness"), "attribution": ("attribution", "attribution")}

#: (b): runs each job's argv (a JSON list of argv lists on stdin) with ``ctbench.cli.run`` and prints, per job and
#: for the imports before the first, the process's own CPU seconds
ONE_PROCESS = r'''
import json, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
jobs = json.loads(sys.stdin.read())
c0 = cpu()
from ctbench.cli import run
%s
out = [("imports", cpu() - c0)]
for argv in jobs:
    c = cpu()
    if run(argv):
        raise SystemExit(f"ctbench {argv[:3]} failed")
    out.append((argv[0], cpu() - c))
print("CPU " + json.dumps(out))
'''
#: what a job of each command imports before it touches data (measured: ``python -X importtime`` of a real job)
IMPORTS = {"evaluate": "import torch, pandas, pyarrow.parquet; import ctbench.evaluation.pool_kernels, "
                       "ctbench.experiments.evaluation, ctbench.evaluation.protocol, ctbench.evaluation.files",
           "robustness": "import torch, pandas, pyarrow.parquet; import ctbench.experiments.robustness, "
                         "ctbench.experiments.evaluation, ctbench.evaluation.files",
           "attribution": "import torch, pandas, pyarrow.parquet; import ctbench.experiments.attributions, "
                          "ctbench.experiments.evaluation, ctbench.evaluation.files"}


def job_argv(job: str, W, paper: Path, out_dir: Path) -> tuple[list[str], Path, Path]:
    """(``ctbench`` arguments as the job's rule builds them, writing under ``out_dir``; the output; the committed
    file)."""
    kind, *rest = job.split(":")
    plan, command = KINDS[kind]
    names = ("experiment", "dataset", "seed") if len(rest) == 3 else ("dataset", "seed")
    w = dict(zip(names, rest, strict=True))
    j = W.job(plan, w)
    ref = Path(W.path(plan, **w).replace(W.results, str(paper), 1))
    out = out_dir / f"{job.replace(':', '_')}{ref.suffix}"
    models = [f"{n}={str(p).replace(W.results, str(paper), 1)}" for n, p in j["models"].items()]
    if command == "evaluate":
        args = (["--constrained"] if j["constrained"] else []) + [
            a for k, v in j["settings"].items() for a in ("--set", f"{k}={json.dumps(v)}")]
        argv = ["evaluate", "--model", *models, *args, "--experiment", w["experiment"], "--out", str(out), "--quiet"]
    elif command == "robustness":
        argv = ["robustness", "--model", *models, "--seed", w["seed"], "--experiment", j["experiment"],
                "--out", str(out)]
    else:
        argv = ["attribution", "--model", *models, *[a for k, flag in (("n_rounds", "--rounds"),
                ("n_samples", "--samples"), ("steps", "--steps")) for a in (flag, str(j[k]))],
                "--seed", w["seed"], "--experiment", "mutability", "--out", str(out)]
    return argv, out, ref


def _env(tree: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    for v in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_ARENA_MAX"):
        env.pop(v, None)
    return env


def fresh_wait4(tree: Path, code: list[str], stdin: str = "") -> tuple[float, float, str]:
    """(CPU s, peak RSS MB, stdout) of one fresh ``python -P`` child running ``code`` (its arguments), reaped with
    ``os.wait4`` (its own resource usage; stdin and stdout through files, so nothing reaps it before)."""
    import tempfile

    with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as si:
        si.write(stdin)
        si.seek(0)
        proc = subprocess.Popen([sys.executable, "-P", *code], env=_env(tree), stdin=si, stdout=so,
                                stderr=subprocess.DEVNULL, text=True)
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = status
        so.seek(0)
        text = so.read()
    if status:
        raise RuntimeError(f"{' '.join(code)[:300]} failed ({status})")
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paper", type=Path, required=True, help="the committed result set (models and outputs)")
    ap.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1],
                    help="the new code tree (PYTHONPATH of each, split and imports)")
    ap.add_argument("--old", type=Path, help="the old tree, for the fresh per-job processes (default: --tree)")
    ap.add_argument("--split", action="store_true", help="also the per-job CPU in one process (ctbench.cli.run)")
    ap.add_argument("--jobs", nargs="+", required=True, help="one group: jobs of one command, run in one process")
    ap.add_argument("--tmp", type=Path, default=Path("/tmp/eval-startup"))
    ap.add_argument("--out", type=Path, required=True, help="CSV; rows are appended to an existing one")
    ap.add_argument("--label", default="", help="a name for this group in --out")
    a = ap.parse_args()
    tree, paper = a.tree.resolve(), a.paper.resolve()
    old = (a.old or a.tree).resolve()
    W = workflow(tree)
    commands = {KINDS[j.split(":")[0]][1] for j in a.jobs}
    if len(commands) != 1:
        raise SystemExit(f"--jobs: one command per group, got {sorted(commands)}")
    command = commands.pop()
    rows, at = [], time.strftime("%H:%M", time.gmtime())
    load = os.getloadavg()[0]
    cpu, rss, _ = fresh_wait4(tree, ["-c", IMPORTS[command]])
    rows.append({"group": a.label, "job": f"imports of {command}", "mode": "imports", "tree": str(tree),
                 "cpu_s": round(cpu, 2), "load_1min": load, "at": at})
    cpu, _, _ = fresh_wait4(tree, ["-c", "pass"])
    rows.append({"group": a.label, "job": "python -c pass", "mode": "imports", "cpu_s": round(cpu, 2),
                 "load_1min": load, "at": at})
    fresh_out = {}
    for job in a.jobs:
        argv, out, ref = job_argv(job, W, paper, a.tmp / "fresh")
        out.parent.mkdir(parents=True, exist_ok=True)
        load = os.getloadavg()[0]
        cpu, rss, _ = fresh_wait4(old, ["-m", "ctbench", *argv])
        fresh_out[job] = (out, ref)
        rows.append({"group": a.label, "job": job, "mode": "fresh", "tree": str(old), "cpu_s": round(cpu, 2),
                     "peak_rss_mb": round(rss), "load_1min": load, "at": at,
                     "vs_committed": same(ref, out) if ref.is_file() else "no file"})
        print(json.dumps(rows[-1]), flush=True)
    argvs = {}
    for mode in ("each", "split") if a.split else ("each",):
        argvs[mode] = []
        for job in a.jobs:
            argv, out, _ = job_argv(job, W, paper, a.tmp / mode)
            out.parent.mkdir(parents=True, exist_ok=True)
            argvs[mode].append(argv)
    load = os.getloadavg()[0]
    cpu, rss, _ = fresh_wait4(tree, ["-m", "ctbench", "each", command, "--jobs",
                                     json.dumps([v[1:] for v in argvs["each"]])])
    for job in a.jobs:
        _, out, ref = job_argv(job, W, paper, a.tmp / "each")
        rows.append({"group": a.label, "job": job, "mode": "each", "tree": str(tree), "load_1min": load, "at": at,
                     "vs_fresh": same(fresh_out[job][0], out),
                     "vs_committed": same(ref, out) if ref.is_file() else "no file"})
        print(json.dumps(rows[-1]), flush=True)
    rows.append({"group": a.label, "job": f"ctbench each {command} ({len(a.jobs)} jobs)", "mode": "each",
                 "tree": str(tree), "cpu_s": round(cpu, 2), "peak_rss_mb": round(rss), "load_1min": load, "at": at})
    if a.split:
        load = os.getloadavg()[0]
        cpu, rss, text = fresh_wait4(tree, ["-c", ONE_PROCESS % IMPORTS[command]], json.dumps(argvs["split"]))
        per = json.loads(next(line for line in text.splitlines() if line.startswith("CPU "))[4:])
        rows.append({"group": a.label, "job": "split: imports", "mode": "split", "cpu_s": round(per[0][1], 2),
                     "peak_rss_mb": round(rss), "load_1min": load, "at": at})
        for job, (_, c) in zip(a.jobs, per[1:], strict=True):
            _, out, ref = job_argv(job, W, paper, a.tmp / "split")
            rows.append({"group": a.label, "job": job, "mode": "split", "cpu_s": round(c, 2), "load_1min": load,
                         "at": at, "vs_fresh": same(fresh_out[job][0], out),
                         "vs_committed": same(ref, out) if ref.is_file() else "no file"})
        rows.append({"group": a.label, "job": "split: process total", "mode": "split", "cpu_s": round(cpu, 2),
                     "peak_rss_mb": round(rss), "load_1min": load, "at": at})
    frame = pd.DataFrame(rows)
    if a.out.exists():
        frame = pd.concat([pd.read_csv(a.out), frame], ignore_index=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(a.out, index=False)
    print(frame.tail(len(rows)).to_string(index=False))


if __name__ == "__main__":
    main()
