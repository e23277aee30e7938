"""Synthetic datasets of the paper (reference §6.1): LS, OL, Circ, Moon and 10-D Gaussian blobs.

Pipeline as in TaijaData/CTExperiments: draw ``n_draws`` points from the generator with
``np.random.default_rng(seed)``, permute them with ``np.random.default_rng(shuffle_seed)``, keep the first
``n_train + n_val`` rows for training/validation and the *last* ``n_test`` rows for testing, then split
train/validation per class with ``floor`` (:func:`stratified_val_split`). Julia's RNG streams cannot be
replayed in numpy, so individual points differ from the reference's; generators, sizes and split rules match.

The validation split draws from ``np.random.default_rng([seed, 1])``: deterministic in ``seed`` and
independent of the generator stream ``default_rng(seed)`` (the reference used Julia's global RNG here).

One draw of the reference *can* be replayed: the two blob centres of LS and OL. TaijaData's ``load_blobs`` calls
``MLJBase.make_blobs(n, 2; centers=2, rng=Xoshiro(42))``, whose first four draws are the centres
(:func:`julia_blob_centers`); the fidelity switch ``blob_centers`` picks them (``reference``) or the symmetric centres
calibrated to the paper's accuracies (``calibrated``).

The reference's individual LS/OL points are replayed too: the loader parameter ``blob_points = "julia"`` rebuilds
them from Julia's own streams (:mod:`ctbench.data.julia_rng`: ``make_blobs`` with ``Xoshiro(seed)``, rows picked by
``randperm(Xoshiro(shuffle_seed), n_draws)``): the reference's rows and points up to Float32 rounding (checked
against the authors' own plot of them); only the validation split (Julia's global RNG) stays ours. It is the default
wherever the reference centres are (``blob_centers = "reference"``, no given ``centers``), as the published numbers
were made on these points; ``"numpy"`` (the stream above) is the default otherwise and can be asked for by name.

Moons and Circles are replayed the same way, the loader parameter ``points`` (default ``"julia"``: TaijaData
``load_moons`` / ``load_circles`` → MLJBase ``make_moons`` / ``make_circles`` with ``Xoshiro(seed)``, the same row
choice; Moons checked against the authors' own plot of 200 Moons points, Circles by structure only, as nothing Julia
printed shows its points: see :mod:`ctbench.data.julia_rng`); ``"numpy"`` asks for the stream above by name. The
dataset meta records ``points`` (and ``rng`` when ``"julia"`` ran).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..fidelity import Fidelity, resolve_fidelity
from .base import Dataset, stratified_val_split
from .julia_rng import julia_make_blobs, julia_make_circles, julia_make_moons, julia_randperm
from .registry import register

#: Second entropy word of the validation-split RNG ``default_rng([seed, VAL_SPLIT_STREAM])``.
VAL_SPLIT_STREAM = 1

#: Values of the LS/OL loader parameter ``blob_points``: ``julia`` (the reference's own points, replayed from Julia
#: 1.11's streams by :mod:`ctbench.data.julia_rng`; the default with the reference centres) or ``numpy`` (numpy's
#: streams around the chosen centres; the default with calibrated or given centres).
BLOB_POINTS = ("numpy", "julia")

#: Values of the Moons/Circles loader parameter ``points``: ``julia`` (the default: the reference's own points,
#: MLJBase's ``make_moons``/``make_circles`` with ``Xoshiro(seed)`` replayed by :mod:`ctbench.data.julia_rng`) or
#: ``numpy`` (numpy's streams, the result sets' until 2026-11-27).
CURVE_POINTS = ("numpy", "julia")

#: Blob centres (class 0, class 1) calibrated to the paper's accuracies (reference §6.1, "Note on the blob
#: centres"): the fidelity switch ``blob_centers = "calibrated"``. Distance d = 4√2 ≈ 5.66 gives Bayes accuracy
#: Φ(d/2σ) = Φ(√2) ≈ 0.921 for OL (σ=2, paper: 0.91–0.92) and Φ(5.66) ≈ 1 − 8e-9 for LS (σ=0.5, paper: 1.0).
#: gauss10 (never reported) uses the same ±2 offset in all 10 coordinates: d ≈ 12.6 ≈ 25σ.
BLOB_CENTERS_2D = [[-2.0, -2.0], [2.0, 2.0]]
BLOB_CENTERS_10D = [[-2.0] * 10, [2.0] * 10]


def julia_blob_centers(seed: int = 42, n_centers: int = 2, p: int = 2,
                       box: tuple[float, float] = (-10.0, 10.0)) -> list[list[float]]:
    """The centres ``MLJBase.make_blobs(n, p; centers=n_centers, rng=Xoshiro(seed))`` draws (MLJBase 0.21.14,
    Julia 1.11): ``(b − a) .* rand(rng, n_centers, p) .+ a``, the first draws of the fresh RNG.

    Julia's ``Xoshiro(seed)`` is Xoshiro256++ seeded with the SHA-256 digest of the seed's little-endian 32-bit
    words; ``rand(rng, n_centers, p)`` fills the matrix in column-major order, one ``UInt64`` per entry, as
    ``(u >>> 11)·2⁻⁵³`` (Julia 1.11's small fill; checked against its Xoshiro doctest in tests/test_julia_rng.py).
    Only arrays under 64 bytes (fewer than 8 entries) are filled one draw after the other; larger ones take Julia's
    SIMD bulk path with interleaved streams, which this function does not replay, so it refuses them.

    For TaijaData's LS and OL (``load_blobs(n; seed=42, centers=2)``, shared by both) this gives
    ``[[2.5869, -0.4519], [-0.9932, 4.0626]]``: distance 5.76, so OL's Bayes accuracy Φ(5.76/4) ≈ 0.925 — the
    paper's 0.91–0.92 — and class 1 up and to the left of class 0, as in the paper's Figure 1.
    """
    import hashlib
    import struct

    if n_centers * p >= 8:
        raise ValueError(f"julia_blob_centers: {n_centers}×{p} centres take Julia's SIMD bulk fill (8 or more "
                         "Float64 draws), which is not replayed here")
    mask = (1 << 64) - 1

    def rotl(x: int, k: int) -> int:
        return ((x << k) | (x >> (64 - k))) & mask

    words, rest = [], int(seed)
    if rest < 0:
        raise ValueError("julia_blob_centers: a negative seed is hashed differently by Julia; not supported")
    while True:
        words.append(rest & 0xFFFFFFFF)
        rest >>= 32
        if rest == 0:
            break
    digest = hashlib.sha256(b"".join(struct.pack("<I", w) for w in words)).digest()
    s0, s1, s2, s3 = struct.unpack("<4Q", digest)
    draws = []
    for _ in range(n_centers * p):
        draws.append(((rotl((s0 + s3) & mask, 23) + s0) & mask) >> 11)
        t = (s1 << 17) & mask
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
    a, b = float(box[0]), float(box[1])
    # Column-major: entry (i, j) is draw j·n_centers + i. (Up to 2026-11-27 the conversion was (u >>> 12)·2⁻⁵², which
    # differs from Julia's in the last bit, ≤ 4·10⁻¹⁵; the committed results before then were made with it.)
    u = [d * 2.0 ** -53 for d in draws]
    return [[(b - a) * u[j * n_centers + i] + a for j in range(p)] for i in range(n_centers)]


#: The reference's LS/OL centres (fidelity switch ``blob_centers = "reference"``), see :func:`julia_blob_centers`.
BLOB_CENTERS_REFERENCE = julia_blob_centers(42)


# -- generators (MLJBase ``make_*``, vectorised; rows come out class-ordered, the pipeline shuffles) --------

def make_blobs(rng: np.random.Generator, n: int, *, centers: Any, cluster_std: float):
    """MLJBase ``make_blobs`` with two given centres: the first ``n // 2`` rows are class 0, the rest 1."""
    try:
        c = np.asarray(centers, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"centers: expected a finite 2×D list of numbers (one row per class), got {centers!r}; "
                         "leave it out to use the fidelity switch blob_centers") from None
    if c.ndim != 2 or c.shape[0] != 2 or c.shape[1] < 1 or not np.all(np.isfinite(c)):
        raise ValueError(f"centers: expected a finite 2×D list (one row per class), got shape {c.shape}")
    if not cluster_std > 0:
        raise ValueError(f"cluster_std must be > 0, got {cluster_std}")
    y = np.zeros(n, dtype=np.int64)
    y[n // 2:] = 1
    X = rng.standard_normal((n, c.shape[1])) * cluster_std + c[y]
    return X, y


def make_circles(rng: np.random.Generator, n: int, *, noise: float, factor: float):
    """MLJBase ``make_circles``: θ ~ U(0, 2π); the first ``n // 2`` rows (class 0) on radius ``factor``, the
    rest (class 1) on the unit circle; plus N(0, noise²) on both coordinates."""
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    if not 0 < factor < 1:
        raise ValueError(f"factor must lie strictly between 0 and 1, got {factor}")
    theta = rng.uniform(0.0, 2 * np.pi, n)
    X = np.column_stack([np.cos(theta), np.sin(theta)])
    n0 = n // 2
    X[:n0] *= factor
    y = np.ones(n, dtype=np.int64)
    y[:n0] = 0
    if noise:
        X += noise * rng.standard_normal((n, 2))
    return X, y


def make_moons(rng: np.random.Generator, n: int, *, noise: float, xshift: float, yshift: float):
    """MLJBase ``make_moons``: θ ~ U(0, π); class 0 = (cos θ, sin θ), class 1 = (cos θ + xshift,
    −sin θ + yshift); plus N(0, noise²). As in MLJBase the shift starts at row ``n − n // 2``, so for odd
    ``n`` one class-1 row lies on the upper moon (the default even ``n_draws`` avoids it). The registry's
    parameters are MLJBase's defaults, checked in the source tagged v0.21.14 (the version the reference ran):
    ``noise = 0.1``, ``xshift = 1.0``, ``yshift = 0.3``."""
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    n2 = n - n // 2
    theta = rng.uniform(0.0, np.pi, n)
    theta[n2:] *= -1
    X = np.column_stack([np.cos(theta), np.sin(theta)])
    X[n2:, 0] += xshift
    X[n2:, 1] += yshift
    y = np.ones(n, dtype=np.int64)
    y[: n // 2] = 0
    if noise:
        X += noise * rng.standard_normal((n, 2))
    return X, y


#: Moons/Circles generators with a Julia replay (loader parameter ``points = "julia"``).
_JULIA_CURVES = {make_moons: julia_make_moons, make_circles: julia_make_circles}


# -- the shared pipeline -----------------------------------------------------------------------------------

def default_n_test(n_train: int, n_val: int, fidelity: Fidelity) -> int:
    """Reference: ``ntotal − (n_train + n_val)`` with ``ntotal = round((n_train + n_val) / 0.8f0)`` (Float32,
    round-half-even as Julia) → 900. Paper mode: the table's "No. Test" ``(1 − 0.8)·n_train`` → 600 (§8.3)."""
    if fidelity.test_sizes == "paper":
        return int(round((1 - 0.8) * n_train))
    n_tv = n_train + n_val
    return int(np.rint(np.float32(n_tv) / np.float32(0.8))) - n_tv


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _build(name: str, generator: Callable, defaults: dict[str, Any], params: dict[str, Any], *,
           fidelity: Any, seed: int, shuffle_seed: int, n_draws: int, n_train: int, n_val: int,
           n_test: int | None) -> Dataset:
    replayable = generator is make_blobs and defaults.get("centers", "") is None  # LS and OL
    curve = generator in _JULIA_CURVES  # Moons and Circles: Julia's replay by default, parameter ``points``
    params = dict(params)
    blob_points = params.pop("blob_points", None) if replayable else "numpy"
    points = params.pop("points", "julia") if curve else "numpy"
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        extra = ["blob_points"] if replayable else ["points"] if curve else []
        known = sorted([*defaults, *extra])
        raise ValueError(f"dataset {name!r}: unknown parameter(s) {unknown}; known: {known}")
    if points not in CURVE_POINTS:
        raise ValueError(f"dataset {name!r}: points must be one of {list(CURVE_POINTS)}, got {points!r}")
    fid = resolve_fidelity(fidelity)
    if blob_points is None:  # the reference's points wherever its centres are (module docstring)
        blob_points = "julia" if fid.blob_centers == "reference" and "centers" not in params else "numpy"
    if blob_points not in BLOB_POINTS:
        raise ValueError(f"dataset {name!r}: blob_points must be one of {list(BLOB_POINTS)}, got {blob_points!r}")
    julia = blob_points == "julia"
    if julia and ("centers" in params or fid.blob_centers != "reference"):
        raise ValueError(f"dataset {name!r}: blob_points='julia' replays the reference's whole stream, centres "
                         "included; it cannot be combined with given centers or blob_centers="
                         f"{fid.blob_centers!r} (use blob_centers='reference')")
    gen_params = {**defaults, **params}
    if gen_params.get("centers", "") is None:  # LS and OL: the centres the fidelity switch picks
        gen_params["centers"] = BLOB_CENTERS_REFERENCE if fid.blob_centers == "reference" else BLOB_CENTERS_2D
    for key, value in gen_params.items():
        if key != "centers":
            try:
                gen_params[key] = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"dataset {name!r}: {key} must be a number, got {value!r}") from None

    n_train = _check_int("n_train", n_train, 1)
    n_val = _check_int("n_val", n_val, 0)
    n_test = default_n_test(n_train, n_val, fid) if n_test is None else _check_int("n_test", n_test, 1)
    n_draws = _check_int("n_draws", n_draws, 2)
    n_tv = n_train + n_val
    if n_tv + n_test > n_draws:
        raise ValueError(
            f"dataset {name!r}: n_train + n_val + n_test = {n_tv + n_test} exceeds n_draws = {n_draws}; "
            "train/val and test rows would overlap"
        )

    curve_julia = points == "julia"
    if julia or curve_julia:
        for key, value in (("seed", seed), ("shuffle_seed", shuffle_seed)):
            _check_int(key, value, 0)
    if julia:  # the reference's points: Julia's make_blobs with Xoshiro(seed), rows by randperm(Xoshiro(shuffle_seed))
        X, y, gen_params["centers"] = julia_make_blobs(n_draws, 2, centers=2, cluster_std=gen_params["cluster_std"],
                                                       seed=int(seed))
        y = y - 1  # Julia's labels 1, 2 → classes 0, 1 (CE.jl one-hot encodes the sorted levels)
        perm = julia_randperm(int(shuffle_seed), n_draws)
    elif curve_julia:  # TaijaData load_moons/load_circles: Xoshiro(seed) itself; labels 0/1 as Julia's
        X, y = _JULIA_CURVES[generator](n_draws, **gen_params, seed=int(seed))
        perm = julia_randperm(int(shuffle_seed), n_draws)
    else:
        X, y = generator(np.random.default_rng(seed), n_draws, **gen_params)
        perm = np.random.default_rng(shuffle_seed).permutation(n_draws)
    tv, te = perm[:n_tv], perm[n_draws - n_test:]
    X_tv, y_tv = X[tv].astype(np.float32), y[tv]
    tr, va = stratified_val_split(y_tv, n_val, np.random.default_rng([seed, VAL_SPLIT_STREAM]))
    X_train, X_val = X_tv[tr], X_tv[va]

    meta = {
        "generator": generator.__name__,
        "params": {k: np.asarray(v, dtype=np.float64).tolist() for k, v in gen_params.items()},
        "seed": seed, "shuffle_seed": shuffle_seed,
        "val_split_rng": f"default_rng([{seed}, {VAL_SPLIT_STREAM}])",
        "n_draws": n_draws, "n_train": len(tr), "n_val": len(va), "n_val_requested": n_val,
        "n_test": n_test,
        "fidelity": fid.mode, "domain_n_sigma": fid.domain_n_sigma, "test_sizes": fid.test_sizes,
        "standardised": False, "source": "reference §6.1",
    }
    if generator is make_blobs:
        if defaults.get("centers", "") is None:
            meta["blob_centers"] = "given" if "centers" in params else fid.blob_centers
        if replayable:
            meta["blob_points"] = blob_points
        if julia:
            meta["rng"] = (f"Julia 1.11 MLJBase.make_blobs(rng=Xoshiro({seed})), "
                           f"randperm(Xoshiro({shuffle_seed}), {n_draws}) (ctbench.data.julia_rng)")
        c = np.asarray(gen_params["centers"], dtype=np.float64)
        d = float(np.linalg.norm(c[1] - c[0]))
        meta["bayes_accuracy"] = 0.5 * (1 + math.erf(d / (2 * gen_params["cluster_std"]) / math.sqrt(2)))

    if curve:
        meta["points"] = points
    if curve_julia:
        meta["rng"] = (f"Julia 1.11 MLJBase.{generator.__name__}(rng=Xoshiro({seed})), "
                       f"randperm(Xoshiro({shuffle_seed}), {n_draws}) (ctbench.data.julia_rng)")

    # torch (through constraints) only once a dataset is built: reading the registry (the report's labels) loads none
    from ..constraints import infer_domain

    return Dataset(
        name=name,
        X_train=X_train, y_train=y_tv[tr],
        X_val=X_val, y_val=y_tv[va],
        X_test=X[te].astype(np.float32), y_test=y[te],
        feature_names=[f"x{i + 1}" for i in range(X.shape[1])],
        n_classes=2,
        domain=infer_domain(np.vstack([X_train, X_val]), n_sigma=fid.domain_n_sigma),
        protected=[0],
        categorical_groups=[],
        meta=meta,
    )


def _loader(name: str, generator: Callable, defaults: dict[str, Any]) -> Callable[..., Dataset]:
    """Make a registry loader ``loader(*, fidelity, seed, shuffle_seed, n_draws, n_train, n_val, n_test,
    **params)`` where ``params`` override the generator defaults (unknown names raise ValueError)."""

    def loader(*, fidelity: Any = "reference", seed: int = 42, shuffle_seed: int = 2025,
               n_draws: int = 100_000, n_train: int = 3000, n_val: int = 600, n_test: int | None = None,
               **params: Any) -> Dataset:
        return _build(name, generator, defaults, params, fidelity=fidelity, seed=seed,
                      shuffle_seed=shuffle_seed, n_draws=n_draws, n_train=n_train, n_val=n_val, n_test=n_test)

    loader.__name__ = f"load_{name}"
    loader.__doc__ = f"Load synthetic dataset {name!r} (reference §6.1); generator defaults {defaults}."
    return loader


#: name, aliases, description, generator, generator defaults (reference §6.1)
SYNTHETIC = [
    ("lin_sep", ("LS",), "linearly separable 2-D Gaussian blobs, σ=0.5",
     make_blobs, {"centers": None, "cluster_std": 0.5}),  # centres: fidelity switch blob_centers
    ("over", ("OL",), "overlapping 2-D Gaussian blobs, σ=2.0 (Bayes accuracy ≈ 0.92)",
     make_blobs, {"centers": None, "cluster_std": 2.0}),
    ("circles", ("Circ",), "blob at the origin inside the unit circle (make_circles)",
     make_circles, {"noise": 0.15, "factor": 0.01}),
    ("moons", ("Moon",), "two interleaved half circles (make_moons)",
     make_moons, {"noise": 0.1, "xshift": 1.0, "yshift": 0.3}),
    ("gauss10", ("gaussm",), "10-D two-class Gaussian blobs, σ=0.5 (not reported in the paper)",
     make_blobs, {"centers": BLOB_CENTERS_10D, "cluster_std": 0.5}),
]

for _name, _aliases, _description, _generator, _defaults in SYNTHETIC:
    register(_name, family="synthetic", description=_description, aliases=_aliases)(
        _loader(_name, _generator, _defaults))
