"""The report's cheaper relabelling and per-dataset row split (issue 21): the frames of the code they replace."""

import numpy as np
import pandas as pd
import pytest

from ctbench.report.common import dataset_labels, with_labels
from ctbench.report.tables.relabel import dataset_rows, labelled


def _frame(names, dtype):
    rng = np.random.default_rng(3)
    col = pd.Series(rng.choice(np.array(names, dtype=object), 500), dtype=dtype)
    return pd.DataFrame({"dataset": col, "x": rng.random(500)}, index=np.arange(500) * 3 + 7)


@pytest.mark.parametrize("dtype", ["str", object])
@pytest.mark.parametrize("names", [["circles", "moons", "gmsc"], ["Circ", "Moon"], ["circles", "mine", "adult"]])
def test_labelled_is_with_labels(dtype, names):
    """Same values, dtype and index as ``with_labels``, for names with labels, labels already and unknown names."""
    df = _frame(names, dtype)
    with dataset_labels({"mine": "My data"}):
        want, got = with_labels(df), labelled(df)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert got["dataset"].dtype == want["dataset"].dtype
    assert df["dataset"].iloc[0] in names  # the caller's frame is left as it was


def test_labelled_with_missing_names_and_without_a_dataset_column():
    df = _frame(["circles", "moons"], "str")
    df.loc[df.index[::5], "dataset"] = np.nan
    pd.testing.assert_frame_equal(labelled(df), with_labels(df), check_exact=True)
    pd.testing.assert_frame_equal(labelled(df.iloc[:0]), with_labels(df.iloc[:0]), check_exact=True)


@pytest.mark.parametrize("dtype", ["str", object])
def test_dataset_rows_is_the_string_comparison_loop(dtype):
    df = _frame(["moons", "circles", "gmsc"], dtype)
    df.loc[df.index[::7], "dataset"] = np.nan
    names = df["dataset"].to_numpy()
    want = [(d, np.flatnonzero(names == d)) for d in pd.unique(df["dataset"].dropna())]
    got = list(dataset_rows(df))
    assert [d for d, _ in got] == [d for d, _ in want]
    for (_, a), (_, b) in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
