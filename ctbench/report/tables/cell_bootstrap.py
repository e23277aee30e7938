"""Table 1's bootstrap over individuals drawn per stratum, not per row (issue 21: the row draws were ~90 CPU-s of the
paper set's report, 1,000 replicates × 7.1M rows).

The row bootstrap (:func:`ctbench.evaluation.aggregate.bootstrap_reduction`) draws, in every stratum (run, objective,
λ) of ``n`` counterfactual rows of which ``k`` are valid, ``n`` rows with replacement, and each replicate's statistic
depends on the stratum only through two numbers: the number ``m`` of valid rows drawn and the sum ``S`` of their
values. Here those two numbers are drawn directly:

- ``m ~ Binomial(n, k/n)``: exactly the distribution of the valid rows among ``n`` draws with replacement;
- given ``m``, the valid rows drawn are ``m`` draws with replacement from the stratum's ``k`` valid values, so
  ``S`` is exactly a sum of ``m`` i.i.d. draws from them. For ``m ≤ EXACT_MAX`` the ``m`` values are drawn and
  summed (exact); above it ``S = m·μ + √m·σ·Z`` (``μ``, ``σ``: mean and population standard deviation of the
  ``k`` valid values, ``Z`` standard normal): the same mean and variance as the exact sum, and its central-limit
  shape. The statistic then averages the stratum means over λ and hundreds of runs, so what the normal shape of
  one stratum's sum leaves out (its skewness, of order 1/√m) is averaged down further.

Strata are independent in both estimators (the row bootstrap draws each stratum on its own), so the replicates'
statistics have the row bootstrap's distribution up to that central-limit step, at a cost per replicate of two
random numbers per stratum (plus the exact draws of small strata) instead of one per row. The point estimate does not
move; the intervals move by Monte Carlo noise (measured on the paper set: benchmarks/README.md, issue 21, branch
``report-speed``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

#: strata whose drawn valid count is at most this get their values drawn one by one (exact); above, the normal sum
EXACT_MAX = 30
#: the exact draws of one block are made this many at a time (issue 21: a block's up to 30 draws per stratum and
#: replicate, ~56 bytes each, were the paper report's peak, +1.4 GB); the numbers and sums do not depend on it
EXACT_CHUNK = 2**20


def cell_moments(cell: np.ndarray, vals: np.ndarray, w: np.ndarray, starts: np.ndarray, sizes: np.ndarray):
    """Per stratum (rows sorted by stratum, ``starts``/``sizes`` its runs): its cell code, row count ``n``, valid
    count ``k``, valid mean ``μ`` and population standard deviation ``σ`` (0 without valid rows), and the valid
    values sorted by stratum with each stratum's first position among them."""
    valid = w.astype(bool)
    stratum = np.repeat(np.arange(len(starts)), sizes)
    k = np.bincount(stratum, weights=valid, minlength=len(starts)).astype(np.int64)
    vv = vals[valid]
    sv = stratum[valid]
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = np.bincount(sv, weights=vv, minlength=len(starts)) / k
        dev = vv - mu[sv]
        sd = np.sqrt(np.bincount(sv, weights=dev * dev, minlength=len(starts)) / k)
    mu, sd = np.where(k > 0, mu, 0.0), np.where(k > 0, sd, 0.0)
    vstart = np.r_[0, np.cumsum(k)[:-1]]
    return cell[starts], sizes.astype(np.int64), k, mu, sd, vv, vstart


def cell_sums(rng: np.random.Generator, moments, n_boot: int, n_cell: int, max_bytes: int,
              exact_max: int = EXACT_MAX) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Per block of replicates, the (b, n_cell) sums of the valid values drawn and their counts, stratum by stratum
    as the module docstring says (cells without rows: 0 and 0, as in the row bootstrap)."""
    code, n, k, mu, sd, vv, vstart = moments
    n_str = len(code)
    p = np.divide(k, n, out=np.zeros(n_str), where=n > 0)
    per = max(1, min(n_boot, int(max_bytes // max(1, 48 * n_str))))
    done = 0
    while done < n_boot:
        b = min(per, n_boot - done)
        m = rng.binomial(n, p, size=(b, n_str))
        s = m * mu + np.sqrt(m) * sd * rng.standard_normal((b, n_str))
        small = (m > 0) & (m <= exact_max) & (sd > 0)
        if small.any():
            rr, cc = np.nonzero(small)
            s[rr, cc] = exact_sums(rng, m[rr, cc], cc, k, vstart, vv)
        sums, counts = np.zeros((b, n_cell)), np.zeros((b, n_cell))
        sums[:, code], counts[:, code] = s, m
        yield sums, counts
        done += b


def exact_sums(rng: np.random.Generator, mm: np.ndarray, cc: np.ndarray, k: np.ndarray, vstart: np.ndarray,
               vv: np.ndarray) -> np.ndarray:
    """Per entry ``i``: the sum of ``mm[i]`` draws with replacement from stratum ``cc[i]``'s ``k`` valid values
    (``vv`` from ``vstart``), made :data:`EXACT_CHUNK` draws at a time. The uniforms are ``rng.random(mm.sum())``
    split at the chunks' ends (a generator gives the same numbers either way) and each sum adds its draws in the
    same order, so the sums are those of one pass bit for bit, with a bounded memory."""
    out = np.empty(len(mm))
    ends = np.cumsum(mm)
    lo = 0
    while lo < len(mm):
        before = int(ends[lo - 1]) if lo else 0
        hi = max(lo + 1, int(np.searchsorted(ends, before + EXACT_CHUNK, side="right")))
        m_c, c_c = mm[lo:hi], cc[lo:hi]
        owner = np.repeat(np.arange(hi - lo), m_c)
        pick = vstart[c_c][owner] + (rng.random(len(owner)) * k[c_c][owner]).astype(np.int64)
        out[lo:hi] = np.bincount(owner, weights=vv[pick], minlength=hi - lo)
        lo = hi
    return out
