"""The report's evaluation frames read in one Arrow pass (issue 21: the paper's 14.3M rows of a pass peaked at twice
their size, the per-file frames and their concatenation held at once).

:func:`read_report_evaluations` gives the frame of :func:`ctbench.evaluation.files.read_evaluations` (same columns,
dtypes, values, row order and index; tested), but for Parquet files it filters and concatenates the Arrow tables
(no copy) and converts them once, each column's Arrow memory freed as it is converted, so the peak is about one
frame instead of two. Anything else (CSV files, files whose columns differ) goes through ``read_evaluations``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ...evaluation.files import read_evaluations


def read_report_evaluations(paths: Iterable[str | Path], columns: Iterable[str],
                            experiments: Iterable[str], required: Iterable[str] = ("experiment", "dataset", "model"),
                            what: str = "evaluation file", keep_experiment: bool = True) -> pd.DataFrame:
    """``read_evaluations(paths, columns, required, what, experiments)`` with half its peak memory on Parquet;
    ``keep_experiment=False`` drops the ``experiment`` column once the rows are chosen (a frame of one experiment)."""
    ok, table = read_report_table(paths, columns, experiments, required, keep_experiment)
    if not ok:
        return _old(list(paths), list(columns), list(required), what, list(experiments), keep_experiment)
    if table is None:
        return pd.DataFrame()
    df = table.to_pandas(self_destruct=True, split_blocks=True)
    del table
    release_arrow_memory()
    return df


def read_report_table(paths: Iterable[str | Path], columns: Iterable[str], experiments: Iterable[str],
                      required: Iterable[str] = ("experiment", "dataset", "model"), keep_experiment: bool = True):
    """(True, the Arrow table of :func:`read_report_evaluations`' frame, None when no row is kept), or (False, None)
    where that reader falls back to ``read_evaluations`` (not all Parquet, a column missing, an unreadable file,
    files whose columns differ): then nothing is read here."""
    paths, columns, experiments, required = list(paths), list(columns), list(experiments), list(required)
    if not paths or not all(Path(p).suffix == ".parquet" and Path(p).is_file() for p in paths):
        return False, None
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    want = list(dict.fromkeys(columns))
    keep = pa.array(sorted(set(experiments)), type=pa.string())
    tables, schema = [], None
    for p in paths:
        try:
            names = pq.read_schema(p).names
            if any(c not in names for c in required):  # the old reader's error, with its message
                return False, None
            t = pq.read_table(p, columns=[c for c in names if c in want])
        except (OSError, ValueError):  # unreadable: the old reader names the file
            return False, None
        if "experiment" in t.column_names:
            t = t.filter(pc.is_in(t["experiment"], value_set=keep.cast(t.schema.field("experiment").type)))
            if t.num_rows == 0:
                continue
            if not keep_experiment:
                t = t.drop_columns(["experiment"])
        t = t.replace_schema_metadata(None)
        if schema is None:
            schema = t.schema
        elif not t.schema.equals(schema):  # columns or types differ between files: pandas' concatenation rules
            return False, None
        tables.append(t)
    if not tables:
        return True, None
    table = pa.concat_tables(tables)
    del tables, t
    return True, table


def release_arrow_memory() -> None:
    """Give the memory Arrow's pool keeps after frees back to the system (its allocator holds it for reuse; the
    report's next steps allocate through numpy instead, so it would only add to the peak). No values change."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _old(paths, columns, required, what, experiments, keep_experiment) -> pd.DataFrame:
    df = read_evaluations(paths, columns, required, what, experiments)
    return df if keep_experiment or "experiment" not in df else df.drop(columns="experiment")
