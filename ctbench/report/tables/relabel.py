"""Dataset labels on the report's large frames without a Python object per row (issue 21).

:func:`ctbench.report.common.with_labels` maps the ``dataset`` column through ``Series.map``, which turns an
Arrow-backed ``str`` column of millions of rows into Python strings first (≈ 10 CPU-s over the paper's report).
:func:`labelled` gives the same frame (same dtype, values and index; tested) from the column's distinct values:
factorize, label the few uniques, take them back by code. Other dtypes go through ``with_labels`` unchanged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..common import dataset_label, with_labels


def labelled(df: pd.DataFrame) -> pd.DataFrame:
    """``with_labels(df)``, bit for bit, cheaper for a ``str`` (Arrow) ``dataset`` column; a categorical one (the
    report's compact frames) keeps its codes, its categories renamed to the labels and kept sorted (as a group-by
    of the labels as strings orders them)."""
    if "dataset" in df and isinstance(df["dataset"].dtype, pd.CategoricalDtype):
        return _labelled_categories(df)
    if "dataset" not in df or not isinstance(df["dataset"].dtype, pd.StringDtype):
        return with_labels(df)
    col = df["dataset"]
    codes, uniques = pd.factorize(col)
    if (codes < 0).any():  # missing names: with_labels maps them (NaN never equals itself), keep its way
        return with_labels(df)
    names = list(uniques)
    labels = [dataset_label(d) for d in names]
    if labels == names:
        return df.copy(deep=False)
    if not all(isinstance(x, str) for x in labels):
        return with_labels(df)
    new = pd.array(labels, dtype=col.dtype).take(codes)
    return df.assign(dataset=pd.Series(new, index=df.index, name="dataset"))


def dataset_rows(frame: pd.DataFrame):
    """(name, positions of its rows) per non-missing ``dataset`` in order of first appearance: the loop
    ``for d in pd.unique(frame["dataset"].dropna()): np.flatnonzero(frame["dataset"].to_numpy() == d)`` on integer
    codes instead of one string comparison over all rows per dataset."""
    codes, uniques = pd.factorize(frame["dataset"])
    for i, d in enumerate(uniques):
        yield d, np.flatnonzero(codes == i)


def _labelled_categories(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`labelled` of a categorical ``dataset`` column: each category renamed to its label, the categories
    re-sorted; two names of one label (or a label that is no string) give the labels as strings instead."""
    col = df["dataset"]
    names = list(col.cat.categories)
    labels = [dataset_label(d) for d in names]
    if labels == names:
        return df.copy(deep=False)
    if len(set(labels)) < len(labels) or not all(isinstance(x, str) for x in labels):
        return with_labels(df.assign(dataset=col.astype("str")))
    new = col.cat.rename_categories(labels)
    return df.assign(dataset=new.cat.reorder_categories(sorted(labels)))
