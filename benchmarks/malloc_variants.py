"""glibc allocator settings for the search commands, compared on one real job (issue 21): the job runs once per
variant in a fresh one-thread process on one tree, each variant given as glibc's own variables (``MALLOC_*``, which
``ctbench.runtime.keep_freed_memory`` leaves as set); CPU (user, sys) and peak RSS by ``os.wait4``, the outputs
compared with the first variant's. Jobs as in ``alloc_jobs_pair.py``.

    python benchmarks/malloc_variants.py --paper /work/regen/results/paper --tree . \\
        --job train:lenet/mnist/full_s0.pt:1 \\
        --variant 'mine=' --variant 'trim256=MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=268435456'
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alloc_jobs_pair import job_command, same, workflow  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paper", type=Path, required=True)
    ap.add_argument("--tree", type=Path, required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--variant", action="append", required=True,
                    help="NAME=VAR=VALUE VAR=VALUE ... (NAME= alone: the tree's own settings)")
    ap.add_argument("--tmp", type=Path, default=Path("/tmp/malloc-variants"))
    a = ap.parse_args()
    scratch = a.tmp.resolve()
    (scratch / "results").mkdir(parents=True, exist_ok=True)
    if not (scratch / "results" / "paper").exists():
        (scratch / "results" / "paper").symlink_to(a.paper.resolve())
    W = workflow(a.tree.resolve())
    first = None
    for spec in a.variant:
        name, _, assignments = spec.partition("=")
        env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
        env.update(dict(kv.split("=", 1) for kv in assignments.split()))
        env.update({"PYTHONPATH": str(a.tree.resolve()), "OMP_NUM_THREADS": "1"})
        args, out, _ = job_command(a.job, W, scratch / name, a.paper.resolve())
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-P", "-m", "ctbench", *args], env=env, cwd=scratch,
                                stdout=subprocess.DEVNULL)
        _, status, ru = os.wait4(proc.pid, 0)
        if status:
            raise SystemExit(f"{name}: the job failed ({status})")
        row = {"job": a.job, "variant": name, "env": assignments, "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
               "sys_s": round(ru.ru_stime, 2), "wall_s": round(time.perf_counter() - t0, 2),
               "peak_rss_mb": round(ru.ru_maxrss / 1024), "minor_faults": ru.ru_minflt, "load_1min": load,
               "vs_first": same(first, out) if first else "-"}
        first = first or out
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
