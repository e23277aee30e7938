"""The report's evaluation tables from the same files by two code trees, each in its own process: peak RSS
(``ru_maxrss``), CPU seconds, and whether every table file is byte-identical (issue 21).

    git archive main | (mkdir -p /tmp/perf-base && tar -x -C /tmp/perf-base)
    ls results/paper/eval/*/*.parquet > /tmp/files.txt     # or any list of evaluation files
    nice -n 19 python benchmarks/report_pair.py /tmp/files.txt --base /tmp/perf-base --n-boot 1000

Prints one JSON line per tree and the list of table files that differ (none: the same tables to the last byte).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r'''
import sys, time, resource, json
from pathlib import Path
import ctbench.report.tables.paper_tables as T
files = [f for f in Path(sys.argv[1]).read_text().split("\n") if f]
t0 = time.process_time()
T.write_report(sys.argv[2], evaluations=files, published_dir=T.PUBLISHED_DIR, n_boot=int(sys.argv[3]))
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"peak_rss_mb": ru.ru_maxrss / 1024, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "tables_cpu_s": time.process_time() - t0}))
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", help="a text file listing evaluation files, one a line")
    ap.add_argument("--base", required=True, help="the other code tree (e.g. an archive of main)")
    ap.add_argument("--new", default=str(Path(__file__).resolve().parents[1]), help="default: this tree")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--work", default="/tmp/report-pair")
    ap.add_argument("--order", default="new,base", help="which tree runs first")
    args = ap.parse_args()
    trees = {"base": args.base, "new": args.new}
    for name in args.order.split(","):
        out = Path(args.work) / name
        subprocess.run(["rm", "-rf", str(out)], check=True)
        load = os.getloadavg()[0]
        # -P: ``python -c`` would put the working directory (the repository root, in the usage above) first on
        # sys.path, ahead of PYTHONPATH, so both children would run that tree's code
        r = subprocess.run([sys.executable, "-P", "-c", CHILD, args.files, str(out), str(args.n_boot)],
                           capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": trees[name], "OMP_NUM_THREADS": "1"})
        if r.returncode:
            sys.exit(r.stderr[-3000:])
        res = json.loads(r.stdout.strip().splitlines()[-1])
        print(json.dumps({"tree": name, **res, "load_before": load, "load_after": os.getloadavg()[0]}), flush=True)
    a, b = Path(args.work) / "base", Path(args.work) / "new"
    names = sorted(p.name for p in a.iterdir() if p.name != "index.json")
    diff = [n for n in names if not (b / n).exists() or not filecmp.cmp(a / n, b / n, shallow=False)]
    extra = sorted(p.name for p in b.iterdir() if not (a / p.name).exists())
    print(json.dumps({"compared": len(names), "differ": diff, "only_new": extra}))


if __name__ == "__main__":
    main()
