"""Real-data loaders (reference §6.2, §6.3) on the project's raw files.

The data directory is ``$CTBENCH_DATA`` or, by default, ``../shared/data`` next to the repository; tests skip when
neither holds the files.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ctbench.data import files, load_dataset
from ctbench.data.vision import MNIST_PROTECTED, read_idx

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CTBENCH_DATA") or REPO.parent / "shared" / "data")
pytestmark = pytest.mark.skipif(
    not (DATA / "adult" / "adult.data").is_file(),
    reason=f"real data not found in {DATA} (set CTBENCH_DATA to the folder described in shared/data/MANIFEST.md)",
)

ARRAYS = ("X_train", "y_train", "X_val", "y_val", "X_test", "y_test")
# dataset: (train+val, test, features, protected index, protected name, paper test size)
EXPECTED = {
    "adult": (26049, 6512, 108, 0, "age", 5010),
    "CH": (16504, 4126, 8, 1, "HouseAge", 3101),
    "Cred": (10618, 2654, 33, 14, "AGE", 1923),
    "GMSC": (13371, 3343, 10, 1, "age", 2474),
}
PROCESSED = {"CH": "taijadata_processed/cal_housing.csv", "Cred": "taijadata_processed/credit_default.csv",
             "GMSC": "taijadata_processed/gmsc.csv"}


def load(name, **kw):
    kw.setdefault("cache_dir", False)
    return load_dataset(name, raw_dir=DATA, **kw)


_MEMO: dict = {}


def memo(name, **kw):
    key = (name, tuple(sorted(kw.items())))
    if key not in _MEMO:
        _MEMO[key] = load(name, **kw)
    return _MEMO[key]


def trainval(ds):
    return np.vstack([ds.X_train, ds.X_val]).astype(np.float64)


def same_bytes(a, b):
    return all(getattr(a, k).dtype == getattr(b, k).dtype and getattr(a, k).tobytes() == getattr(b, k).tobytes()
               for k in ARRAYS)


# -- sizes, names, metadata ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(EXPECTED))
def test_sizes_features_protected(name):
    n_tv, n_test, d, p, pname, _ = EXPECTED[name]
    ds = memo(name)
    assert len(ds.y_train) + len(ds.y_val) == n_tv and len(ds.y_test) == n_test
    assert 990 <= len(ds.y_val) <= 1000
    assert ds.n_features == d == len(ds.feature_names) and ds.X_test.shape[1] == d
    assert ds.protected == [p] and ds.feature_names[p] == pname
    assert ds.n_classes == 2 and set(np.unique(ds.y_test)) == {0, 1}
    for k in ARRAYS:
        arr = getattr(ds, k)
        assert arr.dtype == (np.float32 if k.startswith("X") else np.int64)
    assert ds.meta["fidelity"] == "reference" and ds.meta["n_trainval"] == n_tv
    assert ds.meta["source"] == ("raw" if name == "adult" else "taijadata_processed")


def test_class_balance_as_reference():
    assert abs(np.mean(np.concatenate([memo("adult").y_train, memo("adult").y_val])) - 0.24) < 0.01
    for name in ("CH", "Cred", "GMSC"):
        ds = memo(name)
        y = np.concatenate([ds.y_train, ds.y_val, ds.y_test])
        assert np.sum(y == 1) == np.sum(y == 0)


def test_aliases_resolve_to_the_same_loader():
    a, b = memo("CH"), load("california_housing")
    assert a.name == b.name == "california_housing" and same_bytes(a, b)


def test_unknown_parameter_is_rejected():
    with pytest.raises(ValueError, match="unknown parameter"):
        load("adult", n_trian=5)
    with pytest.raises(ValueError, match="unknown parameter"):
        load("mnist", n_per_klass=5)
    with pytest.raises(ValueError, match="source"):
        load("CH", source="somewhere")


# -- standardisation fitted on training rows only ------------------------------------------------------------------

@pytest.mark.parametrize("name", list(EXPECTED) + ["german_credit", "heloc"])
def test_standardisation_uses_training_rows_only(name):
    # German Credit's own recipe (its default, standard_all, z-scores every column: test_data_scaling_switch.py)
    ds = memo(name, scaling="loader") if name == "german_credit" else memo(name)
    st = ds.meta["standardised"]
    idx = [ds.feature_names.index(c) for c in st["columns"]]
    assert len(idx) > 0
    tv = trainval(ds)[:, idx]
    np.testing.assert_allclose(tv.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(tv.std(0, ddof=1), 1.0, atol=1e-5)
    te = ds.X_test[:, idx].astype(np.float64)
    assert np.abs(te.mean(0)).max() > 1e-3  # the test rows were not used to fit


def test_scaler_statistics_equal_those_of_the_first_rows_of_the_table():
    df = pd.read_csv(DATA / PROCESSED["GMSC"])
    ds = memo("GMSC")
    n_tv = EXPECTED["GMSC"][0]
    st = ds.meta["standardised"]
    np.testing.assert_allclose(st["mean"], df.drop(columns="target").iloc[:n_tv].mean().to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(st["std"], df.drop(columns="target").iloc[:n_tv].std(ddof=1).to_numpy(), rtol=1e-12)
    # first test row = table row n_tv, standardised with the training statistics
    row = df.drop(columns="target").iloc[n_tv].to_numpy()
    np.testing.assert_allclose(ds.X_test[0], (row - st["mean"]) / np.array(st["std"]), rtol=1e-6, atol=1e-6)
    assert ds.y_test[0] == df["target"].iloc[n_tv]


def test_adult_rows_in_file_order_and_first_row_encoded():
    ds = memo("adult", n_val=0)
    st = ds.meta["standardised"]
    raw = pd.read_csv(DATA / "adult/adult.data", header=None, skipinitialspace=True)
    age = raw[0].to_numpy(float)
    assert st["mean"][0] == pytest.approx(age[:26049].mean()) and st["std"][0] == pytest.approx(age[:26049].std(ddof=1))
    x0 = ds.X_train[0]  # "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, ..."
    on = {ds.feature_names[i] for i in np.flatnonzero(x0 == 1.0) if "__" in ds.feature_names[i]}
    assert on == {"workclass__State-gov", "education__Bachelors", "marital_status__Never-married",
                  "occupation__Adm-clerical", "relationship__Not-in-family", "race__White", "sex__Male",
                  "country__United-States"}
    assert x0[0] == pytest.approx((39 - st["mean"][0]) / st["std"][0], rel=1e-6)
    assert ds.y_test[-1] == int(raw[14].iloc[-1] == ">50K")


# -- categorical groups --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["adult", "Cred", "german_credit"])
def test_one_hot_groups_sum_to_one(name):
    # German Credit's loader recipe keeps the one-hot columns 0/1 (its default z-scores them, as App. B.1 says)
    kw = {"adult": {"fidelity": "paper"}, "german_credit": {"scaling": "loader"}}.get(name, {})
    ds = memo(name, **kw)
    assert ds.categorical_groups
    for X in (ds.X_train, ds.X_val, ds.X_test):
        for g in ds.categorical_groups:
            block = X[:, g]
            assert set(np.unique(block)) <= {0.0, 1.0}
            np.testing.assert_array_equal(block.sum(1), 1.0)
            assert all("__" in ds.feature_names[i] for i in g)
            prefix = {ds.feature_names[i].split("__")[0] for i in g}
            assert len(prefix) == 1


def test_adult_groups_substring_quirk_and_paper_fix():
    ref, pap = memo("adult"), memo("adult", fidelity="paper")
    assert [len(g) for g in ref.categorical_groups] == [9, 17, 7, 15, 6, 5, 2, 42]
    assert [len(g) for g in pap.categorical_groups] == [9, 16, 7, 15, 6, 5, 2, 42]
    edu_num = ref.feature_names.index("education_num")
    assert edu_num in ref.categorical_groups[1] and all(edu_num not in g for g in pap.categorical_groups)
    assert ref.feature_names == pap.feature_names and ref.feature_names.index("fnlwgt") == 10
    # MLJ level order: codes sorted as strings where the column holds "?" (occupation: 0, 1, 10, …, 13, 2, …, ?)
    occ = [ref.feature_names[i].split("__")[1] for i in pap.categorical_groups[3]]
    assert occ[:3] == ["Tech-support", "Craft-repair", "Transport-moving"] and occ[-1] == "?"
    edu = [ref.feature_names[i].split("__")[1] for i in pap.categorical_groups[1]]
    assert edu[:3] == ["Bachelors", "Some-college", "11th"]


def test_credit_groups_and_protected_position():
    ds = memo("Cred")
    assert ds.categorical_groups == [[1, 2], [3, 4, 5, 6, 7, 8, 9], [10, 11, 12, 13]]
    assert ds.feature_names[:3] == ["LIMIT_BAL", "SEX__1", "SEX__2"]


# -- domain --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,fidelity,n", [("Cred", "reference", 2.0), ("Cred", "paper", 3.0),
                                             ("CH", "reference", 2.0), ("adult", "reference", 2.0)])
def test_domain_matches_hand_computation(name, fidelity, n):
    ds = memo(name, fidelity=fidelity)
    X = trainval(ds)
    mu, sd = X.mean(0), X.std(0, ddof=1)
    lo, hi = np.minimum(mu - n * sd, X.min(0)), np.maximum(mu + n * sd, X.max(0))
    np.testing.assert_allclose(ds.domain[0], lo, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ds.domain[1], hi, rtol=1e-9, atol=1e-9)
    assert ds.meta["domain_n_sigma"] == n


def test_domain_of_a_one_hot_column_is_the_documented_box():
    ds = memo("Cred")
    i = ds.feature_names.index("SEX__2")
    p = trainval(ds)[:, i].mean()
    s = trainval(ds)[:, i].std(ddof=1)
    assert ds.domain[0][i] == pytest.approx(min(0.0, p - 2 * s))
    assert ds.domain[1][i] == pytest.approx(max(1.0, p + 2 * s))


# -- paper test sizes ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(EXPECTED))
def test_paper_test_sizes_are_the_first_test_rows(name):
    ref, pap = memo(name), memo(name, fidelity="paper")
    assert len(pap.y_test) == EXPECTED[name][5] and pap.meta["n_test_full"] == EXPECTED[name][1]
    np.testing.assert_array_equal(pap.y_test, ref.y_test[: len(pap.y_test)])
    if name != "adult":  # Adult's groups differ in paper mode, the arrays do not
        np.testing.assert_array_equal(pap.X_test, ref.X_test[: len(pap.y_test)])


# -- row source: processed tables vs raw rebuild -------------------------------------------------------------------

def _raw_frame(name):
    if name == "CH":
        raw = pd.read_csv(DATA / "california_housing/cal_housing.data", header=None)
        lon, lat, age, rooms, beds, pop, hh, inc, _ = (raw[i] for i in range(9))
        return pd.DataFrame({"MedInc": inc, "HouseAge": age, "AveRooms": rooms / hh, "AveBedrms": beds / hh,
                             "Population": pop, "AveOccup": pop / hh, "Latitude": lat, "Longitude": lon})
    if name == "Cred":
        return pd.read_csv(DATA / "credit_default/UCI_Credit_Card.csv").drop(
            columns=["ID", "default.payment.next.month"])
    raw = pd.read_csv(DATA / "give_me_some_credit/cs-training.csv.gz").dropna()
    return raw.drop(columns=[raw.columns[0], "SeriousDlqin2yrs"])


@pytest.mark.parametrize("name", list(PROCESSED))
def test_processed_rows_are_rows_of_the_raw_file(name):
    proc = pd.read_csv(DATA / PROCESSED[name]).drop(columns="target").astype(float)
    raw = _raw_frame(name).astype(float).drop_duplicates()
    merged = proc.merge(raw, how="left", on=list(proc.columns), indicator=True)
    assert len(merged) >= len(proc) and (merged["_merge"] == "both").all()


@pytest.mark.parametrize("name", list(PROCESSED))
def test_raw_rebuild_same_shape_seeded_and_balanced(name):
    n_tv, n_test, d, p, pname, _ = EXPECTED[name]
    a = load(name, source="raw")
    assert a.meta["source"] == "raw" and "undersample_rng" in a.meta
    assert len(a.y_train) + len(a.y_val) == n_tv and len(a.y_test) == n_test and a.n_features == d
    assert a.feature_names == memo(name).feature_names and a.feature_names[p] == pname
    y = np.concatenate([a.y_train, a.y_val, a.y_test])
    assert np.sum(y == 1) == np.sum(y == 0)
    assert same_bytes(a, load(name, source="raw"))
    assert not np.array_equal(a.y_test, load(name, source="raw", seed=7).y_test)


def test_processed_source_required_but_absent(tmp_path, monkeypatch):
    monkeypatch.delenv("CTBENCH_DATA", raising=False)
    _copy(tmp_path, "california_housing/cal_housing.data")
    assert load_dataset("CH", raw_dir=tmp_path, cache_dir=False).meta["source"] == "raw"
    with pytest.raises(FileNotFoundError, match="taijadata_processed/cal_housing.csv"):
        load_dataset("CH", raw_dir=tmp_path, cache_dir=False, source="processed")


# -- German credit and HELOC ---------------------------------------------------------------------------------------

def test_german_and_heloc():
    g = memo("german_credit")
    assert len(g.y_train) + len(g.y_val) == 800 and len(g.y_test) == 200 and g.n_features == 61
    assert 98 <= len(g.y_val) <= 100 and g.feature_names[g.protected[0]] == "age"
    assert np.sum(np.concatenate([g.y_train, g.y_val, g.y_test])) == 700
    h = memo("heloc")
    assert len(h.y_train) + len(h.y_val) == 7897 and len(h.y_test) == 1974 and h.n_features == 23
    assert h.feature_names[0] == "ExternalRiskEstimate" and h.categorical_groups == [] and h.protected == []
    assert np.sum(np.concatenate([h.y_train, h.y_val, h.y_test])) == 4735  # "Good" among the 9,871 kept rows
    assert same_bytes(h, load("heloc")) and not same_bytes(h, load("heloc", seed=1))


# -- determinism, errors, cache ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["adult", "GMSC"])
def test_deterministic_and_seed_changes_validation(name):
    a, b = memo(name), load(name)
    assert same_bytes(a, b) and a.domain == b.domain
    c = load(name, seed=1)
    assert not np.array_equal(a.y_val, c.y_val) or not np.array_equal(a.X_val, c.X_val)
    assert a.X_test.tobytes() == c.X_test.tobytes()  # the test rows do not depend on the seed


def _copy(root, rel):
    dst = root / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DATA / rel, dst)
    return dst


def test_missing_and_corrupted_files_stop_the_loader(tmp_path, monkeypatch):
    monkeypatch.delenv("CTBENCH_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="adult/adult.data") as err:
        load_dataset("adult", raw_dir=tmp_path, cache_dir=False)
    assert files.FILES["adult/adult.data"].sha256 in str(err.value) and "ctbench data fetch" in str(err.value)
    dst = _copy(tmp_path, "taijadata_processed/gmsc.csv")
    data = bytearray(dst.read_bytes())
    data[100] = ord("7") if data[100] != ord("7") else ord("8")
    dst.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="taijadata_processed/gmsc.csv") as err:
        load_dataset("GMSC", raw_dir=tmp_path, cache_dir=False)
    assert files.FILES["taijadata_processed/gmsc.csv"].sha256 in str(err.value)


def test_cache_hit_identical_and_param_change_rebuilds(tmp_path):
    a = load("GMSC", cache_dir=tmp_path)
    b = load("GMSC", cache_dir=tmp_path)
    assert a.meta["cache"] == "built" and b.meta["cache"] == "hit" and same_bytes(a, b)
    assert (a.feature_names, a.protected, a.domain, a.categorical_groups) == \
           (b.feature_names, b.protected, b.domain, b.categorical_groups)
    assert same_bytes(a, memo("GMSC"))
    c = load("GMSC", cache_dir=tmp_path, n_val=500)
    assert c.meta["cache"] == "built" and len(c.y_val) < 600
    d = load("GMSC", cache_dir=tmp_path, fidelity="paper")
    assert d.meta["cache"] == "built" and len(d.y_test) == 2474
    assert len(list((tmp_path / "gmsc").glob("*.npz"))) == 3
    assert load("GMSC", cache_dir=tmp_path, n_val=500).meta["cache"] == "hit"


# -- MNIST ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mnist():
    return load("mnist")


def test_mnist_reference_split(mnist):
    ds = mnist
    assert (len(ds.y_train), len(ds.y_val), len(ds.y_test)) == (10000, 1000, 10000)
    assert ds.n_features == 784 and ds.n_classes == 10
    y = np.concatenate([ds.y_train, ds.y_val])
    np.testing.assert_array_equal(np.bincount(y), [1100] * 10)
    np.testing.assert_array_equal(np.bincount(ds.y_val), [100] * 10)
    assert ds.meta["n_duplicates"] > 0  # drawn with replacement
    for X in (ds.X_train, ds.X_test):
        assert X.dtype == np.float32 and X.min() == -1.0 and X.max() == 1.0
    assert ds.domain == ([-1.0] * 784, [1.0] * 784)
    assert ds.protected == list(range(140)) + list(range(644, 784)) == MNIST_PROTECTED
    assert {ds.feature_names[i][:9] for i in ds.protected} == {f"pixel_r{r:02d}" for r in (0, 1, 2, 3, 4, 23, 24, 25,
                                                                                          26, 27)}


def test_mnist_pixels_row_major_and_resample_sorted(mnist):
    test_img = read_idx(DATA / "mnist/t10k-images-idx3-ubyte.gz")
    np.testing.assert_allclose(mnist.X_test[0].reshape(28, 28), test_img[0] / 255.0 * 2 - 1, atol=1e-6)
    train_img = read_idx(DATA / "mnist/train-images-idx3-ubyte.gz").reshape(60000, -1)
    train_lab = read_idx(DATA / "mnist/train-labels-idx1-ubyte.gz")
    # the training rows are sorted original indices: recover them and check labels and order
    lookup = {train_img[i].tobytes(): i for i in range(60000)}
    back = np.round((mnist.X_train[:300] + 1) / 2 * 255).astype(np.uint8)
    idx = np.array([lookup[r.tobytes()] for r in back])
    assert np.all(np.diff(idx) >= 0)
    np.testing.assert_array_equal(train_lab[idx], mnist.y_train[:300])


def test_mnist_deterministic_and_paper_test_size(mnist):
    b = load("mnist")
    assert same_bytes(mnist, b)
    c = load("mnist", seed=1)
    assert not np.array_equal(mnist.X_train[:50], c.X_train[:50])
    p = load("mnist", fidelity="paper")
    assert len(p.y_test) == 2000 and np.array_equal(p.y_test, mnist.y_test[:2000])
