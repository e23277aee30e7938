"""Replay of Julia 1.11's random streams (ctbench.data.julia_rng) against values Julia itself printed, and the
``blob_points = "julia"`` option of the LS/OL loaders built on it.

Sources of the expected values (each printed by Julia; the jldoctests are run by Julia's CI):
* ``stdlib/Random/src/Xoshiro.jl``, ``Xoshiro`` docstring (the version with the "Julia 1.11" compat note):
  ``rand(Xoshiro(1234), 2)``.
* ``stdlib/UUIDs/src/UUIDs.jl``, ``uuid4`` docstring: ``uuid4(Xoshiro(123))`` (one ``rand(rng, UInt128)``).
* ``stdlib/Random/src/misc.jl`` docstrings: ``randperm``/``randperm!``/``shuffle``/``shuffle!``/``randcycle`` with
  ``Xoshiro(123)``.
* ``stdlib/Random/src/normal.jl``, ``randn`` docstring: ``randn(Xoshiro(123), Float32)`` then
  ``randn(rng, ComplexF32, (2, 3))``.
* The bulk path (``randn!`` of 7+ Float64 on a Xoshiro: SIMD fill + ``_randn``) and the ziggurat's rejection branch
  have no doctest; they are checked against the authors' own output: ``paper/figures/poc.svg`` of
  JuliaTrustworthyAI/CounterfactualTraining.jl (commit d81a36b1, made with Julia 1.11.3 from LS data:
  ``LinearlySeparable(n_train=500)``, i.e. the first 1 100 rows of ``randperm(Xoshiro(2025), 100000)`` over
  TaijaData's 100 000 points, all 1 100 reproduced; the scatter has no axes, so the map from data to SVG pixels is
  the per-axis affine fit of the matched points).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ctbench.data import load_dataset
from ctbench.data._julia_ziggurat import FI, KI, WI
from ctbench.data.julia_rng import Xoshiro, julia_make_blobs, julia_randperm
from ctbench.data.synthetic import BLOB_CENTERS_REFERENCE, julia_blob_centers
from ctbench.fidelity import resolve_fidelity


def test_ziggurat_tables_are_consistent():
    """A slip in copying normal.jl's tables breaks fi = exp(−x²/2) or ki = ⌊x_{i−1}/x_i·2⁵¹⌋ (x_i = wi[i]·2⁵¹)."""
    assert len(KI) == len(WI) == len(FI) == 256 and KI[1] == 0 and FI[0] == 1.0
    for i in range(1, 256):
        x = WI[i] * 2.0 ** 51
        assert FI[i] == pytest.approx(math.exp(-0.5 * x * x), rel=1e-13)
        if i >= 2:
            assert abs(KI[i] - WI[i - 1] / WI[i] * 2.0 ** 51) <= 4


def test_seeding_and_raw_stream_match_uuid4_doctest():
    """``uuid4(Xoshiro(123))`` = UUID("856e446e-0c6a-472a-9638-f7b8557cd282"): SHA-256 seeding + Xoshiro256++."""
    u = Xoshiro(123).rand_uint128()
    u = (u & 0xFFFFFFFFFFFF0FFF3FFFFFFFFFFFFFFF) | 0x00000000000040008000000000000000
    assert f"{u:032x}" == "856e446e0c6a472a9638f7b8557cd282"


def test_float64_draws_match_xoshiro_doctest():
    """``rand(Xoshiro(1234), 2)`` = [0.32597672886359486, 0.5490511363155669]: (u >>> 11)·2⁻⁵³, not (u >>> 12)·2⁻⁵²
    (the conversion ``julia_blob_centers`` keeps for the committed results gives …668 for the second)."""
    assert Xoshiro(1234).rand_array(2) == [0.32597672886359486, 0.5490511363155669]
    r = Xoshiro(1234)
    assert [r.rand(), r.rand()] == [0.32597672886359486, 0.5490511363155669]
    r = Xoshiro(1234)
    assert [(r.next_u64() >> 12) * 2.0 ** -52 for _ in range(2)][1] == 0.5490511363155668


def test_permutations_match_misc_doctests():
    assert Xoshiro(123).randperm(4).tolist() == [1, 4, 2, 3]
    assert Xoshiro(123).shuffle(range(1, 11)) == [5, 4, 2, 3, 6, 10, 8, 1, 9, 7]
    assert Xoshiro(123).randcycle(6) == [5, 4, 2, 6, 3, 1]
    assert julia_randperm(123, 4).tolist() == [0, 3, 1, 2]


def test_randn_matches_normal_doctest():
    """``randn(rng, Float32)`` = -0.6457307f0, then a 2×3 ``ComplexF32`` matrix (column-major, real part first,
    each part ``Float32(√½)·Float32(randn)``); printed with 6 significant digits."""
    r = Xoshiro(123)
    assert np.float32(r.randn()) == np.float32(-0.6457307)
    half = np.float32(math.sqrt(0.5))
    got = [(half * np.float32(r.randn()), half * np.float32(r.randn())) for _ in range(6)]
    want = [(-1.03467, -1.14806), (-0.153912, 0.34807), (0.693657, 0.056538), (1.0954, -0.948661),
            (0.291442, 0.419454), (-0.543347, -0.0538589)]
    for (re_, im_), (wr, wi) in zip(got, want, strict=True):
        assert float(re_) == pytest.approx(wr, rel=2e-5) and float(im_) == pytest.approx(wi, rel=2e-5)


def test_randn_small_and_bulk_paths_differ_from_seven_on():
    """Under 7 entries ``randn!`` draws scalars; from 7 on it bulk-fills (a different stream, as in Julia)."""
    assert Xoshiro(5).randn(6).tolist() == [Xoshiro(5).randn(6)[i] for i in range(6)]
    assert Xoshiro(5).randn(6)[0] == Xoshiro(5).randn()
    assert Xoshiro(5).randn(7)[0] != Xoshiro(5).randn()


#: (svg cx, cy, row among the first 1 100 of randperm(Xoshiro(2025), 100000)) of poc.svg's first panel: blue
#: (label 1) circles 1-4, orange (label 2) circles 1-3 and the last, in the figure's drawing order; then rows whose
#: normal needed a ziggurat rejection: wedge tests at entries 46 654, 133 583, 49 970, 27 076 of the 200 000 normals
#: (rows 546, 607, 1009, 1041) and the tail at entry 54 800 (row 770).
POC_SVG_POINTS = [(731.83, 650.925, 2), (784.173, 714.987, 3), (785.326, 734.023, 5), (703.206, 716.937, 7),
                  (465.382, 268.522, 101), (438.719, 306.829, 103), (339.129, 274.477, 104),
                  (330.853, 235.289, 1099),
                  (768.014, 736.618, 546), (881.308, 711.684, 607), (790.699, 768.984, 1009), (762.87, 718.405, 1041),
                  (241.186, 394.837, 770)]
#: Per-axis affine map data → SVG pixels, fitted to the matched points (all 1 100; residual ≤ 0.0008 px).
POC_SVG_MAP = (99.74703008750704, 533.595278568529, -92.37981073324201, 662.0423639264593)


def test_bulk_path_reproduces_the_authors_ls_points():
    """TaijaData's LS points (make_blobs with Xoshiro(42): 200 000 normals by the SIMD bulk path, then the row
    shuffle) and CTExperiments' row pick (randperm(Xoshiro(2025))) land on the authors' plotted points to the SVG's
    rounding (3 decimals), rejection draws included; one draw off anywhere before them would move them by pixels
    (with the tail's −log(u) of older normal.jl, instead of −log1p(−u), 17 of the 1 100 points move, row 770 first)."""
    X, y, _ = julia_make_blobs(100_000, 2, centers=2, cluster_std=0.5)
    rows = julia_randperm(2025, 100_000)[:1100]
    Xs, ys = X[rows].astype(np.float32).astype(np.float64), y[rows]
    assert np.bincount(ys).tolist() == [0, 557, 543]  # the figure's 557 blue and 543 orange circles
    ax, bx, ay, by = POC_SVG_MAP
    for cx, cy, j in POC_SVG_POINTS:
        assert abs(ax * Xs[j, 0] + bx - cx) < 0.002 and abs(ay * Xs[j, 1] + by - cy) < 0.002
        assert ys[j] == (1 if cx > 600 else 2)


def test_make_blobs_structure_and_centres():
    X, y, c = julia_make_blobs(100_000, 2, centers=2, cluster_std=0.5)
    assert X.shape == (100_000, 2) and np.bincount(y).tolist() == [0, 50_000, 50_000]
    # the centres are the first four draws with Julia's conversion; the committed reference ones differ in the last bit
    assert c.tolist() == [[20 * u - 10 for u in pair] for pair in
                          [Xoshiro(42).rand_array(4)[0::2], Xoshiro(42).rand_array(4)[1::2]]]
    assert np.abs(c - np.asarray(julia_blob_centers(42))).max() < 5e-15
    # OL shares the normals: same points up to σ (2.0 vs 0.5) around the same centres, but for the one row both
    # blobs transform (see test_make_blobs_shared_boundary_row)
    X2, y2, c2 = julia_make_blobs(100_000, 2, centers=2, cluster_std=2.0)
    assert (y2 == y).all() and (c2 == c).all()
    off = ~np.isclose((X2 - c[y2 - 1]) / 2.0, (X - c[y - 1]) / 0.5, rtol=0, atol=1e-9).all(axis=1)
    assert off.sum() == 1
    with pytest.raises(ValueError, match="cluster_std"):
        julia_make_blobs(10, cluster_std=0)
    with pytest.raises(ValueError, match="SIMD"):
        julia_make_blobs(10, 10)  # 2×10 centres: Julia's SIMD fill for Float64, not replayed


def test_make_blobs_shared_boundary_row():
    """MLJBase's row ranges ``nss[i]:nss[i+1]`` share row ``n/2`` (1-based): scaled and shifted by both blobs,
    label 1 — kept, as the reference has it."""
    n = 20
    X, y, c = julia_make_blobs(n, 2, centers=2, cluster_std=0.5, seed=7)
    r = Xoshiro(7)
    r.rand_array(4)
    z = r.randn(2 * n).reshape(2, n).T
    perm = r.randperm(n) - 1
    want = z.copy()
    want[: n // 2] = want[: n // 2] * 0.5 + c[0]
    want[n // 2 - 1:] = want[n // 2 - 1:] * 0.5 + c[1]
    np.testing.assert_array_equal(X, want[perm])
    assert y.tolist() == np.repeat([1, 2], n // 2)[perm].tolist()


@pytest.mark.parametrize("name,std", [("lin_sep", 0.5), ("over", 2.0)])
def test_blob_points_julia_builds_the_reference_splits(name, std):
    d = load_dataset(name, blob_points="julia")
    X, y, c = julia_make_blobs(100_000, 2, centers=2, cluster_std=std)
    perm = julia_randperm(2025, 100_000)
    tv, te = perm[:3600], perm[-900:]
    # 3 600 train+val rows and 900 test rows; CE.jl's per-class floor(share·600) leaves 599 for validation here
    # (Julia's rows are 1 801 / 1 799: ⌊1801/6⌋ + ⌊1799/6⌋ = 300 + 299), as the reference's own split would
    counts = np.bincount(y[tv] - 1, minlength=2)
    assert counts.tolist() == [1801, 1799]
    assert len(d.y_val) == sum(math.floor(600 / 3600 * k) for k in counts) == 599
    assert (len(d.y_train), len(d.y_test)) == (3001, 900) and d.meta["n_val_requested"] == 600
    np.testing.assert_array_equal(d.X_test, X[te].astype(np.float32))
    np.testing.assert_array_equal(d.y_test, y[te] - 1)
    both = np.vstack([d.X_train, d.X_val])  # the train+val rows, split by our stratified validation draw
    assert sorted(map(tuple, both.tolist())) == sorted(map(tuple, X[tv].astype(np.float32).tolist()))
    # class balance as Julia's rows give it (train+val together, then the stratified validation split)
    assert np.bincount(np.concatenate([d.y_train, d.y_val]), minlength=2).tolist() == \
        np.bincount(y[tv] - 1, minlength=2).tolist()
    assert d.meta["params"]["centers"] == c.tolist()
    assert np.allclose(d.meta["params"]["centers"], BLOB_CENTERS_REFERENCE, rtol=0, atol=5e-15)
    assert d.meta["blob_points"] == "julia" and d.meta["blob_centers"] == "reference"
    assert "Xoshiro(42)" in d.meta["rng"] and "Xoshiro(2025)" in d.meta["rng"]


def test_blob_points_default_is_the_reference_points_where_the_reference_centres_are():
    """The published numbers were made on Julia's points: they are the default with the reference centres; numpy's
    stream is the default with calibrated (the ``paper`` preset) or given centres, and can be asked for by name."""
    d = load_dataset("lin_sep")
    julia = load_dataset("lin_sep", blob_points="julia")
    np.testing.assert_array_equal(d.X_test, julia.X_test)
    assert d.meta == julia.meta and d.meta["blob_points"] == "julia"
    numpy = load_dataset("lin_sep", blob_points="numpy")
    assert numpy.meta["blob_points"] == "numpy" and "rng" not in numpy.meta
    assert not np.array_equal(d.X_test, numpy.X_test)
    cal = load_dataset("over", fidelity="paper")
    assert cal.meta["blob_centers"] == "calibrated" and cal.meta["blob_points"] == "numpy"
    given = load_dataset("lin_sep", centers=[[0.0, 0.0], [3.0, 3.0]])
    assert given.meta["blob_centers"] == "given" and given.meta["blob_points"] == "numpy"
    assert "blob_points" not in load_dataset("moons").meta


def test_blob_points_bad_values_are_refused():
    with pytest.raises(ValueError, match="blob_points must be one of"):
        load_dataset("lin_sep", blob_points="R")
    with pytest.raises(ValueError, match="blob_centers='reference'"):
        load_dataset("over", fidelity=resolve_fidelity("reference", {"blob_centers": "calibrated"}),
                     blob_points="julia")
    with pytest.raises(ValueError, match="given centers"):
        load_dataset("lin_sep", blob_points="julia", centers=[[0, 0], [1, 1]])
    for other in ("circles", "moons", "gauss10"):
        with pytest.raises(ValueError, match="unknown parameter"):
            load_dataset(other, blob_points="julia")
    with pytest.raises(ValueError, match="shuffle_seed must be an integer"):
        load_dataset("lin_sep", blob_points="julia", shuffle_seed=-1)
    with pytest.raises(ValueError, match="seed must be an integer"):
        Xoshiro(-1)
