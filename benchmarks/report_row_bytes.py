"""Bytes per row the report holds in memory: every column of the evaluation files, the one frame it read before,
and each of the report's three narrow passes (``_evaluation_tables`` in ``ctbench/report/tables/paper_tables.py``).
Multiply by the paper run's row count for its footprint.

    python benchmarks/report_row_bytes.py results/verify/eval/single/*.parquet results/verify/eval/mutability/*.parquet
"""

from __future__ import annotations

import sys

import pandas as pd

from ctbench.evaluation.files import REPORT_COLUMNS, read_evaluations

KEYS = ("dataset", "experiment", "seed", "objective", "lambda_energy", "run", "valid")
PASSES = (("pass 1 (Tables 1, 3, bootstrap, costs)", (*KEYS, "ip", "ip_star", "cost"), ("single", "mutability")),
          ("pass 2 (IP* groupings)", (*KEYS, "ip_star_run", "ip_star_pooled"), ("single",)),
          ("pass 3 (ablation)", (*KEYS, "ip", "ip_star"), ("single", "ablation")))


def per_row(df: pd.DataFrame) -> float:
    return df.memory_usage(deep=True).sum() / max(len(df), 1)


def main(files: list[str]) -> None:
    if not files:
        sys.exit(__doc__)
    for name, cols in (("every column", None), ("the report's columns in one frame (before)", REPORT_COLUMNS)):
        df = read_evaluations(files, cols)
        print(f"{name} ({df.shape[1]}): {per_row(df):.1f} B/row, {len(df)} rows")
    for name, cols, experiments in PASSES:
        df = read_evaluations(files, cols, experiments=experiments, compact=False)
        print(f"{name}: {per_row(df):.1f} B/row, {len(df)} rows")


if __name__ == "__main__":
    main(sys.argv[1:])
