"""Datasets of the consistency study (Black et al. 2022, App. B.1) built from the project's raw files.

The data directory is ``$CTBENCH_DATA`` or ``../shared/data``; each test skips when its raw file is absent.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ctbench.data import available, files, load_dataset
from ctbench.data.consistency_datasets import CTG_FEATURES, SPECS, seizure_table

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CTBENCH_DATA") or REPO.parent / "shared" / "data")
ARRAYS = ("X_train", "y_train", "X_val", "y_val", "X_test", "y_test")
# name: (raw file, train, test, features, positives among all rows, scaling)
EXPECTED = {
    "cardiotocography": ("cardiotocography/CTG.xls", 1701, 425, 21, 1655, "minmax"),
    "epileptic_seizure": ("epileptic_seizure/bonn_eeg_sets_ZONFS.zip", 7950, 3550, 178, 2300, "zscore"),
    "heloc_b22": ("heloc/heloc_dataset.csv", 7844, 2615, 39, 5000, "minmax"),
    "credit_default_b22": ("credit_default/UCI_Credit_Card.csv", 7500, 22500, 32, 23364, "minmax"),
}


def needs(rel):
    return pytest.mark.skipif(not (DATA / rel).is_file(),
                              reason=f"{rel} not found in {DATA} (set CTBENCH_DATA; see shared/data/MANIFEST.md)")


_MEMO: dict = {}


def load(name, **kw):
    kw.setdefault("cache_dir", False)
    key = (name, tuple(sorted(kw.items())))
    if key not in _MEMO:
        _MEMO[key] = load_dataset(name, raw_dir=DATA, **kw)
    return _MEMO[key]


def trainval(ds):
    return np.vstack([ds.X_train, ds.X_val]).astype(np.float64)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_sizes_balance_scaling_and_domain(name):
    rel, n_train, n_test, d, positives, scaling = EXPECTED[name]
    if not (DATA / rel).is_file():
        pytest.skip(f"{rel} not found in {DATA}")
    ds = load(name, scaling="loader")  # the loaders' own recipe (the defaults: test_data_scaling_switch.py)
    assert (len(ds.y_train), len(ds.y_val), len(ds.y_test)) == (n_train, 0, n_test)
    assert ds.n_features == d == len(ds.feature_names) == ds.X_test.shape[1] and ds.n_classes == 2
    y = np.concatenate([ds.y_train, ds.y_test])
    assert int(y.sum()) == positives and set(np.unique(ds.y_test)) == {0, 1}
    for k in ARRAYS:
        arr = getattr(ds, k)
        assert arr.dtype == (np.float32 if k.startswith("X") else np.int64)
        assert not np.isnan(arr).any()
    X = trainval(ds)
    num = [ds.feature_names.index(c) for c in ds.meta["scaler"]["columns"]]
    if scaling == "minmax":  # scaler fit on train+validation rows: exactly [0, 1] there
        assert np.allclose(X[:, num].min(0), 0, atol=1e-6) and np.allclose(X[:, num].max(0), 1, atol=1e-6)
    else:
        assert np.allclose(X[:, num].mean(0), 0, atol=1e-4) and np.allclose(X[:, num].std(0, ddof=1), 1, atol=1e-4)
    assert np.allclose(ds.domain[0], X.min(0)) and np.allclose(ds.domain[1], X.max(0))
    for g in ds.categorical_groups:
        block = np.vstack([X, ds.X_test])[:, g]
        assert set(np.unique(block)) <= {0.0, 1.0}
        if len(g) > 1:
            assert np.all(block.sum(1) == 1)
    assert ds.meta["files"] == {rel: files.FILES[rel].sha256}
    assert available()[name]["family"] == "tabular"


@needs("cardiotocography/CTG.xls")
def test_ctg_features_are_the_raw_per_second_columns():
    ds = load("CTG", scaling="loader")  # the per-column scaler (the default, datalib's, has one range: its own test)
    assert ds.name == "cardiotocography" and ds.feature_names == CTG_FEATURES
    raw = pd.read_excel(DATA / "cardiotocography/CTG.xls", sheet_name="Data", header=1, engine="calamine")
    raw = raw[raw["NSP"].notna()].reset_index(drop=True)
    assert len(raw) == 2126 and raw["NSP"].value_counts().to_dict() == {1.0: 1655, 2.0: 295, 3.0: 176}
    cols = [c + ".1" if c in ("AC", "FM", "UC", "DL", "DS", "DP") else c for c in CTG_FEATURES]
    sc = ds.meta["scaler"]
    back = np.vstack([ds.X_train, ds.X_test]).astype(np.float64) * sc["scale"] + sc["shift"]
    perm = np.random.default_rng([42, 3]).permutation(2126)
    assert np.allclose(back, raw[cols].to_numpy(np.float64)[perm], rtol=1e-6, atol=1e-6)
    assert np.array_equal(np.concatenate([ds.y_train, ds.y_test]), (raw["NSP"].to_numpy()[perm] == 1).astype(int))


@needs("epileptic_seizure/bonn_eeg_sets_ZONFS.zip")
def test_seizure_table_reproduces_the_uci_rows():
    X, y, ids = seizure_table(DATA)
    assert X.shape == (11500, 178) and np.bincount(y).tolist() == [0, 2300, 2300, 2300, 2300, 2300]
    # UCI row X21.V1.791 (y = 4), as printed in public notebooks, is chunk 21 of recording O080 (MANIFEST §6d)
    row = X[ids.index("X21.O080")]
    assert row[:9].tolist() == [135, 190, 229, 223, 192, 125, 55, -9, -33]
    assert row[-9:].tolist() == [-17, -15, -31, -77, -103, -127, -116, -83, -51] and y[ids.index("X21.O080")] == 4
    ds = load("Seizure")
    assert ds.feature_names[0] == "X1" and ds.feature_names[-1] == "X178" and ds.categorical_groups == []


@needs("heloc/heloc_dataset.csv")
def test_heloc_b22_keeps_every_row_and_one_hots_the_two_delinquency_codes():
    ds = load("heloc_b22")
    assert ds.meta["n_rows"] == 10459  # the 588 rows without a bureau record are kept, as in the paper
    groups = {ds.feature_names[g[0]].split("__")[0]: len(g) for g in ds.categorical_groups}
    assert groups == {"MaxDelq2PublicRecLast12M": 10, "MaxDelqEver": 8} and 23 - 2 + 10 + 8 == ds.n_features


@needs("credit_default/UCI_Credit_Card.csv")
def test_taiwanese_credit_is_the_full_unbalanced_table_with_32_features():
    ds = load("taiwanese_credit")
    assert ds.name == "credit_default_b22" and ds.meta["n_rows"] == 30000
    groups = {ds.feature_names[g[0]].split("__")[0]: len(g) for g in ds.categorical_groups}
    assert groups == {"SEX": 1, "EDUCATION": 7, "MARRIAGE": 4}
    small = load("taiwanese_credit", n_val=500)
    assert len(small.y_train) + len(small.y_val) == 8000 and 498 <= len(small.y_val) <= 500
    assert len(small.y_test) == 22000  # n_val rows come on top of the paper's 7,500 training rows
    assert abs(small.y_val.mean() - small.y_train.mean()) < 0.02  # stratified


@needs("cardiotocography/CTG.xls")
def test_deterministic_seeded_and_cached(tmp_path):
    a = load("CTG", scaling="loader")  # the seeded recipe (datalib's split is fixed: RandomState(0))
    b = load_dataset("CTG", raw_dir=DATA, cache_dir=tmp_path, scaling="loader")
    c = load_dataset("CTG", raw_dir=DATA, cache_dir=tmp_path, scaling="loader")
    assert b.meta["cache"] == "built" and c.meta["cache"] == "hit"
    for k in ARRAYS:
        assert getattr(a, k).tobytes() == getattr(b, k).tobytes() == getattr(c, k).tobytes()
    assert c.domain == b.domain and c.categorical_groups == b.categorical_groups
    other = load("CTG", seed=1, scaling="loader")
    assert not np.array_equal(a.X_test, other.X_test)
    with pytest.raises(ValueError, match="unknown parameter"):
        load_dataset("CTG", raw_dir=DATA, cache_dir=False, source="raw")
    with pytest.raises(ValueError, match="n_val"):
        load_dataset("CTG", raw_dir=DATA, cache_dir=False, n_val=-1)


@pytest.mark.parametrize("name", list(SPECS))
def test_missing_and_altered_files_stop_the_loader_with_the_checksum(tmp_path, monkeypatch, name):
    rel = SPECS[name].raw_files[0]
    if not (DATA / rel).is_file():
        pytest.skip(f"{rel} not found in {DATA}")
    monkeypatch.delenv("CTBENCH_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match=rel) as err:
        load_dataset(name, raw_dir=tmp_path, cache_dir=False)
    assert files.FILES[rel].sha256 in str(err.value)
    dst = tmp_path / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DATA / rel, dst)
    data = bytearray(dst.read_bytes())
    data[-1] ^= 1
    dst.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="altered or corrupt") as err:
        load_dataset(name, raw_dir=tmp_path, cache_dir=False)
    assert rel in str(err.value) and files.FILES[rel].sha256 in str(err.value)
