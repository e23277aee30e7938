"""Aggregation recipes (ct_reference.md §7.4, §7.5): hand-made tables with the arithmetic written out."""

import math

import numpy as np
import pandas as pd
import pytest

from ctbench.evaluation import (
    AVG,
    Columns,
    ablation_table,
    bootstrap_reduction,
    compare_published,
    paper_value,
    per_run_means,
    reduction_table,
    validity_table,
)

INF = float("inf")
NAN = float("nan")


def _frame(records):
    """records: (dataset, run, λ, objective, valid, value)."""
    return pd.DataFrame(records, columns=["dataset", "run", "lambda_energy", "objective", "valid", "ip"])


def _table1_data():
    r = [
        # dataset A, run 1: CT λ0.1 = mean(1, 3) = 2, λ1 = 4 → m = 3 (the invalid 100 is ignored)
        ("A", 1, 0.1, "full", 1, 1.0), ("A", 1, 0.1, "full", 1, 3.0), ("A", 1, 1.0, "full", 1, 4.0),
        ("A", 1, 1.0, "full", 0, 100.0),
        #                     BL λ0.1 = 6, λ1 = mean(5, 7) = 6 → m = 6
        ("A", 1, 0.1, "vanilla", 1, 6.0), ("A", 1, 1.0, "vanilla", 1, 5.0), ("A", 1, 1.0, "vanilla", 1, 7.0),
        # run 2: CT λ0.1 = 2, λ1 has no valid CE → m = 2 (mean over the existing λ cell only, not (2 + 50)/2)
        ("A", 2, 0.1, "full", 1, 2.0), ("A", 2, 1.0, "full", 0, 50.0),
        #        BL λ0.1 = 4, λ1 = 6 → m = 5
        ("A", 2, 0.1, "vanilla", 1, 4.0), ("A", 2, 1.0, "vanilla", 1, 6.0),
        # run 3: NaN / Inf rows are dropped → CT m = 3, BL m = 3
        ("A", 3, 0.1, "full", 1, 3.0), ("A", 3, 1.0, "full", 1, 3.0), ("A", 3, 1.0, "full", 1, NAN),
        ("A", 3, 0.1, "vanilla", 1, 3.0), ("A", 3, 1.0, "vanilla", 1, 3.0), ("A", 3, 1.0, "vanilla", 1, INF),
        # dataset B (one λ): run 1 CT 2 / BL 4, run 2 CT 6 / BL 4
        ("B", 1, 1.0, "full", 1, 2.0), ("B", 1, 1.0, "vanilla", 1, 4.0),
        ("B", 2, 1.0, "full", 1, 6.0), ("B", 2, 1.0, "vanilla", 1, 4.0),
        # dataset D: ρ = (1/2, 1/2) → reduction 50, ± 0
        ("D", 1, 1.0, "full", 1, 1.0), ("D", 1, 1.0, "vanilla", 1, 2.0),
        ("D", 2, 1.0, "full", 1, 1.0), ("D", 2, 1.0, "vanilla", 1, 2.0),
        # run 3: IP* of exactly 0 for both → ρ = 0/0 is left out of the ratio statistics, Δ = 0 stays
        ("D", 3, 1.0, "full", 1, 0.0), ("D", 3, 1.0, "vanilla", 1, 0.0),
    ]
    return _frame(r)


def test_per_run_means_marginalise_lambda_over_existing_cells():
    pr = per_run_means(_table1_data(), "ip").set_index(["dataset", "run", "objective"])["value"]
    assert pr[("A", 1, "full")] == 3.0 and pr[("A", 1, "vanilla")] == 6.0
    assert pr[("A", 2, "full")] == 2.0 and pr[("A", 2, "vanilla")] == 5.0
    assert pr[("A", 3, "full")] == 3.0 and pr[("A", 3, "vanilla")] == 3.0


def test_reduction_table_by_hand():
    t = reduction_table(_table1_data(), "ip", label="IP").set_index("dataset")
    assert list(t.index) == ["A", "B", "D", AVG]
    # A: ρ = (3/6, 2/5, 3/3) = (0.5, 0.4, 1.0); mean ρ = 1.9/3 = 0.63333… → reduction = (1 − 0.63333)·100 = 36.667
    a = t.loc["A"]
    assert a["reduction_pct"] == pytest.approx((1 - 1.9 / 3) * 100)
    assert a["reduction_pct"] == pytest.approx(36.6667, abs=1e-4)
    # ± = 100·sd(ρ, ddof=1): deviations (−0.13333, −0.23333, 0.36667); squares sum 0.206667; /2 = 0.103333; √ = 0.32146
    assert a["pm"] == pytest.approx(100 * math.sqrt(0.206666666 / 2), rel=1e-6)
    assert a["pm"] == pytest.approx(32.146, abs=1e-3)
    # Δ_r = |CT| − |BL| = (3 − 6, 2 − 5, 3 − 3) = (−3, −3, 0), sorted (−3, −3, 0)
    #   q0.005: position (n−1)·p = 2·0.005 = 0.01 → −3 + 0.01·(−3 − (−3)) = −3
    #   q0.995: position 2·0.995 = 1.99 → −3 + 0.99·(0 − (−3)) = −0.03  → interval excludes 0 → star
    assert a["lb"] == pytest.approx(-3.0) and a["ub"] == pytest.approx(-0.03)
    assert bool(a["significant"]) is True
    # appendix columns: mean_r |m(r, o)|: CT (3 + 2 + 3)/3 = 8/3, BL (6 + 5 + 3)/3 = 14/3
    assert a["ct_mean_abs"] == pytest.approx(8 / 3) and a["bl_mean_abs"] == pytest.approx(14 / 3)
    assert a["mean_delta"] == pytest.approx(-2.0) and a["n_runs"] == 3 and a["metric"] == "IP"
    # B: ρ = (2/4, 6/4) = (0.5, 1.5); mean 1.0 → reduction 0; sd = √(((−0.5)² + 0.5²)/1) = 0.70711 → ± 70.711
    b = t.loc["B"]
    assert b["reduction_pct"] == pytest.approx(0.0, abs=1e-12)
    assert b["pm"] == pytest.approx(100 * math.sqrt(0.5))
    # Δ = (−2, 2): q0.005 = −2 + 0.005·4 = −1.98, q0.995 = −2 + 0.995·4 = 1.98 → contains 0 → no star
    assert b["lb"] == pytest.approx(-1.98) and b["ub"] == pytest.approx(1.98)
    assert bool(b["significant"]) is False
    assert t.loc["D", "reduction_pct"] == pytest.approx(50.0) and t.loc["D", "pm"] == pytest.approx(0.0)
    assert (t.loc["D", "n_runs"], t.loc["D", "n_ratio"]) == (3, 2) and t.loc["D", "mean_delta"] == pytest.approx(-2 / 3)
    # Avg. row: plain mean of the reductions (36.667 + 0 + 50)/3 = 28.889 (the median would be 36.667)
    assert t.loc[AVG, "reduction_pct"] == pytest.approx(((1 - 1.9 / 3) * 100 + 0 + 50) / 3)
    assert pd.isna(t.loc[AVG, "pm"]) and pd.isna(t.loc[AVG, "significant"])


def test_reduction_table_level_and_custom_names():
    df = _table1_data().rename(columns={"objective": "obj", "lambda_energy": "lam"})
    df["obj"] = df["obj"].map({"full": "CT", "vanilla": "BL"})
    t = reduction_table(df, "ip", ct="CT", bl="BL", level=0.5, avg_row=False, cols=Columns(objective="obj", lam="lam"))
    a = t.set_index("dataset").loc["A"]
    # 50% interval of (−3, −3, 0): q0.25 at position 0.5 → −3 ; q0.75 at position 1.5 → −3 + 0.5·3 = −1.5
    assert (a["lb"], a["ub"]) == pytest.approx((-3.0, -1.5))
    assert a["reduction_pct"] == pytest.approx((1 - 1.9 / 3) * 100) and AVG not in set(t["dataset"])


def test_sign_convention_cancels_and_ip_star_is_clamped():
    df = _table1_data()
    pos = reduction_table(df, "ip")
    # harness convention: IP stored as −IP → identical statistics (signs cancel in ρ, |·| in Δ and CT/BL)
    neg = reduction_table(df, "ip", kind="ip")
    assert np.allclose(paper_value(np.array([1.0, 2.0]), "ip"), [-1.0, -2.0])
    cols = ["reduction_pct", "pm", "lb", "ub", "ct_mean_abs", "bl_mean_abs"]
    pd.testing.assert_frame_equal(pos[cols], neg[cols])
    # IP*: stored as −max(MMD², 0). A raw negative MMD² in run 1 of dataset B is clamped to 0 …
    assert np.allclose(paper_value(np.array([-0.5, 0.0, 0.25, np.nan]), "ip_star"), [0.0, 0.0, -0.25, np.nan],
                       equal_nan=True)
    dfb = df[df["dataset"] == "B"].copy()
    dfb.loc[(dfb["run"] == 1) & (dfb["objective"] == "full"), "ip"] = -1.0
    star = reduction_table(dfb, "ip", kind="ip_star", avg_row=False).iloc[0]
    # … so ρ = (0/4, 6/4) = (0, 1.5): reduction = (1 − 0.75)·100 = 25; Δ = (0 − 4, 6 − 4) = (−4, 2)
    assert star["reduction_pct"] == pytest.approx(25.0)
    assert star["lb"] == pytest.approx(-4 + 0.005 * 6)
    # without the clamp: ρ = (−1/4, 1.5) → mean 0.625 → 37.5, and Δ = (|−1| − 4, 2) = (−3, 2)
    raw = reduction_table(dfb, "ip", avg_row=False).iloc[0]
    assert raw["reduction_pct"] == pytest.approx(37.5)
    with pytest.raises(KeyError):
        paper_value(np.ones(2), "accuracy")


def test_validity_table_by_hand():
    rows = []
    # A/full: run 1 λa valid (1, 1, 0, 0) → 0.5, λb (1) → 1; run 2 λa (1, 1, 1, 0) → 0.75, λb (0, 0) → 0
    for run, lam, vs in [(1, "a", [1, 1, 0, 0]), (1, "b", [1]), (2, "a", [1, 1, 1, 0]), (2, "b", [0, 0])]:
        rows += [("A", run, lam, "full", v, 1.0) for v in vs]
    rows += [("A", r, lam, "vanilla", 1, 1.0) for r in (1, 2) for lam in ("a", "b")]
    # B/full: one cell per run: 0.2 and 0.4 → 0.3 ; B/vanilla: 1 and 0 → 0.5
    rows += [("B", 1, "a", "full", v, 1.0) for v in [1, 0, 0, 0, 0]]
    rows += [("B", 2, "a", "full", v, 1.0) for v in [1, 1, 0, 0, 0]]
    rows += [("B", 1, "a", "vanilla", 1, 1.0), ("B", 2, "a", "vanilla", 0, 1.0)]
    t = validity_table(_frame(rows)).set_index(["dataset", "objective"])["validity"]
    # mean of cell means (0.5 + 1 + 0.75 + 0)/4 = 0.5625 — not the pooled row share 6/12 = 0.5
    assert t[("A", "full")] == pytest.approx(0.5625)
    assert t[("A", "vanilla")] == 1.0
    assert t[("B", "full")] == pytest.approx(0.3) and t[("B", "vanilla")] == pytest.approx(0.5)
    # Avg.: full (0.5625 + 0.3)/2 = 0.43125, vanilla (1 + 0.5)/2 = 0.75
    assert t[(AVG, "full")] == pytest.approx(0.43125) and t[(AVG, "vanilla")] == pytest.approx(0.75)


def test_ablation_table_by_hand():
    rows = [
        # BL cells: run 1 λa 4, λb 8; run 2 λa 9 (λb only invalid) → mean of cells (4 + 8 + 9)/3 = 7
        #   (λ-marginalising first would give (6 + 9)/2 = 7.5: the ablation recipe does not do that)
        ("A", 1, "a", "vanilla", 1, 4.0), ("A", 1, "b", "vanilla", 1, 8.0),
        ("A", 2, "a", "vanilla", 1, 9.0), ("A", 2, "b", "vanilla", 0, 1000.0),
        # CT cells 2, 2, 5 → 3 → (1 − 3/7)·100 = 57.142857
        ("A", 1, "a", "full", 1, 2.0), ("A", 1, "b", "full", 1, 2.0), ("A", 2, "a", "full", 1, 5.0),
        # CD: 7 everywhere → 0 ; AR: 14 everywhere → (1 − 14/7)·100 = −100
        ("A", 1, "a", "energy", 1, 7.0), ("A", 2, "a", "energy", 1, 7.0),
        ("A", 1, "a", "adversarial", 1, 14.0), ("A", 2, "b", "adversarial", 1, 14.0),
    ]
    df = _frame(rows)
    t = ablation_table(df, "ip", label="IP").set_index("objective")
    assert t.loc["vanilla", "mean"] == pytest.approx(7.0) and t.loc["vanilla", "reduction_pct"] == 0.0
    assert t.loc["full", "reduction_pct"] == pytest.approx((1 - 3 / 7) * 100)
    assert t.loc["energy", "reduction_pct"] == pytest.approx(0.0)
    assert t.loc["adversarial", "reduction_pct"] == pytest.approx(-100.0)
    assert (t["metric"] == "IP").all()
    # harness sign (−IP) gives the same reductions (|·| in the formula)
    t2 = ablation_table(df, "ip", kind="ip").set_index("objective")
    assert np.allclose(t2["reduction_pct"], t["reduction_pct"]) and (t2["mean"] < 0).all()
    # the formula uses |·|: an (unclamped) raw MMD² of −0.1 against a baseline 0.2 → (1 − 0.1/0.2)·100 = 50
    mixed = _frame([("A", 1, "a", "vanilla", 1, 0.2), ("A", 1, "a", "full", 1, -0.1)])
    tm = ablation_table(mixed, "ip").set_index("objective")
    assert tm.loc["full", "reduction_pct"] == pytest.approx(50.0)


# --------------------------------------------------------------------------------------------------------- bootstrap
def _simulate(seed, mu_ct=2.0, mu_bl=3.0, runs=5, lams=(0.1, 1.0), n=30):
    rng = np.random.default_rng(seed)
    recs = []
    for r in range(runs):
        for lam in lams:
            for obj, mu in (("full", mu_ct), ("vanilla", mu_bl)):
                vals = rng.normal(mu, 1.0, size=n)
                valid = rng.random(n) < 0.8  # validity independent of the value
                recs += [("S", r, lam, obj, bool(v), float(x)) for v, x in zip(valid, vals, strict=True)]
    return _frame(recs)


def test_bootstrap_point_estimate_matches_paper_recipe_and_is_seeded():
    df = _simulate(0)
    b1 = bootstrap_reduction(df, "ip", n_boot=200, seed=11, level=0.95)
    b2 = bootstrap_reduction(df, "ip", n_boot=200, seed=11, level=0.95)
    b3 = bootstrap_reduction(df, "ip", n_boot=200, seed=12, level=0.95)
    pd.testing.assert_frame_equal(b1, b2)
    assert b1.loc[0, "mean_delta_lb"] != b3.loc[0, "mean_delta_lb"]
    t = reduction_table(df, "ip", avg_row=False).iloc[0]
    assert b1.loc[0, "mean_delta"] == pytest.approx(t["mean_delta"])
    assert b1.loc[0, "reduction_pct"] == pytest.approx(t["reduction_pct"])
    assert b1.loc[0, "reduction_rom_pct"] == pytest.approx((1 - t["ct_mean_abs"] / t["bl_mean_abs"]) * 100)
    assert b1.loc[0, "mean_delta_lb"] < b1.loc[0, "mean_delta"] < b1.loc[0, "mean_delta_ub"]
    # with 20 runs, the CI of the mean (width ∝ 1/√R) is much narrower than the paper's per-run spread of Δ_r
    df20 = _simulate(0, runs=20, n=10)
    b20 = bootstrap_reduction(df20, "ip", n_boot=200, seed=11, level=0.99).iloc[0]
    t20 = reduction_table(df20, "ip", avg_row=False).iloc[0]
    assert b20["mean_delta_ub"] - b20["mean_delta_lb"] < 0.5 * (t20["ub"] - t20["lb"])
    # a chunked computation gives the same replicates
    b4 = bootstrap_reduction(df, "ip", n_boot=200, seed=11, level=0.95, max_bytes=1)
    pd.testing.assert_frame_equal(b1, b4)
    # stratifying on (run, objective) only: same point estimate, still seeded
    b5 = bootstrap_reduction(df, "ip", n_boot=200, seed=11, level=0.95, stratify_lambda=False)
    assert b5.loc[0, "mean_delta"] == pytest.approx(t["mean_delta"]) and bool(b5.loc[0, "significant"])


def test_bootstrap_resamples_within_strata():
    # every (run, λ, objective) cell is constant, and one cell holds a single row: a stratified replicate keeps every
    # cell (sizes fixed) → every replicate reproduces the point estimate → zero width
    df = _simulate(3, runs=4, n=8)
    df["ip"] = (df["run"] + 1) * 10.0 + df["lambda_energy"] * 3 + (df["objective"] == "vanilla") * 5.0
    df["valid"] = True
    lone = (df["run"] == 0) & (df["lambda_energy"] == 1.0) & (df["objective"] == "full")
    df = df.drop(df.index[lone][1:])
    b = bootstrap_reduction(df, "ip", n_boot=50, seed=0).iloc[0]
    assert b["mean_delta_lb"] == pytest.approx(b["mean_delta"]) == pytest.approx(b["mean_delta_ub"])
    assert b["mean_delta"] == pytest.approx(-5.0) and b["delta_se"] == pytest.approx(0.0, abs=1e-12)
    # strata (run, objective) only: the lone λ = 1 row of run 0 / CT is missing from a replicate with probability
    # (8/9)⁹ ≈ 0.35, and then m(0, CT) = 10.3 instead of (10.3 + 13)/2 → the replicates vary
    b2 = bootstrap_reduction(df, "ip", n_boot=50, seed=0, stratify_lambda=False).iloc[0]
    assert b2["mean_delta"] == pytest.approx(-5.0) and b2["delta_se"] > 0.05


def test_bootstrap_ci_covers_the_true_difference_in_most_seeds():
    # truth: |μ_CT| − |μ_BL| = 2 − 3 = −1; reduction ≈ (1 − 2/3)·100 = 33.3 (mean of ratios, tiny bias)
    cover_delta = cover_red = 0
    for seed in range(50):
        b = bootstrap_reduction(_simulate(seed), "ip", n_boot=300, seed=1000 + seed, level=0.95).iloc[0]
        cover_delta += b["mean_delta_lb"] <= -1.0 <= b["mean_delta_ub"]
        cover_red += b["reduction_pct_lb"] <= 100 / 3 <= b["reduction_pct_ub"]
        assert bool(b["significant"])
    # nominal 95%: P(Binomial(50, 0.95) ≤ 41) ≈ 0.001
    assert cover_delta >= 42 and cover_red >= 42
    # and it is not trivially wide: a wrong truth (−0.6, ≈ 4 standard errors away) is (almost) never covered
    wrong = sum(
        bootstrap_reduction(_simulate(s), "ip", n_boot=300, seed=s, level=0.95).iloc[0]["mean_delta_ub"] >= -0.6
        for s in range(10))
    assert wrong <= 1


# --------------------------------------------------------------------------------------------------------- published
def test_compare_published(tmp_path):
    csv = tmp_path / "table1_reductions.csv"
    csv.write_text(
        "version,dataset,metric,reduction_pct,pm,significant\n"
        "satml_2026,A,IP,30.0,1.0,1\n"
        "satml_2026,B,IP,5.0,2.0,0\n"
        "satml_2026,C,IP,1.0,0.5,0\n"
        "satml_2026,Avg.,IP,12.0,,\n"
        "preprint_2025_07,A,IP,99.0,1.0,1\n")
    ours = reduction_table(_table1_data(), "ip")
    c = compare_published(ours, csv).set_index("dataset")
    assert list(c.index) == ["A", "B", "C", AVG, "D"]  # published order, then ours only; C is missing from ours
    assert (c["metric"] == "IP").all()
    assert c.loc["A", "diff_pct"] == pytest.approx((1 - 1.9 / 3) * 100 - 30.0)
    assert c.loc["B", "diff_pct"] == pytest.approx(-5.0)
    assert bool(c.loc["A", "significant_agrees"]) and bool(c.loc["B", "significant_agrees"])
    assert pd.isna(c.loc["C", "reduction_pct"]) and c.loc["C", "pub_reduction_pct"] == 1.0
    assert c.loc[AVG, "diff_pct"] == pytest.approx(((1 - 1.9 / 3) * 100 + 50) / 3 - 12.0)
    assert pd.isna(c.loc["D", "pub_reduction_pct"]) and pd.isna(c.loc["D", "diff_pct"])
    # other version and renamed datasets
    c2 = compare_published(ours, csv, version="preprint_2025_07", dataset_names={"A": "A", "B": "Bee"})
    assert c2.set_index("dataset").loc["A", "pub_reduction_pct"] == 99.0 and "Bee" in set(c2["dataset"])


def _bootstrap_reference(df, metric, *, ct="full", bl="vanilla", n_boot=1000, level=0.99, seed=2025,
                         stratify_lambda=True):
    """The bootstrap's replicates as computed before issue 21: the whole (n_boot, n) grid of draws at once, cell
    codes gathered, one bincount per quantity. Returns the replicates' statistics (to compare bit for bit)."""
    from ctbench.evaluation.aggregate import COLS, _prepare, _run_level, _stats

    cols = COLS
    d = _prepare(df, metric, None, False, cols)
    d = d[d[cols.objective].isin([ct, bl])]
    rng = np.random.default_rng(seed)
    out = []
    for _, g in d.groupby(cols.dataset, sort=False):
        run_code, runs = pd.factorize(g[cols.run], sort=True)
        lam_code, lams = pd.factorize(g[cols.lam], sort=True)
        J, n_lam = 2 * len(runs), len(lams)
        j = run_code * 2 + (g[cols.objective] == bl).to_numpy().astype(int)
        cell = j * n_lam + lam_code
        stratum = cell if stratify_lambda else j
        order = np.argsort(stratum, kind="stable")
        stratum, cell = stratum[order], cell[order]
        vals = g["_y"].to_numpy(float)[order]
        w = g[cols.valid].astype(bool).to_numpy(float)[order]
        n = len(vals)
        starts = np.flatnonzero(np.r_[True, stratum[1:] != stratum[:-1]])
        sizes = np.diff(np.r_[starts, n])
        row_start, row_size = np.repeat(starts, sizes), np.repeat(sizes, sizes)
        idx = row_start + np.floor(rng.random((n_boot, n)) * row_size).astype(np.int64)
        out.append(_stats(_run_level(vals[idx], w[idx], cell[idx], J, n_lam).reshape(n_boot, -1, 2)))
    return out


@pytest.mark.parametrize("case", ["equal", "unequal", "no_lambda_strata", "one_block", "small_blocks"])
def test_bootstrap_blocks_are_bitwise_the_whole_grid(case, monkeypatch):
    """The blocked bootstrap (issue 21) draws and sums exactly as the whole-grid loop before it: every replicate's
    statistic is bit-identical, for cells of equal and unequal sizes (dropped NaN rows), strata without λ, one block,
    and blocks much smaller than a replicate."""
    import ctbench.evaluation.aggregate as agg

    rng = np.random.default_rng(5)
    recs = []
    for ds, runs, n_ind in (("A", 12, 40), ("B", 7, 9)):
        for r in range(runs):
            for lam in (0.1, 1.0, 5.0):
                for obj in ("full", "vanilla"):
                    v = rng.gamma(2.0, 1.0, n_ind) * (-1 if ds == "B" else 1)
                    if case == "unequal":
                        v[rng.random(n_ind) < 0.15] = np.nan
                    v[rng.random(n_ind) < 0.05] = 0.0
                    recs += [(ds, r, lam, obj, bool(a), float(x))
                             for a, x in zip(rng.random(n_ind) < 0.7, v, strict=True)]
    df = _frame(recs).sample(frac=1.0, random_state=3).reset_index(drop=True)
    kw = {"stratify_lambda": case != "no_lambda_strata"}
    # blocks of a few cells (both paths: equal cells summed down the block's first axis, the others by bincount),
    # all of a replicate and more, or smaller than one cell (each stratum a block of its own)
    monkeypatch.setattr(agg, "_BLOCK", {"one_block": 10**6, "small_blocks": 30}.get(case, 200))
    captured = []
    real = agg._stats
    monkeypatch.setattr(agg, "_stats", lambda m: captured.append(real(m)) or captured[-1])
    bootstrap_reduction(df, "ip", n_boot=150, seed=9, **kw)
    monkeypatch.setattr(agg, "_stats", real)
    ref = _bootstrap_reference(df, "ip", n_boot=150, seed=9, **kw)
    # captured: per dataset the point estimate, then the blocks' statistics
    got, i = [], 0
    for _ in ref:
        i += 1  # the point estimate
        parts = []
        while sum(len(p["mean_delta"]) for p in parts) < 150:
            parts.append(captured[i])
            i += 1
        got.append({k: np.concatenate([p[k] for p in parts]) for k in parts[0]})
    for a, b in zip(got, ref, strict=True):
        for k in b:
            assert np.array_equal(a[k].view(np.int64), b[k].view(np.int64)), k


def test_table1_bootstrap_rows_do_not_depend_on_the_other_datasets_of_the_report():
    """A dataset's interval comes from its own random stream, so a slice of the datasets (the verify profile)
    reproduces the full report's rows bit for bit; before, one stream ran through the datasets in order."""
    from ctbench.report.tables.paper_tables import table1_bootstrap

    def evals(name, seed):
        return _simulate(seed).assign(dataset=name, experiment="single", seed=0)

    both = table1_bootstrap(pd.concat([evals("circles", 1), evals("moons", 2)], ignore_index=True), n_boot=100)
    alone = table1_bootstrap(evals("moons", 2), n_boot=100)
    moon = both[both["dataset"] == alone["dataset"].iloc[0]].reset_index(drop=True)
    assert len(moon) == 1
    pd.testing.assert_frame_equal(moon, alone.reset_index(drop=True))
    # and the stream is the dataset's own: the same data under another name gives other intervals
    other = table1_bootstrap(evals("circles", 2), n_boot=100)
    assert other["mean_delta_lb"].iloc[0] != alone["mean_delta_lb"].iloc[0]


@pytest.mark.parametrize("n_valid", [0, 1])
def test_ablation_table_without_valid_baseline_rows_is_nan_not_an_error(n_valid):
    """A dataset whose baseline has no valid counterfactual (or none at all) gets NaN reductions, not a crash: the
    report reads the dataset column as Arrow strings, whose map onto an empty baseline gave a string column."""
    import pyarrow as pa

    rows = [("A", 1, "a", "vanilla", 0, 4.0), ("A", 1, "a", "full", n_valid, 2.0)]
    df = _frame(rows)
    df["dataset"] = df["dataset"].astype(pd.ArrowDtype(pa.large_string()))
    t = ablation_table(df, "ip", label="IP")
    assert len(t) == n_valid and t["baseline_mean"].dtype == "float64"
    assert t["reduction_pct"].isna().all()
