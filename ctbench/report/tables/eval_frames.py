"""The report's evaluation frames read in one Arrow pass (issue 21: the paper's 14.3M rows of a pass peaked at twice
their size, the per-file frames and their concatenation held at once).

:func:`read_report_evaluations` gives the frame of :func:`ctbench.evaluation.files.read_evaluations` (same columns,
dtypes, values, row order and index; tested), but for Parquet files it filters and concatenates the Arrow tables
(no copy) and converts them once, each column's Arrow memory freed as it is converted, so the peak is about one
frame instead of two. Anything else (CSV files, files whose columns differ) goes through ``read_evaluations``.

A file whose Parquet statistics show it holds no row of the wanted experiments (the paper's files hold one
experiment each) is not read at all (:func:`holds_none_of`): a pass over the ``single`` rows read all 216 files
and threw two thirds of them away (issue 21, 1,026 reads in one report). ``compact=True`` reads the text columns
as categoricals (Parquet dictionaries, categories sorted: the frame of ``read_evaluations(..., compact=True)``), so
masks and group-bys gather one-byte codes instead of Arrow strings.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ...evaluation.files import TEXT_COLUMNS, read_evaluations
from .compact import sorted_categories


def read_report_evaluations(paths: Iterable[str | Path], columns: Iterable[str],
                            experiments: Iterable[str], required: Iterable[str] = ("experiment", "dataset", "model"),
                            what: str = "evaluation file", keep_experiment: bool = True,
                            compact: bool = False) -> pd.DataFrame:
    """``read_evaluations(paths, columns, required, what, experiments, compact)`` with half its peak memory on
    Parquet; ``keep_experiment=False`` drops the ``experiment`` column once the rows are chosen (a frame of one
    experiment)."""
    ok, table = read_report_table(paths, columns, experiments, required, keep_experiment, compact)
    if not ok:
        return _old(list(paths), list(columns), list(required), what, list(experiments), keep_experiment, compact)
    if table is None:
        return pd.DataFrame()
    df = table.to_pandas(self_destruct=True, split_blocks=True)
    del table
    release_arrow_memory()
    return sorted_categories(df) if compact else df


def holds_none_of(meta, experiments: set[str]) -> bool:
    """True when a Parquet file's statistics (``meta``: its footer, ``pq.read_metadata``) prove that no row's
    ``experiment`` is one of ``experiments``: every row group has min/max statistics of that column and no wanted
    value lies between them. Without statistics (or no such column) False: the file is read and filtered."""
    names = meta.schema.names
    if "experiment" not in names:
        return False
    i = names.index("experiment")
    for r in range(meta.num_row_groups):
        st = meta.row_group(r).column(i).statistics
        if st is None or not st.has_min_max or not isinstance(st.min, str) or not isinstance(st.max, str):
            return False
        if any(st.min <= e <= st.max for e in experiments):
            return False
    return True


def holds_only(meta, experiments: set[str]) -> bool:
    """True when a Parquet file's statistics prove that every row's ``experiment`` is one of ``experiments`` (every
    row group: no nulls, min = max, a wanted value): the filter would keep every row, so it is not made (it copied
    the whole file) and, without ``keep_experiment``, the column is not read."""
    names = meta.schema.names
    if "experiment" not in names or meta.num_rows == 0:
        return False
    i = names.index("experiment")
    for r in range(meta.num_row_groups):
        st = meta.row_group(r).column(i).statistics
        if st is None or not st.has_min_max or st.null_count != 0 or st.min != st.max or st.min not in experiments:
            return False
    return True


def read_report_table(paths: Iterable[str | Path], columns: Iterable[str], experiments: Iterable[str],
                      required: Iterable[str] = ("experiment", "dataset", "model"), keep_experiment: bool = True,
                      compact: bool = False):
    """(True, the Arrow table of :func:`read_report_evaluations`' frame, None when no row is kept), or (False, None)
    where that reader falls back to ``read_evaluations`` (not all Parquet, a column missing, an unreadable file,
    files whose columns differ): then nothing is read here. ``compact``: the text columns as dictionaries."""
    paths, columns, experiments, required = list(paths), list(columns), list(experiments), list(required)
    if not paths or not all(Path(p).suffix == ".parquet" and Path(p).is_file() for p in paths):
        return False, None
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    want = list(dict.fromkeys(columns))
    wanted = set(experiments)
    keep = pa.array(sorted(wanted), type=pa.string())
    tables, schema = [], None
    for p in paths:
        try:
            meta = pq.read_metadata(p)
            names = meta.schema.to_arrow_schema().names
            if any(c not in names for c in required):  # the old reader's error, with its message
                return False, None
            if holds_none_of(meta, wanted):  # the filter below would keep no row of it
                continue
            whole = holds_only(meta, wanted)  # the filter below would keep every row of it
            cols = [c for c in names if c in want and not (whole and c == "experiment" and not keep_experiment)]
            t = pq.read_table(p, columns=cols,
                              read_dictionary=[c for c in cols if c in TEXT_COLUMNS] if compact else None)
        except (OSError, ValueError):  # unreadable: the old reader names the file
            return False, None
        if "experiment" in t.column_names and not whole:
            typ = t.schema.field("experiment").type
            typ = typ.value_type if pa.types.is_dictionary(typ) else typ  # is_in takes the dictionary's values
            t = t.filter(pc.is_in(t["experiment"], value_set=keep.cast(typ)))
            if t.num_rows == 0:
                continue
        if "experiment" in t.column_names and not keep_experiment:
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
    del tables
    return True, table


def release_arrow_memory() -> None:
    """Give the memory Arrow's pool keeps after frees back to the system (its allocator holds it for reuse; the
    report's next steps allocate through numpy instead, so it would only add to the peak). No values change."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _old(paths, columns, required, what, experiments, keep_experiment, compact=False) -> pd.DataFrame:
    df = read_evaluations(paths, columns, required, what, experiments, compact=compact)
    return df if keep_experiment or "experiment" not in df else df.drop(columns="experiment")
