"""Synthetic datasets (reference §6.1): determinism, sizes, splits, domain, calibration, geometry."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from ctbench.data import available, load_dataset, stratified_val_split
from ctbench.data.synthetic import (
    BLOB_CENTERS_2D,
    BLOB_CENTERS_REFERENCE,
    VAL_SPLIT_STREAM,
    default_n_test,
    julia_blob_centers,
    make_blobs,
    make_circles,
    make_moons,
)
from ctbench.fidelity import resolve_fidelity

NAMES = ["lin_sep", "over", "circles", "moons", "gauss10"]
ALIASES = {"LS": "lin_sep", "OL": "over", "Circ": "circles", "Moon": "moons", "gaussm": "gauss10"}
ARRAYS = ["X_train", "y_train", "X_val", "y_val", "X_test", "y_test"]


@pytest.fixture(scope="module")
def ref():
    """Every dataset once with the reference defaults (shared to keep the suite fast)."""
    return {name: load_dataset(name) for name in NAMES}


def _arrays(d):
    return [getattr(d, a) for a in ARRAYS]


# -- determinism -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_same_seed_gives_byte_identical_data(ref, name):
    again = load_dataset(name)
    for a, b in zip(_arrays(ref[name]), _arrays(again), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    assert again.domain == ref[name].domain and again.meta == ref[name].meta


@pytest.mark.parametrize("name", NAMES)
def test_different_seeds_give_different_data(ref, name):
    base = ref[name]
    other_seed = load_dataset(name, seed=43)
    other_shuffle = load_dataset(name, shuffle_seed=2026)
    for other in (other_seed, other_shuffle):
        assert not np.array_equal(other.X_train, base.X_train)
        assert not np.array_equal(other.X_test, base.X_test)


# -- sizes, dtypes, pipeline -----------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_reference_sizes_and_types(ref, name):
    d = ref[name]
    dim = 10 if name == "gauss10" else 2
    # 3600 train+val rows, split per class with floor: val is 600 or one short of it (599 here), never more.
    assert len(d.y_train) + len(d.y_val) == 3600
    assert len(d.y_val) in (599, 600) and len(d.y_test) == 900
    for X, y in ((d.X_train, d.y_train), (d.X_val, d.y_val), (d.X_test, d.y_test)):
        assert X.dtype == np.float32 and y.dtype == np.int64
        assert X.shape == (len(y), dim) and X.flags.c_contiguous
        assert set(np.unique(y)) == {0, 1}
    assert d.n_classes == 2 and d.n_features == dim
    assert d.feature_names == [f"x{i}" for i in range(1, dim + 1)]
    assert d.protected == [0] and d.categorical_groups == []
    assert (d.meta["n_train"], d.meta["n_val"], d.meta["n_test"]) == (len(d.y_train), len(d.y_val), 900)


def test_paper_mode_test_size_and_default_formula():
    d = load_dataset("over", fidelity="paper")
    assert len(d.y_test) == 600 and len(d.y_train) + len(d.y_val) == 3600
    assert d.meta["fidelity"] == "paper" and d.meta["test_sizes"] == "paper"
    ref, paper = resolve_fidelity("reference"), resolve_fidelity("paper")
    assert default_n_test(3000, 600, ref) == 900  # round(3600 / 0.8) − 3600
    assert default_n_test(1000, 200, ref) == 300
    assert default_n_test(3000, 600, paper) == 600  # (1 − 0.8) · n_train
    assert default_n_test(1000, 200, paper) == 200
    # a Fidelity object works as well as its name
    assert np.array_equal(load_dataset("over", fidelity=paper).X_test, d.X_test)
    # the test rows are the LAST rows of the permutation, so paper's test set is the tail of the reference's
    # (same centres: the paper preset keeps the calibrated ones)
    same_centres = resolve_fidelity("reference", {"blob_centers": "calibrated"})
    assert np.array_equal(load_dataset("over", fidelity=same_centres).X_test[-600:], d.X_test)


@pytest.mark.parametrize("name, gen, kw", [
    ("over", make_blobs, {"centers": BLOB_CENTERS_REFERENCE, "cluster_std": 2.0}),
    ("circles", make_circles, {"noise": 0.15, "factor": 0.01}),
    ("moons", make_moons, {"noise": 0.1, "xshift": 1.0, "yshift": 0.3}),
])
def test_pipeline_matches_hand_replay(ref, name, gen, kw):
    """Draw with default_rng(42), permute with default_rng(2025), first 3600 rows → train/val, last 900 →
    test, stratified split with default_rng([42, 1])."""
    X, y = gen(np.random.default_rng(42), 100_000, **kw)
    perm = np.random.default_rng(2025).permutation(100_000)
    X_tv, y_tv = X[perm[:3600]].astype(np.float32), y[perm[:3600]]
    tr, va = stratified_val_split(y_tv, 600, np.random.default_rng([42, VAL_SPLIT_STREAM]))
    # numpy's stream, asked for by name (the default, Julia's points: tests/test_julia_rng.py, test_julia_moons.py)
    d = load_dataset(name, **({"blob_points": "numpy"} if name == "over" else {"points": "numpy"}))
    assert np.array_equal(d.X_train, X_tv[tr]) and np.array_equal(d.y_train, y_tv[tr])
    assert np.array_equal(d.X_val, X_tv[va]) and np.array_equal(d.y_val, y_tv[va])
    assert np.array_equal(d.X_test, X[perm[-900:]].astype(np.float32))
    assert np.array_equal(d.y_test, y[perm[-900:]])


def test_generation_is_fast():
    t0 = time.perf_counter()
    for gen, kw in ((make_blobs, {"centers": [[0.0] * 10, [1.0] * 10], "cluster_std": 0.5}),
                    (make_circles, {"noise": 0.15, "factor": 0.01}),
                    (make_moons, {"noise": 0.1, "xshift": 1.0, "yshift": 0.3})):
        gen(np.random.default_rng(0), 100_000, **kw)
    assert time.perf_counter() - t0 < 1.0


# -- class balance and the stratified split --------------------------------------------------------

@pytest.mark.parametrize("gen, kw", [
    (make_blobs, {"centers": BLOB_CENTERS_2D, "cluster_std": 0.5}),
    (make_circles, {"noise": 0.15, "factor": 0.01}),
    (make_moons, {"noise": 0.1, "xshift": 1.0, "yshift": 0.3}),
])
def test_generators_are_exactly_balanced(gen, kw):
    for n in (1000, 1001):
        _, y = gen(np.random.default_rng(0), n, **kw)
        assert np.bincount(y).tolist() == [n // 2, n - n // 2]


@pytest.mark.parametrize("name", NAMES)
def test_class_balance_of_splits(ref, name):
    d = ref[name]
    for y in (d.y_train, d.y_val, d.y_test):
        assert abs(y.mean() - 0.5) < 0.05


@pytest.mark.parametrize("name", NAMES)
def test_stratified_split_uses_floor_per_class(ref, name):
    d = ref[name]
    y_tv = np.concatenate([d.y_train, d.y_val])
    for c in (0, 1):
        n_c = int((y_tv == c).sum())
        assert int((d.y_val == c).sum()) == math.floor(600 / 3600 * n_c)
    # class ratios kept: val share equals the train+val share up to the floor (< 1/600 per class)
    assert abs(d.y_val.mean() - y_tv.mean()) < 2 / 600


def test_stratified_split_keeps_train_order():
    y = np.array([0, 1] * 50)
    tr, va = stratified_val_split(y, 20, np.random.default_rng(0))
    assert np.all(np.diff(tr) > 0) and len(va) == 20 and not set(tr) & set(va)
    assert np.bincount(y[va]).tolist() == [10, 10]


# -- domain ----------------------------------------------------------------------------------------

def _hand_domain(X, n):
    X = X.astype(np.float64)
    mu, sd = X.mean(0), X.std(0, ddof=1)
    return np.minimum(mu - n * sd, X.min(0)), np.maximum(mu + n * sd, X.max(0))


@pytest.mark.parametrize("name", NAMES)
def test_domain_is_mu_pm_two_sigma_widened_to_range(ref, name):
    d = ref[name]
    X_tv = np.vstack([d.X_train, d.X_val])
    lo, hi = _hand_domain(X_tv, 2)
    np.testing.assert_allclose(d.domain[0], lo, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d.domain[1], hi, rtol=1e-12, atol=1e-12)
    assert np.all(X_tv >= np.array(d.domain[0]) - 1e-9) and np.all(X_tv <= np.array(d.domain[1]) + 1e-9)


@pytest.mark.parametrize("name", ["lin_sep", "moons"])
def test_domain_uses_three_sigma_in_paper_mode(ref, name):
    d = load_dataset(name, fidelity="paper")
    X_tv = np.vstack([d.X_train, d.X_val])
    np.testing.assert_allclose(d.domain[0], _hand_domain(X_tv, 3)[0], rtol=1e-12)
    np.testing.assert_allclose(d.domain[1], _hand_domain(X_tv, 3)[1], rtol=1e-12)
    assert d.meta["domain_n_sigma"] == 3.0
    # same train/val rows as reference mode with the paper's centres, strictly wider box (μ ± 3σ exceeds the
    # observed range here)
    r = load_dataset(name, fidelity=resolve_fidelity("reference", {"blob_centers": "calibrated"}))
    assert np.array_equal(d.X_train, r.X_train)
    assert all(p < q for p, q in zip(d.domain[0], r.domain[0], strict=True))
    assert all(p > q for p, q in zip(d.domain[1], r.domain[1], strict=True))


# -- calibration of the blob centres (reference §6.1, "Note on the blob centres") ------------------

def _bayes_accuracy(d):
    """Equal σ and priors: the Bayes rule is the nearest centre."""
    c = np.asarray(d.meta["params"]["centers"])
    pred = np.linalg.norm(d.X_test - c[1], axis=1) < np.linalg.norm(d.X_test - c[0], axis=1)
    return float((pred.astype(np.int64) == d.y_test).mean())


def _logreg_accuracy(d, ridge=1e-3, iters=30):
    """Ridge logistic regression fitted by Newton's method on train, scored on test (attainable accuracy)."""
    A = np.hstack([d.X_train.astype(np.float64), np.ones((len(d.y_train), 1))])
    w = np.zeros(A.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-A @ w))
        grad = A.T @ (p - d.y_train) + ridge * w
        hess = (A * (p * (1 - p))[:, None]).T @ A + ridge * np.eye(A.shape[1])
        w -= np.linalg.solve(hess, grad)
    B = np.hstack([d.X_test.astype(np.float64), np.ones((len(d.y_test), 1))])
    return float(((B @ w > 0).astype(np.int64) == d.y_test).mean())


def test_lin_sep_is_separable(ref):
    d = ref["lin_sep"]
    assert d.meta["bayes_accuracy"] > 0.999
    assert _bayes_accuracy(d) >= 0.99
    assert _logreg_accuracy(d) >= 0.99


def test_overlap_matches_paper_accuracy(ref):
    d = ref["over"]
    assert 0.91 <= d.meta["bayes_accuracy"] <= 0.93  # Φ(d / 2σ) of the default centres
    assert 0.89 <= _bayes_accuracy(d) <= 0.95
    assert 0.89 <= _logreg_accuracy(d) <= 0.95


def test_gauss10_is_separable(ref):
    assert _bayes_accuracy(ref["gauss10"]) >= 0.99


def test_blob_centres_are_parameters():
    centers = [[0.0, 0.0], [10.0, 0.0]]
    d = load_dataset("over", centers=centers)
    assert d.meta["params"]["centers"] == centers
    X = np.vstack([d.X_train, d.X_val])
    y = np.concatenate([d.y_train, d.y_val])
    np.testing.assert_allclose(X[y == 0].mean(0), centers[0], atol=0.3)
    np.testing.assert_allclose(X[y == 1].mean(0), centers[1], atol=0.3)
    assert _bayes_accuracy(d) > 0.99  # d = 10, σ = 2 → Φ(2.5) ≈ 0.994


def test_julia_blob_centers_replay_xoshiro42():
    """The first four draws of Julia's Xoshiro(42), mapped to [−10, 10] column-major (MLJBase make_blobs), pinned;
    their distance gives OL the paper's accuracy, and class 1 lies up and to the left of class 0 (paper Fig. 1)."""
    c = julia_blob_centers(42)
    np.testing.assert_allclose(c, [[2.5869024628521764, -0.4518571313436439],
                                   [-0.9932211880761308, 4.062596980064029]], rtol=0, atol=1e-12)
    assert c == BLOB_CENTERS_REFERENCE
    d = math.dist(*c)
    assert 5.76 < d < 5.77 and 0.92 < 0.5 * (1 + math.erf(d / 4 / math.sqrt(2))) < 0.93
    assert c[1][0] < c[0][0] and c[1][1] > c[0][1]
    with pytest.raises(ValueError, match="bulk"):
        julia_blob_centers(42, 2, 10)  # gauss10's 20 draws take Julia's SIMD path: refused, not guessed


@pytest.mark.parametrize("switch, centers", [("reference", BLOB_CENTERS_REFERENCE), ("calibrated", BLOB_CENTERS_2D)])
def test_blob_centers_switch_picks_the_centres(switch, centers):
    fid = resolve_fidelity("reference", {"blob_centers": switch})
    for name in ("lin_sep", "over"):
        d = load_dataset(name, fidelity=fid)
        assert d.meta["params"]["centers"] == centers and d.meta["blob_centers"] == switch
    given = load_dataset("lin_sep", fidelity=fid, centers=[[0.0, 0.0], [9.0, 0.0]])
    assert given.meta["blob_centers"] == "given"
    assert load_dataset("gauss10", fidelity=fid).meta["params"]["centers"] == [[-2.0] * 10, [2.0] * 10]


def test_paper_preset_keeps_calibrated_centres():
    assert resolve_fidelity("paper").blob_centers == "calibrated"
    assert load_dataset("lin_sep", fidelity="paper").meta["params"]["centers"] == BLOB_CENTERS_2D


def test_blob_std_is_cluster_std(ref):
    for name, sigma in (("lin_sep", 0.5), ("over", 2.0), ("gauss10", 0.5)):
        d = ref[name]
        c = np.asarray(d.meta["params"]["centers"])
        resid = d.X_train - c[d.y_train]
        np.testing.assert_allclose(resid.std(0, ddof=1), sigma, rtol=0.06)


# -- generator geometry ----------------------------------------------------------------------------

def test_circles_radii():
    X, y = make_circles(np.random.default_rng(0), 2000, noise=0.0, factor=0.01)
    r = np.linalg.norm(X, axis=1)
    np.testing.assert_allclose(r[y == 0], 0.01, rtol=1e-12)
    np.testing.assert_allclose(r[y == 1], 1.0, rtol=1e-12)


def test_circles_default_noise(ref):
    d = ref["circles"]
    r = np.linalg.norm(d.X_train, axis=1)
    assert np.median(r[d.y_train == 0]) < 0.25  # a blob of σ = 0.15 at the origin
    assert abs(np.median(r[d.y_train == 1]) - 1.0) < 0.05
    np.testing.assert_allclose(d.X_train[d.y_train == 0].std(0), 0.15, rtol=0.1)


def test_moons_shape():
    X, y = make_moons(np.random.default_rng(0), 2000, noise=0.0, xshift=1.0, yshift=0.3)
    up, low = X[y == 0], X[y == 1]
    np.testing.assert_allclose(np.linalg.norm(up, axis=1), 1.0, rtol=1e-12)
    assert np.all(up[:, 1] >= 0)
    np.testing.assert_allclose(np.linalg.norm(low - [1.0, 0.3], axis=1), 1.0, rtol=1e-12)
    assert np.all(low[:, 1] <= 0.3)
    assert up[:, 0].min() >= -1 and up[:, 0].max() <= 1 and low[:, 0].min() >= 0 and low[:, 0].max() <= 2


def test_moons_parameters_and_noise(ref):
    d = ref["moons"]
    X, y = d.X_train, d.y_train
    # noise 0.1 around the arcs: distance to the arc's centre stays close to 1
    assert abs(np.median(np.linalg.norm(X[y == 0], axis=1)) - 1) < 0.05
    assert abs(np.median(np.linalg.norm(X[y == 1] - [1.0, 0.3], axis=1)) - 1) < 0.05
    assert X[y == 0, 1].mean() > 0.5 and X[y == 1, 1].mean() < -0.2
    shifted = load_dataset("moons", xshift=3.0, yshift=-1.0, noise=0.0)
    low = shifted.X_train[shifted.y_train == 1]
    np.testing.assert_allclose(np.linalg.norm(low - [3.0, -1.0], axis=1), 1.0, rtol=1e-5)
    assert shifted.meta["params"] == {"noise": 0.0, "xshift": 3.0, "yshift": -1.0}


# -- registry, aliases, metadata, errors -----------------------------------------------------------

@pytest.mark.parametrize("alias, name", ALIASES.items())
def test_aliases_load_the_same_data(ref, alias, name):
    d = load_dataset(alias)
    assert d.name == name
    for a, b in zip(_arrays(d), _arrays(ref[name]), strict=True):
        assert a.tobytes() == b.tobytes()


def test_registered_as_synthetic():
    info = available()
    for name in NAMES:
        assert info[name]["family"] == "synthetic" and info[name]["description"]
    assert info["lin_sep"]["aliases"] == ["LS"] and info["over"]["aliases"] == ["OL"]


def test_meta_is_self_describing(ref):
    meta = ref["lin_sep"].meta
    assert meta["generator"] == "make_blobs"
    assert meta["params"] == {"centers": BLOB_CENTERS_REFERENCE, "cluster_std": 0.5}
    assert meta["blob_centers"] == "reference"
    assert (meta["seed"], meta["shuffle_seed"], meta["n_draws"]) == (42, 2025, 100_000)
    assert meta["fidelity"] == "reference" and meta["domain_n_sigma"] == 2.0
    assert meta["val_split_rng"] == "default_rng([42, 1])"
    assert ref["circles"].meta["params"] == {"noise": 0.15, "factor": 0.01}
    assert ref["moons"].meta["params"] == {"noise": 0.1, "xshift": 1.0, "yshift": 0.3}


@pytest.mark.parametrize("kwargs, match", [
    ({"bogus": 1}, "unknown parameter"),
    ({"noise": 0.1}, "unknown parameter"),  # blobs have no noise parameter
    ({"n_train": 0}, "n_train"),
    ({"n_val": -1}, "n_val"),
    ({"n_test": 0}, "n_test"),
    ({"n_train": 3000.0}, "n_train"),
    ({"n_train": 99_000}, "exceeds n_draws"),
    ({"n_draws": 4000}, "exceeds n_draws"),
    ({"centers": [[0.0, 0.0]]}, "centers"),
    ({"centers": [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]}, "centers"),
    ({"cluster_std": 0.0}, "cluster_std"),
    ({"fidelity": "nonsense"}, "fidelity"),
])
def test_bad_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        load_dataset("lin_sep", **kwargs)


@pytest.mark.parametrize("name, kwargs, match", [
    ("circles", {"factor": 1.5}, "factor"),
    ("circles", {"noise": -0.1}, "noise"),
    ("moons", {"noise": -0.1}, "noise"),
    ("moons", {"factor": 0.5}, "unknown parameter"),
    ("moons", {"noise": "lots"}, "must be a number"),
    ("nope", {}, "unknown name"),
])
def test_bad_generator_parameters_raise(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        load_dataset(name, **kwargs)


@pytest.mark.parametrize("centers", [5, [[1, 2]], [[1, 2], [3, "x"]], [[1, 2], [3, float("nan")]]])
def test_bad_blob_centres_name_the_parameter(centers):
    from ctbench.data import load_dataset

    with pytest.raises(ValueError, match="centers: expected a finite 2×D list"):
        load_dataset("lin_sep", centers=centers, n_draws=200, n_train=100, n_val=20, n_test=20)
