"""Data switch ``scaling`` of the consistency study's datasets (``ctbench.data.scaling_switch``): ``standard_all``
(German and Taiwanese Credit) z-scores every encoded column as sklearn's StandardScaler would, ``datalib`` (CTG) is
the authors' table and split; these are the three datasets' defaults (what the published numbers were made on), and
``scaling="loader"`` keeps the loaders' own tables, metadata and cache keys as they were. Skips when a raw file is
absent (``$CTBENCH_DATA`` or ``../shared/data``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ctbench.data import load_dataset
from ctbench.data.consistency_datasets import _read_ctg
from ctbench.data.scaling_switch import datalib_split, standardize_all

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CTBENCH_DATA") or REPO.parent / "shared" / "data")
RAW = {"german_credit": "german_credit/german.data", "credit_default_b22": "credit_default/UCI_Credit_Card.csv",
       "cardiotocography": "cardiotocography/CTG.xls"}
STANDARD_ALL = ["german_credit", "credit_default_b22"]
_MEMO: dict = {}


def load(name, **kw):
    if not (DATA / RAW[name]).is_file():
        pytest.skip(f"{RAW[name]} not found in {DATA}")
    key = (name, tuple(sorted(kw.items())))
    if key not in _MEMO:
        _MEMO[key] = load_dataset(name, raw_dir=DATA, cache_dir=False, **kw)
    return _MEMO[key]


def tv(ds):
    return np.vstack([ds.X_train, ds.X_val]).astype(np.float64)


@pytest.mark.parametrize("name", STANDARD_ALL)
def test_standard_all_zscores_every_column_on_the_training_rows(name):
    base, sw = load(name, scaling="loader"), load(name, scaling="standard_all")
    X = tv(sw)
    assert np.allclose(X.mean(0), 0, atol=1e-5) and np.allclose(X.std(0), 1, atol=1e-5)  # ddof 0, as sklearn
    # the one-hot columns were 0/1 and are no longer: the switch reaches them
    onehot = [i for g in base.categorical_groups for i in g]
    assert set(np.unique(tv(base)[:, onehot])) == {0.0, 1.0}
    assert len(np.unique(X[:, onehot])) > 2
    # test rows: the same affine map, statistics from the train+validation rows only
    st = sw.meta["standardised_all"]
    expect = (base.X_test.astype(np.float64) - np.array(st["mean"])) / np.array(st["std"])
    assert np.allclose(sw.X_test, expect, atol=1e-4)
    assert sw.meta["scaling_switch"] == "standard_all" and st["ddof"] == 0
    assert (sw.y_train == base.y_train).all() and (sw.y_test == base.y_test).all()
    assert sw.feature_names == base.feature_names and sw.categorical_groups == base.categorical_groups
    # the domain box follows the new table by each loader's own rule (German: infer_domain; Taiwanese: min/max)
    assert np.all(np.array(sw.domain[0]) <= X.min(0) + 1e-5) and np.all(np.array(sw.domain[1]) >= X.max(0) - 1e-5)
    if name == "credit_default_b22":
        assert np.allclose(sw.domain[0], X.min(0), atol=1e-5) and np.allclose(sw.domain[1], X.max(0), atol=1e-5)


@pytest.mark.parametrize("name", list(RAW))
def test_default_is_what_the_published_numbers_were_made_on(name):
    """The default is the switch (German, Taiwanese: standard_all; CTG: datalib), its table and its cache key;
    ``"loader"`` is a different table under the key it always had (no scaling entry)."""
    switch = "datalib" if name == "cardiotocography" else "standard_all"
    a, b, old = load(name), load(name, scaling=switch), load(name, scaling="loader")
    for k in ("X_train", "X_val", "X_test"):
        assert np.array_equal(getattr(a, k), getattr(b, k))
    assert a.meta["scaling_switch"] == switch and "scaling_switch" not in old.meta
    assert a.X_train.shape != old.X_train.shape or not np.array_equal(a.X_train, old.X_train)
    assert a.meta["cache_key"] == b.meta["cache_key"] != old.meta["cache_key"]


def test_bad_values_stop_with_a_clear_error():
    with pytest.raises(ValueError, match=r"must be one of \['loader', 'standard_all', 'datalib'\], got 'zscore'"):
        load_dataset("german_credit", scaling="zscore")
    with pytest.raises(ValueError, match=r"'cardiotocography': scaling='standard_all' applies only to"):
        load_dataset("cardiotocography", scaling="standard_all")
    with pytest.raises(ValueError, match=r"'adult': scaling='standard_all' applies only to"):
        load_dataset("adult", scaling="standard_all")
    with pytest.raises(ValueError, match=r"'german_credit': scaling='datalib' applies only to \['cardiotocography'\]"):
        load_dataset("german_credit", scaling="datalib")


def test_datalib_is_the_authors_ctg_table_and_split():
    """utils.load_dataset('CTG'): datalib's Normalize (one min-max for all rows and columns) and Split(tr=4, te=1,
    seed=0) (np.random.seed(0) permutation: 1,700 train, 425 test, one row in neither) on the rows in file order."""
    ds = load("cardiotocography", scaling="datalib")
    raw = _read_ctg(DATA)
    X = raw.frame.to_numpy().astype(np.float32)
    X = (X - X.min()) / (X.max() - X.min())  # -1 (Tendency) to 269 (Variance): every column by the same range
    order = np.random.RandomState(0).permutation(len(raw.y))
    assert (len(ds.y_train), len(ds.y_val), len(ds.y_test), ds.meta["n_unused"]) == (1700, 0, 425, 1)
    assert np.allclose(ds.X_train, X[order[:1700]], atol=1e-6)
    assert np.allclose(ds.X_test, X[order[1700:2125]], atol=1e-6)
    assert (ds.y_train == raw.y[order[:1700]]).all() and (ds.y_test == raw.y[order[1700:2125]]).all()
    assert [len(r) for r in datalib_split(2126)] == [1700, 425]
    assert ds.meta["scaling_switch"] == "datalib" and ds.meta["datalib_normalize"]["max_after_shift"] == 270.0
    # one scalar range: a per-second rate (AC) spans a sliver of [0, 1], the baseline (LB) a fifth of it
    ac, lb = ds.feature_names.index("AC"), ds.feature_names.index("LB")
    assert np.ptp(ds.X_train[:, ac]) < 1e-3 and 0.15 < np.ptp(ds.X_train[:, lb]) < 0.25


def test_standardize_all_leaves_constant_columns_unscaled():
    X = np.array([[1.0, 5.0], [3.0, 5.0], [100.0, 7.0]], dtype=np.float32)
    out, st = standardize_all(X, 2)  # statistics from the first two rows only
    assert out.dtype == np.float32
    assert np.allclose(out[:2, 0], [-1, 1]) and np.allclose(out[2, 0], 98.0)
    assert np.allclose(out[:, 1], [0, 0, 2]) and st["std"][1] == 1.0

