"""Julia replay of Moons and Circles (``julia_make_moons`` / ``julia_make_circles``, loader parameter ``points``).

What Julia printed that can check it: ``paper/presenations/www/moons_ce_vanilla.png`` of
JuliaTrustworthyAI/CounterfactualTraining.jl (commit d4d4944d, Dec 2024; its Manifest: Julia 1.11.2). CTExperiments'
``plot_ce(data::Dataset, …)`` of that commit draws ``Plots.plot(get_ce_data(Moons(), 200))``, i.e. all points of
``load_moons(200)`` = ``MLJBase.make_moons(200; rng=Xoshiro(42))``, blue class 0, orange class 1. The values below
were measured in its first panel (1349×1349 px): the grey gridlines x = −1, 0, 1, 2 at columns 176, 319, 462, 605
and y = 1, 0.5, 0, −0.5 at rows 166, 273, 381, 488; and the centroid of every marker that stands alone (a single
connected patch of its fill colour, 200–240 px), 17 of them. The replay puts a point of the right class within 1.7
px (0.012 in x, 0.008 in y) of each, numpy's stream or Xoshiro(43) miss them by 10–13 px in the median, so every
draw up to the last row's noise is Julia's (a one-draw slip moves points by the noise σ = 0.1 ≈ 20 px). Drawing the
replayed 200 points as discs of radius 10 px covers every blue and orange pixel of the panel. n = 200 takes the same
paths as the paper's n = 100 000 (SIMD bulk fills, both sizes multiples of 8; ``randn`` rejections; ``randperm``).

Nothing Julia printed shows Circles' points; its replay uses the same draws (only 2π and ``factor`` differ), so it
is checked here for structure only.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ctbench.data import load_dataset
from ctbench.data.julia_rng import julia_make_circles, julia_make_moons, julia_randperm
from ctbench.data.synthetic import make_moons

#: (class, column, row) of the lone markers' fill centroids in the first panel of moons_ce_vanilla.png.
MOONS_PNG_MARKERS = [
    (0, 328.24, 171.80), (0, 421.10, 214.54), (0, 443.55, 224.90), (0, 226.38, 228.89), (0, 183.25, 229.81),
    (0, 188.47, 294.42), (0, 476.50, 293.93), (0, 159.35, 372.30),
    (1, 315.70, 336.70), (1, 304.27, 349.93), (1, 571.15, 401.03), (1, 339.66, 432.60), (1, 620.64, 450.54),
    (1, 576.80, 470.73), (1, 359.22, 485.11), (1, 436.57, 496.17), (1, 392.72, 531.91),
]


def _to_png(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Data → pixel map of the panel, from its gridlines (143 px per x unit; 322 px per 1.5 y units)."""
    return 319.0 + 143.0 * X[:, 0], 381.0 - (488.0 - 166.0) / 1.5 * X[:, 1]


def _marker_misses(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    cx, cy = _to_png(X)
    return np.array([np.hypot(cx[y == c] - px, cy[y == c] - py).min() for c, px, py in MOONS_PNG_MARKERS])


def test_moons_replay_matches_the_authors_plot():
    X, y = julia_make_moons(200, seed=42)
    assert np.bincount(y).tolist() == [100, 100]
    assert _marker_misses(X, y).max() < 2.0


@pytest.mark.parametrize("points", ["numpy", "seed 43"])
def test_the_plot_check_rejects_other_streams(points):
    """The check can fail: numpy's stream and another Xoshiro seed miss the markers by many pixels."""
    if points == "numpy":
        X, y = make_moons(np.random.default_rng(42), 200, noise=0.1, xshift=1.0, yshift=0.3)
    else:
        X, y = julia_make_moons(200, seed=43)
    assert _marker_misses(X, y).max() > 10.0


def test_moons_layout_without_noise():
    """noise = 0 skips ``randn``: class 0 on the upper unit half circle, class 1 on the lower one shifted by
    (xshift, yshift). MLJBase labels rows ``1:n÷2`` 0 but shifts rows ``n − n÷2 + 1:n``, so for odd n one class-1
    row stays on the upper, unshifted moon."""
    X, y = julia_make_moons(101, noise=0.0, xshift=1.0, yshift=0.3, seed=7)
    assert np.bincount(y).tolist() == [50, 51]
    r0 = np.hypot(X[y == 0, 0], X[y == 0, 1])
    r1 = np.hypot(X[y == 1, 0] - 1.0, X[y == 1, 1] - 0.3)
    np.testing.assert_allclose(r0, 1.0, atol=1e-12)
    assert (X[y == 0, 1] >= 0).all()
    on_lower = np.isclose(r1, 1.0, atol=1e-12) & (X[y == 1, 1] <= 0.3)
    assert on_lower.sum() == 50
    stray = X[y == 1][~on_lower]
    assert len(stray) == 1 and math.hypot(*stray[0]) == pytest.approx(1.0, abs=1e-12) and stray[0, 1] >= 0


def test_circles_structure_and_shared_draws():
    """Circles draws what Moons draws (same stream lengths), so the same seed gives the same row order."""
    Xc, yc = julia_make_circles(2000, noise=0.0, factor=0.5, seed=42)
    np.testing.assert_allclose(np.hypot(*Xc[yc == 0].T), 0.5, atol=1e-12)
    np.testing.assert_allclose(np.hypot(*Xc[yc == 1].T), 1.0, atol=1e-12)
    _, ym = julia_make_moons(200, seed=42)
    _, yc = julia_make_circles(200, seed=42)
    assert (ym == yc).all()
    X, y = julia_make_circles(200, seed=42)
    assert np.hypot(*X[y == 0].T).max() < 0.15 * 5 and np.hypot(*X[y == 1].T).mean() == pytest.approx(1, abs=0.05)


@pytest.mark.parametrize("name", ["moons", "circles"])
def test_points_julia_builds_the_reference_rows(name):
    """Rows by ``randperm(Xoshiro(2025), 100000)``: first 3 600 train+val, last 900 test; the meta says so."""
    ds = load_dataset(name, points="julia")
    gen = julia_make_moons if name == "moons" else julia_make_circles
    X, y = gen(100_000, seed=42)
    perm = julia_randperm(2025, 100_000)
    np.testing.assert_array_equal(ds.X_test, X[perm[-900:]].astype(np.float32))
    np.testing.assert_array_equal(ds.y_test, y[perm[-900:]])
    tv = {tuple(r) for r in X[perm[:3600]].astype(np.float32).tolist()}
    assert len(ds.y_train) + len(ds.y_val) == 3600
    assert all(tuple(r) in tv for r in np.vstack([ds.X_train, ds.X_val]).tolist())
    assert ds.meta["points"] == "julia" and "Xoshiro(42)" in ds.meta["rng"]


def test_points_default_is_julias_and_numpy_by_name():
    """The default is the reference's own points (what the published numbers were made on); numpy's stream, the
    result sets' until 2026-11-27, is asked for by name; the meta records which ran."""
    for name in ("moons", "circles"):
        ds, julia = load_dataset(name), load_dataset(name, points="julia")
        np.testing.assert_array_equal(ds.X_train, julia.X_train)
        assert ds.meta == julia.meta and ds.meta["points"] == "julia"
    ds = load_dataset("moons", points="numpy")
    X, _ = make_moons(np.random.default_rng(42), 100_000, noise=0.1, xshift=1.0, yshift=0.3)
    perm = np.random.default_rng(2025).permutation(100_000)
    np.testing.assert_array_equal(ds.X_test, X[perm[-900:]].astype(np.float32))
    assert ds.meta["points"] == "numpy" and "rng" not in ds.meta


def test_points_bad_values_are_refused():
    with pytest.raises(ValueError, match="points must be one of"):
        load_dataset("moons", points="julai")
    with pytest.raises(ValueError, match="unknown parameter"):
        load_dataset("lin_sep", points="julia")
    with pytest.raises(ValueError, match="seed"):
        julia_make_moons(10, seed=-1)
    with pytest.raises(ValueError, match="factor"):
        julia_make_circles(10, factor=1.0)
    assert math.isfinite(julia_make_moons(3)[0].sum())
