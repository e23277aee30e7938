"""CPU seconds of a ``ctbench`` command's start-up by two code trees, alternately, each run in a fresh process
(issue 21: the jobs that use no torch paid ≈ 1.5 CPU-s to import it).

    git archive main | (mkdir -p /tmp/startup-base && tar -x -C /tmp/startup-base)
    nice -n 19 python benchmarks/startup_pair.py --base /tmp/startup-base --reps 3 [--out FILE.md]

Cases: ``ctbench --help`` (the start-up every command pays) and ``ctbench compare`` of the golden smoke tables with
themselves (a whole torch-free command). CPU = user + sys of the child (``RUSAGE_CHILDREN``), so the load of a
shared machine inflates it less than wall time; the load average is printed with each case. Also records whether
the child had ``torch`` loaded at exit.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r'''
import sys
from ctbench.cli import run
try:
    rc = run(sys.argv[1:])
except SystemExit as e:
    rc = e.code
print("TORCH_LOADED", "torch" in sys.modules, file=sys.stderr)
raise SystemExit(rc or 0)
'''
GOLDEN = str(ROOT / "tests" / "golden" / "smoke")
CASES = {"ctbench --help": ["--help"],
         "ctbench compare (golden smoke vs itself)": ["compare", GOLDEN, "--committed", GOLDEN, "--strict"]}


def _child(tree: str, argv: list[str]) -> tuple[float, bool]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # cwd = the tree: ``python -c`` puts the working directory first on sys.path
    r = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, cwd=tree,
                       env={**os.environ, "PYTHONPATH": tree, "OMP_NUM_THREADS": "1"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode:
        sys.exit(r.stderr[-3000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, "TORCH_LOADED True" in r.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the other code tree (e.g. an archive of main)")
    ap.add_argument("--new", default=str(ROOT), help="default: this tree")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    lines = ["| case | base CPU s | new CPU s | base/new | torch loaded (base, new) | load (1 min) |",
             "|---|---|---|---|---|---|"]
    for name, argv in CASES.items():
        t = {"base": [], "new": []}
        loaded = {}
        load = [os.getloadavg()[0]]
        for rep in range(args.reps):
            for tree in (("base", "new") if rep % 2 == 0 else ("new", "base")):  # alternate who goes first
                cpu, loaded[tree] = _child(getattr(args, tree), argv)
                t[tree].append(cpu)
        load.append(os.getloadavg()[0])
        b, n = statistics.median(t["base"]), statistics.median(t["new"])
        row = (f"| {name} | {b:.2f} | {n:.2f} | {b / n:.1f}× | {loaded['base']}, {loaded['new']} | "
               f"{min(load):.1f}–{max(load):.1f} |")
        print(row, json.dumps(t), flush=True)
        lines.append(row)
    text = (f"medians of {args.reps} paired repetitions, one thread, CPU = user + sys of the child "
            f"(`python benchmarks/startup_pair.py --base BASE --reps {args.reps}`)\n\n" + "\n".join(lines) + "\n")
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
