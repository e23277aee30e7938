"""Copy a report folder's tables into a golden folder (see README.md): every ``*.csv`` but the machine's records
(``ctbench compare``'s ``VOLATILE_FILES``: ``benchmarks.csv``, ``benchmarks_jobs.csv``), subfolders kept, stale golden
tables removed."""

import shutil
import sys
from pathlib import Path

from ctbench.report.tables.compare import VOLATILE_FILES


def update(report: Path, golden: Path) -> int:
    tables = {p.relative_to(report) for p in report.rglob("*.csv") if p.name not in VOLATILE_FILES}
    if not tables:
        sys.exit(f"{report} holds no report tables: run the profile first")
    for old in golden.rglob("*.csv"):
        if old.relative_to(golden) not in tables:
            old.unlink()
    for rel in sorted(tables):
        (golden / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(report / rel, golden / rel)
    return len(tables)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python tests/golden/update.py REPORT_FOLDER GOLDEN_FOLDER")
    print(f"{update(Path(sys.argv[1]), Path(sys.argv[2]))} tables copied to {sys.argv[2]}")
