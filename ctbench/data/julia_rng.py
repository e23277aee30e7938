"""Replay of the Julia 1.11 random streams behind the reference's LS and OL data, to rebuild their points.

The reference's data come from TaijaData ``load_blobs`` → ``MLJBase.make_blobs(n, 2; centers=2, cluster_std,
rng=Xoshiro(42))`` (MLJBase 0.21.14, Julia 1.11.5), then ``randperm(Xoshiro(2025), n)`` picks the rows
(:func:`julia_make_blobs`, :func:`julia_randperm`). What each step draws, as Julia's ``stdlib/Random`` does it:

* ``Xoshiro(seed)``: Xoshiro256++ whose state is the SHA-256 digest of the seed's little-endian 32-bit words
  (``RNGs.jl``/``Xoshiro.jl`` ``seed!``); one step = one ``UInt64`` (``rand(::Xoshiro, ::SamplerType{UInt64})``).
* ``rand(rng)``: ``(u >>> 11)·2⁻⁵³``; ``Float64`` arrays under 64 bytes come from ``XoshiroSimd.xoshiro_bulk_nosimd``,
  one step per entry with the same conversion (``_bits2float``).
* ``randn(rng)``: the ziggurat of ``normal.jl``: ``r = rand(rng, UInt52Raw())`` is ``u >>> 12`` for Xoshiro (its
  *upper* 52 bits), sign = lowest bit of ``r``, ``rabs = r >> 1``, layer ``rabs & 0xFF``, ``x = ±rabs·wi[layer]``;
  accept if ``rabs < ki[layer]``, else ``randn_unlikely``: the wedge test with one ``rand()`` (else a fresh
  ``randn``), or in layer 0 the tail beyond ``ziggurat_nor_r``, two uniforms per try entering as ``−log1p(−u)``.
  (The ``normal.jl`` versions read here write ``−log(rand(rng))``; the Julia that made the reference's data used
  ``1 − u``, which only the authors' figure below decides: with ``−log(u)`` 17 of its 1 100 points move. Whether
  that Julia wrote ``log1p(−u)`` or ``log(1 − u)`` changes at most the last bit.)
* ``randn(rng, n, p)`` → ``randn!`` on a ``Matrix{Float64}``: under 7 entries scalar draws; from 7 on
  ``rand!(rng, UnsafeView{UInt64})`` first (for 64 bytes or more ``xoshiro_bulk_simd``: 8 lanes forked from the
  stream by ``forkRand``, stepping together, written interleaved), then ``_randn(rng, u >>> 12)`` per entry in
  column-major order, the rejections drawing from the parent stream.
* ``randperm(rng, n)`` / ``shuffle`` / ``randcycle``: ``misc.jl``'s Fisher–Yates variants; index ``j`` of step ``i``
  is ``1 + (u >>> 12) & mask``, redrawn while it exceeds ``i − 1`` (``ltm52``), ``mask = 3`` doubling after step
  ``mask + 1``.

Checked (``tests/test_julia_rng.py``) against values Julia printed: seeding and raw steps, ``rand``, ``randperm``,
``shuffle``, ``randcycle`` and scalar ``randn`` against the stdlib's doctests; the bulk ``randn!`` path, the
rejection branch and the whole LS pipeline against the authors' own figure of LS points
(``paper/figures/poc.svg`` of CounterfactualTraining.jl, Julia 1.11.3): all 1 100 of its points coincide with this
replay to the SVG's rounding, the 36 whose normals needed a rejection included.

Moons and Circles (:func:`julia_make_moons`, :func:`julia_make_circles`): TaijaData ``load_moons`` /
``load_circles`` pass ``Xoshiro(seed)`` itself to MLJBase's ``make_moons`` / ``make_circles`` (v0.21.14), which draw
``θs = runif_ab(rng, n, 1, 0, π | 2π)`` (``rand!`` of a ``Float64`` array: the SIMD bulk fill with
``(u >>> 11)·2⁻⁵³``), then ``randn(rng, n, 2)`` for the noise and ``randperm(rng, n)``. Checked against the
authors' plot of ``load_moons(200)`` (``paper/presenations/www/moons_ce_vanilla.png``, Julia 1.11.2;
``tests/test_julia_moons.py``): every lone marker within 1.7 px of a replayed point of its class. Circles share the
draws but have no plot to check them against. ``cos``/``sin`` are the C library's here and Julia's own there (both
under one ulp): a last-bit difference is possible, invisible after the Float32 cast but in rare ties.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ._julia_ziggurat import FI, KI, WI, ZIGGURAT_NOR_INV_R, ZIGGURAT_NOR_R

_M64 = (1 << 64) - 1
_TWO_M53 = 2.0 ** -53


class Xoshiro:
    """Julia's ``Xoshiro(seed)`` for a non-negative integer seed: the same ``UInt64`` stream and the draws built on
    it that the reference's data use (``rand``, ``randn``, ``randperm``, ``shuffle``, ``randcycle``)."""

    __slots__ = ("s0", "s1", "s2", "s3")

    def __init__(self, seed: int):
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"Xoshiro: seed must be an integer >= 0 (Julia hashes negative seeds differently), "
                             f"got {seed!r}")
        words, rest = [], int(seed)
        while True:  # RNGs.jl: the seed's 32-bit words, least significant first, hashed with SHA-256
            words.append(rest & 0xFFFFFFFF)
            rest >>= 32
            if rest == 0:
                break
        digest = hashlib.sha256(b"".join(struct.pack("<I", w) for w in words)).digest()
        self.s0, self.s1, self.s2, self.s3 = struct.unpack("<4Q", digest)

    def next_u64(self) -> int:
        """One Xoshiro256++ step: ``rand(rng, UInt64)``."""
        s0, s1, s2, s3 = self.s0, self.s1, self.s2, self.s3
        t = (s0 + s3) & _M64
        res = ((((t << 23) | (t >> 41)) & _M64) + s0) & _M64
        t = (s1 << 17) & _M64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        self.s0, self.s1, self.s2, self.s3 = s0, s1, s2, ((s3 << 45) | (s3 >> 19)) & _M64
        return res

    def rand_uint128(self) -> int:
        """``rand(rng, UInt128)``: the first step is the high word."""
        hi = self.next_u64()
        return (hi << 64) | self.next_u64()

    def rand(self) -> float:
        """Scalar ``rand(rng)`` (``Float64`` in [0, 1))."""
        return (self.next_u64() >> 11) * _TWO_M53

    def rand_array(self, n: int) -> list[float]:
        """``rand(rng, n)`` for ``n·8 < 64`` bytes (the non-SIMD bulk fill, one step per entry)."""
        if n * 8 >= 64:
            raise ValueError(f"rand_array: {n} Float64 entries take Julia's SIMD bulk fill (64 bytes or more), "
                             "which is not replayed")
        return [self.rand() for _ in range(n)]

    def randn(self, n: int | None = None):
        """``randn(rng)`` (``n`` None) or ``randn(rng, n)`` as a float64 array (``randn!`` on a ``Vector{Float64}``;
        a matrix ``randn(rng, a, b)`` is the same ``a·b`` values in column-major order).

        ``normal.jl`` fills Float64 arrays of a Xoshiro in two ways: under 7 entries one scalar ``randn`` after the
        other; from 7 entries on it first bulk-fills the array with raw ``UInt64`` (:meth:`rand_uint64_bulk`, the SIMD
        path for 8 or more) and then turns each into a normal with ``_randn(rng, u >>> 12)``, whose rare rejections
        (``randn_unlikely``) draw from the parent stream, in array order."""
        if n is None:
            return float(self._randn(1)[0])
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
            raise ValueError(f"randn: n must be an integer >= 0, got {n!r}")
        n = int(n)
        if n < 7:
            return self._randn(n)
        return self._randn_from_bits(self.rand_uint64_bulk(n))

    def rand_uint64_bulk(self, n: int) -> np.ndarray:
        """``rand!(rng, A)`` for ``n`` ``UInt64`` (``XoshiroSimd.xoshiro_bulk``): for 64 bytes or more, 8 lanes are
        forked from this stream (``forkRand``: 8 draws each for s0, s1, s2, s3, times fixed odd constants), step
        together and write interleaved (lane k → entries 8t + k); the remainder (under 64 bytes) comes from this stream
        itself (``xoshiro_bulk_nosimd``). The lanes are discarded afterwards."""
        out = np.empty(n, dtype=np.uint64)
        n_simd = (n // 8) * 8 if n * 8 >= 64 else 0
        if n_simd:
            mult = (0x02011CE34BCE797F, 0x5A94851FB48A6E05, 0x3688CF5D48899FA7, 0x867B4BB4C42E5661)
            draws = [[(m * self.next_u64()) & _M64 for _ in range(8)] for m in mult]  # s0 lanes, then s1, s2, s3
            for k in range(8):
                lane = Xoshiro.__new__(Xoshiro)
                lane.s0, lane.s1, lane.s2, lane.s3 = draws[0][k], draws[1][k], draws[2][k], draws[3][k]
                out[k:n_simd:8] = lane._u64_list(n_simd // 8)
        out[n_simd:] = self._u64_list(n - n_simd)
        return out

    def _u64_list(self, n: int) -> list[int]:
        s0, s1, s2, s3 = self.s0, self.s1, self.s2, self.s3
        res = [0] * n
        for k in range(n):
            t = (s0 + s3) & _M64
            res[k] = ((((t << 23) | (t >> 41)) & _M64) + s0) & _M64
            t = (s1 << 17) & _M64
            s2 ^= s0
            s3 ^= s1
            s1 ^= s2
            s0 ^= s3
            s2 ^= t
            s3 = ((s3 << 45) | (s3 >> 19)) & _M64
        self.s0, self.s1, self.s2, self.s3 = s0, s1, s2, s3
        return res

    def _randn_from_bits(self, bits: np.ndarray) -> np.ndarray:
        """``_randn(rng, u >>> 12)`` for every entry of ``bits``: the fast path vectorised, the rejections in
        array order with this stream (as ``randn_unlikely`` would draw them)."""
        r = bits >> np.uint64(12)
        rabs = (r >> np.uint64(1)).astype(np.int64)
        idx = rabs & 0xFF
        ki = np.asarray(KI, dtype=np.int64)
        out = np.where((r & np.uint64(1)).astype(bool), -rabs, rabs).astype(np.float64) * np.asarray(WI)[idx]
        for k in np.flatnonzero(rabs >= ki[idx]):
            out[k] = self._unlikely(int(idx[k]), int(rabs[k]), float(out[k]))
        return out

    def _unlikely(self, idx: int, rabs: int, x: float) -> float:
        """``randn_unlikely(rng, idx, rabs, x)``: the tail (layer 0) or the wedge test, else a fresh ``randn``."""
        if idx == 0:
            while True:
                xx = -ZIGGURAT_NOR_INV_R * math.log1p(-self.rand())
                yy = -math.log1p(-self.rand())
                if yy + yy > xx * xx:
                    return -ZIGGURAT_NOR_R - xx if (rabs >> 8) & 1 else ZIGGURAT_NOR_R + xx
        if (FI[idx - 1] - FI[idx]) * self.rand() + FI[idx] < math.exp(-0.5 * x * x):
            return x
        return float(self._randn(1)[0])

    def _randn(self, n: int) -> np.ndarray:
        out = np.empty(n, dtype=np.float64)
        ki, wi = KI, WI
        s0, s1, s2, s3 = self.s0, self.s1, self.s2, self.s3
        for k in range(n):
            # --- inlined next_u64 ---
            t = (s0 + s3) & _M64
            u = ((((t << 23) | (t >> 41)) & _M64) + s0) & _M64
            t = (s1 << 17) & _M64
            s2 ^= s0
            s3 ^= s1
            s1 ^= s2
            s0 ^= s3
            s2 ^= t
            s3 = ((s3 << 45) | (s3 >> 19)) & _M64
            # --- normal.jl `_randn` ---
            r = u >> 12  # rand(::Xoshiro, UInt52Raw()) = upper 52 bits; `r &= 0x000fffffffffffff` is a no-op
            rabs = r >> 1
            idx = rabs & 0xFF
            x = (-rabs if r & 1 else rabs) * wi[idx]
            if rabs >= ki[idx]:  # `randn_unlikely`: the state goes back to the object for its extra draws
                self.s0, self.s1, self.s2, self.s3 = s0, s1, s2, s3
                x = self._unlikely(idx, rabs, x)
                s0, s1, s2, s3 = self.s0, self.s1, self.s2, self.s3
            out[k] = x
        self.s0, self.s1, self.s2, self.s3 = s0, s1, s2, s3
        return out

    def _index(self, i: int, mask: int) -> int:
        """``1 + rand(rng, ltm52(i, mask))``: a uniform index in ``1:i`` by masking and rejection."""
        while True:
            v = (self.next_u64() >> 12) & mask
            if v <= i - 1:
                return v + 1

    def randperm(self, n: int) -> np.ndarray:
        """``randperm(rng, n)``: a permutation of ``1:n`` (1-based, int64), as ``misc.jl``'s ``randperm!``."""
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 0 <= n <= 2 ** 52:
            raise ValueError(f"randperm: n must be an integer in [0, 2^52], got {n!r}")
        n = int(n)
        a = [0] * n
        if n == 0:
            return np.asarray(a, dtype=np.int64)
        a[0] = 1
        mask = 3
        s0, s1, s2, s3 = self.s0, self.s1, self.s2, self.s3
        for i in range(2, n + 1):
            while True:  # inlined next_u64 + ltm52 rejection
                t = (s0 + s3) & _M64
                u = ((((t << 23) | (t >> 41)) & _M64) + s0) & _M64
                t = (s1 << 17) & _M64
                s2 ^= s0
                s3 ^= s1
                s1 ^= s2
                s0 ^= s3
                s2 ^= t
                s3 = ((s3 << 45) | (s3 >> 19)) & _M64
                v = (u >> 12) & mask
                if v <= i - 1:
                    break
            j = v + 1
            if i != j:
                a[i - 1] = a[j - 1]
            a[j - 1] = i
            if i == 1 + mask:
                mask = 2 * mask + 1
        self.s0, self.s1, self.s2, self.s3 = s0, s1, s2, s3
        return np.asarray(a, dtype=np.int64)

    def shuffle(self, values: Sequence) -> list:
        """``shuffle(rng, v)``: a permuted copy, as ``misc.jl``'s ``shuffle!`` (swap ``a[i]`` with ``a[j]``)."""
        a = list(values)
        mask = 3
        for i in range(2, len(a) + 1):
            j = self._index(i, mask)
            a[i - 1], a[j - 1] = a[j - 1], a[i - 1]
            if i == 1 + mask:
                mask = 2 * mask + 1
        return a

    def randcycle(self, n: int) -> list[int]:
        """``randcycle(rng, n)``: a cyclic permutation of ``1:n`` (Sattolo's algorithm, ``ltm52(i − 1, mask)``)."""
        a = [0] * n
        if n == 0:
            return a
        a[0] = 1
        mask = 3
        for i in range(2, n + 1):
            j = self._index(i - 1, mask)
            a[i - 1] = a[j - 1]
            a[j - 1] = i
            if i == 1 + mask:
                mask = 2 * mask + 1
        return a


def julia_randperm(seed: int, n: int) -> np.ndarray:
    """``randperm(Xoshiro(seed), n)`` as 0-based row indices (CTExperiments' ``get_data`` shuffle, seed 2025)."""
    return Xoshiro(seed).randperm(n) - 1


@lru_cache(maxsize=4)
def _blob_draws(seed: int, n: int, p: int, n_centers: int, box: tuple[float, float]):
    """The draws of ``make_blobs`` in order: centre uniforms, standard normals (n×p, column-major), row permutation.
    Cached because LS and OL share them (same seed, only ``cluster_std`` differs)."""
    rng = Xoshiro(seed)
    a, b = box
    u = rng.rand_array(n_centers * p)  # `rand(rng, n_centers, p)`, column-major
    centers = np.array([[(b - a) * u[j * n_centers + i] + a for j in range(p)] for i in range(n_centers)])
    z = rng.randn(n * p).reshape(p, n).T  # `randn(rng, n, p)`: column j holds draws j·n … (j+1)·n − 1
    perm = rng.randperm(n) - 1  # finalize_Xy → shuffle_rows → `randperm(rng, n)`, same rng
    for arr in (centers, z, perm):
        arr.setflags(write=False)
    return centers, z, perm


def julia_make_blobs(n: int, p: int = 2, *, centers: int = 2, cluster_std: float = 1.0, seed: int = 42,
                     center_box: tuple[float, float] = (-10.0, 10.0)):
    """``MLJBase.make_blobs(n, p; centers, cluster_std, rng=Xoshiro(seed))`` of MLJBase 0.21.14 with its defaults
    (``shuffle=true``, ``eltype=Float64``), returned as TaijaData's ``load_blobs`` sees it: ``X`` (n×p float64, rows =
    points) and ``y`` (int64, classes ``1..centers`` as Julia numbers them), plus the drawn centres (centers×p).

    Reproduced exactly, including two quirks of ``datasets_synthetic.jl``: the row ranges of consecutive blobs share
    their boundary row (``rows = [nss[i]:nss[i+1]]`` with ``nss = [1, cumsum(ns)...]``), so row ``ns[1]`` (1-based) is
    scaled and shifted once per blob it belongs to while keeping label 1; and the rows are shuffled with the same
    ``rng`` after the normals were drawn. ``cluster_std`` scales (``Xc .*= σ``) before the centre is added
    (``Xc .+= c``), two roundings as in Julia."""
    for name, value, low in (("n", n, 1), ("p", p, 1), ("centers", centers, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"julia_make_blobs: {name} must be an integer >= {low}, got {value!r}")
    if not (isinstance(cluster_std, int | float) and cluster_std > 0 and math.isfinite(cluster_std)):
        raise ValueError(f"julia_make_blobs: cluster_std must be a finite number > 0, got {cluster_std!r}")
    a, b = float(center_box[0]), float(center_box[1])
    if not a < b:
        raise ValueError(f"julia_make_blobs: center_box must be (a, b) with a < b, got {center_box!r}")
    c, z, perm = _blob_draws(int(seed), int(n), int(p), int(centers), (a, b))
    ni, r = divmod(int(n), int(centers))
    ns = [ni] * int(centers)
    ns[-1] += r
    y = np.repeat(np.arange(1, int(centers) + 1, dtype=np.int64), ns)
    X = z.copy()
    nss = [1, *np.cumsum(ns).tolist()]
    for k in range(int(centers)):  # rows[k] = nss[k]:nss[k+1], 1-based and inclusive (consecutive ranges overlap)
        rows = slice(nss[k] - 1, nss[k + 1])
        X[rows] *= float(cluster_std)
        X[rows] += c[k]
    return X[perm], y[perm], c.copy()


def _rand_bulk(rng: Xoshiro, n: int) -> np.ndarray:
    """``rand(rng, n)`` / ``rand(rng, n, 1)`` for any ``n``: ``XoshiroSimd``'s Float64 fill is its ``UInt64`` fill
    (:meth:`Xoshiro.rand_uint64_bulk`, the same lanes and remainder) mapped by ``_bits2float``: ``(u >>> 11)·2⁻⁵³``,
    in the SIMD ``llvmcall`` as in the scalar path."""
    return (rng.rand_uint64_bulk(n) >> np.uint64(11)).astype(np.float64) * _TWO_M53


def _finish_2d(rng: Xoshiro, X: np.ndarray, y: np.ndarray, noise: float):
    """The common tail of MLJBase's ``make_moons``/``make_circles``: ``X .+= noise .* randn(rng, n, 2)`` unless
    ``iszero(noise)``, then ``finalize_Xy`` → ``shuffle_rows`` → ``randperm(rng, n)`` on the same ``rng``."""
    n = len(y)
    if noise != 0:
        z = rng.randn(2 * n).reshape(2, n).T  # column-major: column 1 = draws 1..n
        X += noise * z
    perm = rng.randperm(n) - 1
    return X[perm], y[perm]


def _check_2d(fname: str, n: int, noise: float, seed: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"{fname}: n must be an integer >= 1, got {n!r}")
    if not (isinstance(noise, int | float) and math.isfinite(noise) and noise >= 0):
        raise ValueError(f"{fname}: noise must be a finite number >= 0, got {noise!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"{fname}: seed must be an integer >= 0, got {seed!r}")


def _cos_sin(theta: np.ndarray) -> np.ndarray:
    """``hcat(cos.(θs), sin.(θs))`` with the C library's correctly-rounded-in-practice ``cos``/``sin`` (Julia uses
    its own < 1 ulp ports; a last-bit difference, if any, does not survive the Float32 cast but in rare ties)."""
    return np.column_stack([np.fromiter(map(math.cos, theta.tolist()), np.float64, len(theta)),
                            np.fromiter(map(math.sin, theta.tolist()), np.float64, len(theta))])


def julia_make_moons(n: int, *, noise: float = 0.1, xshift: float = 1.0, yshift: float = 0.3, seed: int = 42):
    """``MLJBase.make_moons(n; noise, xshift, yshift, rng=Xoshiro(seed))`` of MLJBase 0.21.14 (``shuffle=true``,
    ``eltype=Float64``), as TaijaData's ``load_moons`` passes it on: ``X`` (n×2 float64, rows = points), ``y``
    (int64, 0/1). Draws in order: ``θs = π .* rand(rng, n, 1)`` (the bulk fill), rows ``n − n÷2 + 1:n`` get ``−θ``
    and ``(+xshift, +yshift)``, labels ``0`` for rows ``1:n÷2`` and ``1`` after; then :func:`_finish_2d`."""
    _check_2d("julia_make_moons", n, noise, seed)
    n = int(n)
    rng = Xoshiro(int(seed))
    theta = math.pi * _rand_bulk(rng, n) + 0.0  # runif_ab(rng, n, 1, 0, pi) = (pi - 0) .* rand(rng, n, 1) .+ 0
    n1 = n // 2
    n2 = n - n1
    theta[n2:] *= -1
    X = _cos_sin(theta)
    X[n2:, 0] += float(xshift)
    X[n2:, 1] += float(yshift)
    y = np.ones(n, dtype=np.int64)
    y[:n1] = 0
    return _finish_2d(rng, X, y, float(noise))


def julia_make_circles(n: int, *, noise: float = 0.15, factor: float = 0.01, seed: int = 42):
    """``MLJBase.make_circles(n; noise, factor, rng=Xoshiro(seed))`` of MLJBase 0.21.14 (TaijaData ``load_circles``'
    defaults ``noise = 0.15``, ``factor = 0.01``): ``θs = 2π .* rand(rng, n, 1)``, rows ``1:n÷2`` scaled by
    ``factor`` and labelled 0, the rest 1; then :func:`_finish_2d`."""
    _check_2d("julia_make_circles", n, noise, seed)
    if not (isinstance(factor, int | float) and 0 < factor < 1):
        raise ValueError(f"julia_make_circles: factor must lie strictly between 0 and 1, got {factor!r}")
    n = int(n)
    rng = Xoshiro(int(seed))
    theta = (2 * math.pi) * _rand_bulk(rng, n) + 0.0  # runif_ab(rng, n, 1, 0, 2pi)
    X = _cos_sin(theta)
    n0 = n // 2
    X[:n0] *= float(factor)
    y = np.ones(n, dtype=np.int64)
    y[:n0] = 0
    return _finish_2d(rng, X, y, float(noise))
