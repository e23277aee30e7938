"""Fig. 6's ablation table read one dataset's files at a time (issue 21: the report's peak memory was the
``ablation`` and ``single`` Arrow tables held whole, ≈ 0.9 GB of the paper set, under one dataset's frames).

:func:`ablation_from_files` gives :func:`ablation_parts.ablation_from_tables` of the two tables that
:func:`eval_frames.read_report_table` reads, bit for bit (tested), where the files' Parquet statistics show each
file holds one experiment, one dataset and one seed (the workflow writes them so): then which rows each dataset has,
and where they lie in the two tables, follows from the footers, and only one dataset's files are read at a time.
Anything else (CSV, no statistics, files mixing experiments, datasets or seeds, schemas that differ, single rows
the ablation does not borrow) gives None, and the report reads the two tables as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from .ablation_parts import rows_by_label
from .eval_frames import holds_none_of, holds_only

_REQUIRED = ("experiment", "dataset", "model")


def _one_value(meta, column: str):
    """The one value of ``column`` in a Parquet file by its statistics (every row group: no nulls, min = max, the
    same value), else None."""
    names = meta.schema.names
    if column not in names or meta.num_rows == 0:
        return None
    i, seen = names.index(column), set()
    for r in range(meta.num_row_groups):
        st = meta.row_group(r).column(i).statistics
        if st is None or not st.has_min_max or st.null_count != 0 or st.min != st.max:
            return None
        seen.add(st.min)
    return next(iter(seen)) if len(seen) == 1 else None


def _catalogue(paths: list, want: list[str]):
    """(ablation files, single files, schema): each file as (path, dataset, seed, rows), in the given order; None
    where the statistics do not settle it (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    abl, single, schema = [], [], None
    for p in paths:
        try:
            meta = pq.read_metadata(p)
        except (OSError, ValueError):
            return None
        if any(c not in meta.schema.names for c in _REQUIRED):
            return None
        if holds_none_of(meta, {"ablation", "single"}):
            continue
        into = abl if holds_only(meta, {"ablation"}) else single if holds_only(meta, {"single"}) else None
        ds, seed = _one_value(meta, "dataset"), _one_value(meta, "seed")
        if into is None or ds is None or seed is None:
            return None
        full = meta.schema.to_arrow_schema()
        sch = pa.schema([full.field(c) for c in full.names if c in want and c != "experiment"])
        if schema is None:
            schema = sch
        elif not sch.equals(schema):
            return None
        into.append((p, ds, seed, meta.num_rows))
    return abl, single, schema


def ablation_from_files(paths: Iterable[str | Path], columns: Iterable[str]) -> pd.DataFrame | None:
    """``ablation_from_tables(read_report_table(paths, columns, ("ablation",), keep_experiment=False)[1],
    read_report_table(paths, columns, ("single",), keep_experiment=False)[1])``, one dataset label's files read at a
    time; None where that cannot be settled from the files' statistics (the caller reads the tables then)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    paths = list(paths)
    want = list(dict.fromkeys(columns))
    if not paths or not all(Path(p).suffix == ".parquet" and Path(p).is_file() for p in paths):
        return None
    found = _catalogue(paths, want)
    if found is None or not found[0]:
        return None
    abl, single, schema = found
    cols = list(schema.names)

    def read(p):
        t = pq.read_table(p, columns=cols).replace_schema_metadata(None)
        if not t.schema.equals(schema):
            raise _Differs
        return t

    # the objectives: the ablation's own, and the single rows it borrows (ablation_shared: CT's and BL's, all of
    # them, or the tables' path decides)
    def objectives(files):
        out = set()
        for p, *_ in files:
            col = pq.read_table(p, columns=["objective"])["objective"]
            if col.null_count:
                return None
            out |= set(pc.unique(col).to_pylist())
        return out

    objs, borrowed = objectives(abl), objectives(single)
    if objs is None or borrowed is None or not borrowed <= {"full", "vanilla"} - objs:
        return None
    pool = len({s for _, _, s, _ in (*abl, *single)}) > 1
    names = pd.unique(pd.Series([ds for _, ds, _, _ in (*abl, *single)]))
    starts = np.cumsum([0] + [n for *_, n in abl]), np.cumsum([0] + [n for *_, n in single])
    total = int(starts[0][-1])

    def rows_of(group):
        frames, where = [], []
        for files, start, base in ((abl, starts[0], 0), (single, starts[1], total)):
            mine = [i for i, f in enumerate(files) if f[1] in group]
            t = pa.concat_tables([read(files[i][0]) for i in mine]) if mine else schema.empty_table()
            frames.append(t.to_pandas())
            where += [base + np.arange(start[i], start[i + 1]) for i in mine]
        return pd.concat(frames, ignore_index=True), np.concatenate(where) if where else np.zeros(0, np.int64)

    try:
        return rows_by_label(names, rows_of, pool)
    except _Differs:
        return None


class _Differs(Exception):
    """A file's columns or types differ from its footer's schema: the tables' path decides."""

