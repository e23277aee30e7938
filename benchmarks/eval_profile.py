"""Where a small evaluation job's work goes (issue 21): one real paper job under ``cProfile`` (the process's CPU
clock) in a fresh one-thread ``python -P`` process; the job's work (the stage's ``run`` and the output's writing, by
cumulative time) is split into model and data loading, the counterfactual search, IP, IP*, the robustness curve,
integrated gradients, the output writing and the rest of the work (the frame's assembly, the other metrics). The
process start-up (imports, interpreter start and exit) is not in these shares: ``eval_startup.py --split`` measures
it in CPU-s, unprofiled (the profiler inflates Python-heavy code, imports most). Jobs as ``eval_startup.py`` names
them.

    PYTHONPATH=. CTBENCH_DATA=/work/shared/data python benchmarks/eval_profile.py \\
        --paper /work/regen2/results/paper --jobs evaluate:single:lin_sep:0 robustness:moons:0 [--out FILE.csv]
"""

from __future__ import annotations

import argparse
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alloc_jobs_pair import workflow  # noqa: E402
from eval_startup import job_argv  # noqa: E402

#: the profiled child: ``ctbench ARGV`` under cProfile with the process's CPU time as its clock (the default, wall
#: time, counts the other processes' turns on a loaded machine)
CHILD = """
import cProfile, runpy, sys, time
out, sys.argv = sys.argv[1], ["ctbench", *sys.argv[2:]]
prof = cProfile.Profile(time.process_time)
prof.enable()
try:
    runpy.run_module("ctbench", run_name="__main__")
except SystemExit as e:
    rc = e.code
prof.disable()
prof.dump_stats(out)
sys.exit(rc)
"""
#: the job's work: the stage's run and the writing
WORK = [("experiments/evaluation.py", "run"), ("experiments/robustness.py", "run"),
        ("experiments/attributions.py", "run"), ("evaluation/files.py", "write_frame")]
#: part of the work → (file suffix, function name) of the functions whose cumulative time is that part
PARTS = {
    "load models and data": [("experiments/evaluation.py", "load_models")],
    "search": [("generators/base.py", "search")],
    "IP": [("evaluation/metrics.py", "implausibility")],
    "IP*": [("evaluation/pool_kernels.py", "swapped")],
    "robustness curve": [("evaluation/attack_kernels.py", "robustness_curve")],
    "integrated gradients": [("evaluation/integrated_gradients.py", "ig_rounds")],
    "write output": [("evaluation/files.py", "write_frame")],
}


def _cum(st: pstats.Stats, funcs) -> float:
    return sum(v[3] for (file, _, name), v in st.stats.items() if any(file.endswith(f) and name == n
                                                                        for f, n in funcs))


def attribute(prof: Path) -> dict[str, float]:
    """``work`` (profiled seconds of the job's work) and each part's share of it (``rest``: the remainder)."""
    st = pstats.Stats(str(prof))
    work = _cum(st, WORK)
    out = {"work": work, **{part: _cum(st, funcs) / work for part, funcs in PARTS.items()}}
    out["rest"] = 1.0 - sum(out[p] for p in PARTS)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paper", type=Path, required=True)
    ap.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--jobs", nargs="+", required=True)
    ap.add_argument("--tmp", type=Path, default=Path("/tmp/eval-profile"))
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    W = workflow(a.tree.resolve())
    rows = []
    for job in a.jobs:
        argv, out, _ = job_argv(job, W, a.paper.resolve(), a.tmp)
        out.parent.mkdir(parents=True, exist_ok=True)
        prof = a.tmp / f"{job.replace(':', '_')}.prof"
        env = {**os.environ, "PYTHONPATH": str(a.tree.resolve()), "OMP_NUM_THREADS": "1"}
        load = os.getloadavg()[0]
        proc = subprocess.Popen([sys.executable, "-P", "-c", CHILD, str(prof), *argv], env=env,
                                stdout=subprocess.DEVNULL)
        _, status, ru = os.wait4(proc.pid, 0)
        if status:
            raise SystemExit(f"{job} failed ({status})")
        parts = attribute(prof)
        rows.append({"job": job, "profiled_cpu_s": round(ru.ru_utime + ru.ru_stime, 2), "load_1min": round(load, 1),
                     "at": time.strftime("%H:%M", time.gmtime()), "profiled_work_s": round(parts.pop("work"), 2),
                     **{f"{k} share": round(v, 3) for k, v in parts.items()}})
        print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    print(frame.T.to_string())
    if a.out:
        if a.out.exists():
            frame = pd.concat([pd.read_csv(a.out), frame], ignore_index=True)
        frame.to_csv(a.out, index=False)


if __name__ == "__main__":
    main()
