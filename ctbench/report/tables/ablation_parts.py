"""Fig. 6's ablation table one dataset at a time (issue 21: the report's memory; the table groups by dataset, so a
dataset's rows give its rows, and the rows are put in the order the one-frame table has).

:func:`ablation_by_dataset` equals :func:`ctbench.report.tables.paper_tables.ablation_pooled` of the ``ablation``
rows followed by the ``single`` rows they borrow (tested bit for bit): the seeds are pooled when the whole set has
more than one (as ``pool_seeds`` decides on all rows), each (dataset, objective) row comes from the same cells in
the same order, and the rows are sorted by where their first kept row (finite metric, valid) lies in the one frame,
which is the order ``groupby(sort=False)`` gives there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...evaluation.aggregate import ablation_table, paper_value
from ..common import dataset_label
from .relabel import labelled

#: (metric column, paper_value kind, label) of the ablation table's two parts, in order
METRICS = (("ip", "ip", "IP"), ("ip_star", "ip_star", "IP*"))


def _kept(rows: pd.DataFrame, metric: str, kind: str) -> np.ndarray:
    """The rows ``ablation_table`` keeps (``aggregate._prepare`` with valid rows only)."""
    y = paper_value(pd.to_numeric(rows[metric], errors="coerce").astype(float), kind)
    return np.isfinite(y.to_numpy()) & rows["valid"].astype(bool).to_numpy()


def ablation_by_dataset(abl: pd.DataFrame, shared: pd.DataFrame) -> pd.DataFrame:
    """``ablation_pooled(pd.concat([abl, shared], ignore_index=True))``, computed one dataset label at a time.

    ``abl``: the ``ablation`` rows; ``shared``: the ``single`` rows it borrows (``ablation_shared``)."""
    if not len(abl):
        return pd.DataFrame()
    pool = "seed" in abl.columns and pd.concat([abl["seed"], shared["seed"]], ignore_index=True).nunique() > 1
    names = pd.unique(pd.concat([abl["dataset"], shared["dataset"]], ignore_index=True).dropna())

    def rows_of(group):
        ia = np.flatnonzero(abl["dataset"].isin(group).to_numpy())
        ish = np.flatnonzero(shared["dataset"].isin(group).to_numpy())
        return pd.concat([abl.iloc[ia], shared.iloc[ish]], ignore_index=True), np.r_[ia, len(abl) + ish]

    return rows_by_label(names, rows_of, pool)


def ablation_from_tables(abl, single) -> pd.DataFrame | None:
    """:func:`ablation_by_dataset` from the Arrow tables of the ``ablation`` and the ``single`` rows (the report's
    reader, :func:`ctbench.report.tables.eval_frames.read_report_table`; ``single`` None: no such rows): only one
    dataset's rows become a pandas frame at a time. None where a text column has nulls (pandas' NaN rules: use the
    frames instead)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    tables = [t for t in (abl, single) if t is not None]
    if any(t[c].null_count for t in tables for c in ("dataset", "objective")):
        return None
    if abl.num_rows == 0:
        return pd.DataFrame()
    if single is None:
        single = abl.slice(0, 0)
    objs = pc.unique(abl["objective"])
    both = pa.array(["full", "vanilla"], type=single.schema.field("objective").type)
    keep = pc.and_(pc.is_in(single["objective"], value_set=both),
                   pc.invert(pc.is_in(single["objective"], value_set=objs.cast(both.type))))
    shared = single if pc.all(keep).as_py() in (True, None) else single.filter(keep)  # None: no rows
    del single
    pool = "seed" in abl.column_names and len(pc.unique(pa.chunked_array(
        [*abl["seed"].chunks, *shared["seed"].cast(abl.schema.field("seed").type).chunks]).drop_null())) > 1
    names = pd.unique(pd.Series(pa.chunked_array([*abl["dataset"].chunks,
                                                  *shared["dataset"].cast(abl.schema.field("dataset").type).chunks])
                                .unique().to_pylist()))

    def rows_of(group):
        vs = pa.array(group, type=abl.schema.field("dataset").type)
        ia = np.flatnonzero(pc.is_in(abl["dataset"], value_set=vs).to_numpy(zero_copy_only=False))
        ish = np.flatnonzero(pc.is_in(shared["dataset"], value_set=vs).to_numpy(zero_copy_only=False))
        frames = [abl.take(ia).to_pandas(), shared.take(ish).to_pandas()]
        return pd.concat(frames, ignore_index=True), np.r_[ia, abl.num_rows + ish]

    return rows_by_label(names, rows_of, pool)


def rows_by_label(names, rows_of, pool: bool) -> pd.DataFrame:
    """The ablation table from ``rows_of(names of one label)`` → (its rows in the one frame's order, their positions
    there), one label at a time; the rows sorted as the one frame's ``groupby(sort=False)`` has them."""
    by_label: dict[str, list] = {}
    for n in names:
        by_label.setdefault(dataset_label(n), []).append(n)
    parts: dict[str, list[tuple[np.ndarray, pd.DataFrame]]] = {m: [] for m, *_ in METRICS}
    for group in by_label.values():
        rows, where = rows_of(group)
        if pool:  # pool_seeds' own expression, decided on all rows
            rows = rows.assign(run=rows["seed"].astype(np.int64) * 1_000_000 + rows["run"].astype(np.int64))
        rows = labelled(rows)
        for metric, kind, label in METRICS:
            t = ablation_table(rows, metric, kind=kind, label=label)
            keep = _kept(rows, metric, kind)
            first = pd.Series(where[keep]).groupby(rows["objective"].to_numpy()[keep], sort=False).min()
            parts[metric].append((first.reindex(t["objective"].to_numpy()).to_numpy(), t))
        del rows
    out = []
    for metric, *_ in METRICS:
        keys = np.concatenate([k for k, _ in parts[metric]])
        t = pd.concat([t for _, t in parts[metric]], ignore_index=True)
        out.append(t.iloc[np.argsort(keys, kind="stable")].reset_index(drop=True))
    return pd.concat(out, ignore_index=True)
