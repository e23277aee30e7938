"""Table 1's bootstrap drawn per stratum (issue 21): the row bootstrap's distribution from two numbers a stratum."""

import numpy as np
import pandas as pd
import pytest

from ctbench.report.tables import cell_bootstrap as cb
from ctbench.report.tables.paper_tables import table1_bootstrap
from ctbench.report.tables.shared_bootstrap import Bootstraps


def _evals(seed=0, runs=12, n_ind=40):
    """`single` and `mutability` rows of two datasets, skewed values (gamma), validity that differs by objective."""
    rng = np.random.default_rng(seed)
    recs = []
    for exp in ("single", "mutability"):
        for ds in ("circles", "moons"):
            for r in range(runs):
                for lam in (0.1, 1.0):
                    for obj, p_valid in (("full", 0.6), ("vanilla", 0.85)):
                        n = n_ind + int(rng.integers(-10, 10))  # unequal strata
                        ip, cost = rng.gamma(1.5, 1.0, n), rng.gamma(2.0, 0.5, n)
                        valid = rng.random(n) < p_valid
                        recs += [(ds, exp, 0, obj, lam, r, bool(v), float(a), float(b))
                                 for v, a, b in zip(valid, ip, cost, strict=True)]
    return pd.DataFrame(recs, columns=["dataset", "experiment", "seed", "objective", "lambda_energy", "run", "valid",
                                       "ip", "cost"])


def _moments(vals, w, sizes):
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    cell = np.repeat(np.arange(len(sizes)), sizes)
    return cb.cell_moments(cell, np.asarray(vals, float), np.asarray(w, float), starts, np.asarray(sizes))


def test_a_stratum_draws_a_binomial_count_and_the_sum_of_that_many_valid_values():
    """Valid count ~ Binomial(n, k/n); with every sum drawn value by value, the sum's mean is m·μ and each drawn sum
    is a sum of m of the stratum's valid values (here all equal to 2 or 5: the sum is 2a + 5(m − a))."""
    vals, w = [2.0, 5.0, 100.0, 2.0, 5.0, 7.0], [1, 1, 0, 1, 1, 0]
    mom = _moments(vals, w, [6])
    assert mom[2].tolist() == [4] and mom[3][0] == pytest.approx(3.5) and mom[4][0] == pytest.approx(1.5)
    s, c = next(cb.cell_sums(np.random.default_rng(1), mom, 20000, 1, 2**30, exact_max=10**9))
    m = c[:, 0]
    assert m.mean() == pytest.approx(6 * 4 / 6, abs=0.03) and m.var() == pytest.approx(6 * (2 / 3) * (1 / 3), rel=0.05)
    a = (5 * m - s[:, 0]) / 3  # the number of 2s drawn
    assert np.allclose(a, np.round(a)) and (a >= 0).all() and (a <= m).all()
    assert (s[:, 0] / np.where(m > 0, m, 1))[m > 0].mean() == pytest.approx(3.5, abs=0.02)


def test_strata_without_valid_or_with_one_value_and_missing_cells():
    """No valid row: count and sum 0 (the cell mean is NaN, as with row draws); all valid with one value: count n,
    sum n·v; a cell code without rows stays 0."""
    mom = cb.cell_moments(np.array([0, 0, 2, 2]), np.array([1.0, 1.0, 3.0, 3.0]), np.array([0.0, 0.0, 1.0, 1.0]),
                          np.array([0, 2]), np.array([2, 2]))
    s, c = next(cb.cell_sums(np.random.default_rng(0), mom, 50, 3, 2**30))
    assert (c[:, 0] == 0).all() and (s[:, 0] == 0).all() and (c[:, 1] == 0).all()
    assert (c[:, 2] == 2).all() and (s[:, 2] == 6).all()


@pytest.mark.parametrize("exact_max", [cb.EXACT_MAX, 10**9])
def test_cell_draws_give_the_row_bootstrap_intervals(exact_max, monkeypatch):
    """Same point estimates to the bit; bootstrap standard errors and interval ends within Monte Carlo noise of the
    row draws (4,000 replicates each), with the normal sums and with every sum drawn value by value."""
    monkeypatch.setattr(cb, "EXACT_MAX", exact_max)
    monkeypatch.setattr(cb.cell_sums, "__defaults__", (exact_max,))
    ev = _evals()
    rows = table1_bootstrap(ev, n_boot=4000, draws="rows")
    cells = table1_bootstrap(ev, n_boot=4000, draws="cells")
    assert (cells["draws"] == "cells").all() and len(cells) == 4
    for c in ("reduction_pct", "mean_delta", "reduction_rom_pct", "n_rows", "n_runs"):
        assert (cells[c].to_numpy() == rows[c].to_numpy()).all()
    se = rows["delta_se"].to_numpy()
    assert np.allclose(cells["delta_se"], se, rtol=0.06)
    for c in ("mean_delta_lb", "mean_delta_ub"):
        assert np.abs(cells[c] - rows[c]).max() < 0.25 * se.max()
    red = (rows["reduction_pct_ub"] - rows["reduction_pct_lb"]).to_numpy()
    for c in ("reduction_pct_lb", "reduction_pct_ub"):
        assert (np.abs(cells[c] - rows[c]).to_numpy() < 0.08 * red).all()


def test_unknown_draws_is_a_clear_error():
    with pytest.raises(ValueError, match="draws must be one of"):
        Bootstraps(draws="individuals")


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000])
def test_exact_draws_in_chunks_are_the_one_pass_draws_bit_for_bit(chunk, monkeypatch):
    """The exact sums made a few draws at a time (issue 21: the report's peak memory) are the sums of drawing them
    all at once, to the bit, and leave the generator where the one pass leaves it; a whole table too."""
    rng = np.random.default_rng(4)
    vals, w = rng.normal(size=400), (rng.random(400) < 0.6).astype(float)
    mom = _moments(vals, w, [37, 3, 60, 100, 200])
    code, n, k, mu, sd, vv, vstart = mom
    mm = rng.integers(1, 31, 500)
    cc = rng.integers(0, 5, 500)
    cc = cc[k[cc] > 0]
    mm = mm[: len(cc)]

    def one_pass(g):  # the code before the chunks
        owner = np.repeat(np.arange(len(mm)), mm)
        pick = vstart[cc][owner] + (g.random(len(owner)) * k[cc][owner]).astype(np.int64)
        return np.bincount(owner, weights=vv[pick], minlength=len(mm))

    want_g, got_g = np.random.default_rng(9), np.random.default_rng(9)
    want = one_pass(want_g)
    monkeypatch.setattr(cb, "EXACT_CHUNK", chunk)
    got = cb.exact_sums(got_g, mm, cc, k, vstart, vv)
    assert (got == want).all() and got_g.random() == want_g.random()
    ev = _evals()
    small = table1_bootstrap(ev, n_boot=300, draws="cells")
    monkeypatch.setattr(cb, "EXACT_CHUNK", 2**20)
    pd.testing.assert_frame_equal(small, table1_bootstrap(ev, n_boot=300, draws="cells"), check_exact=True)
