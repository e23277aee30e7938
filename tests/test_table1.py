"""Table 1 with seed-level uncertainty, flags and every published version (ctbench.report.tables.table1), on hand-made
frames whose answers are known."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ctbench.errors import ConfigError
from ctbench.evaluation.aggregate import reduction_table
from ctbench.report.settings import ReportSettings, report_settings
from ctbench.report.tables.table1 import (
    AGREE,
    DISAGREE,
    SIGN_ONLY,
    agreement,
    agreement_counts,
    compare_versions,
    pool_seeds,
    table1,
)


def frame(factors, dataset="LS", n_runs=6, n_ind=4, lambdas=(0.5, 5.0), experiment="single", rng=0,
          ct_valid=1.0):
    """Rows for CT (``full``) and BL (``vanilla``): BL's metric ≈ 10, CT's = factor·BL per seed (small noise)."""
    g = np.random.default_rng(rng)
    rows = []
    for seed, f in enumerate(factors):
        for run in range(n_runs):
            for lam in lambdas:
                for _ in range(n_ind):
                    base = 10 + g.normal(0, 0.1)
                    for obj, mult in (("vanilla", 1.0), ("full", f)):
                        v = base * mult
                        valid = True if obj == "vanilla" else g.random() < ct_valid
                        rows.append({"dataset": dataset, "experiment": experiment, "seed": seed, "run": run,
                                     "lambda_energy": lam, "objective": obj, "valid": valid, "ip": v,
                                     "ip_star": v / 100, "cost": v})
    return pd.DataFrame(rows)


def test_one_seed_is_exactly_the_papers_recipe():
    df = frame([0.8])
    t = table1(df).set_index(["dataset", "metric"])
    ref = reduction_table(df, "ip", kind="ip", label="IP", avg_row=False).set_index("dataset")
    assert t.loc[("LS", "IP"), "reduction_pct"] == pytest.approx(ref.loc["LS", "reduction_pct"])
    assert t.loc[("LS", "IP"), "pm"] == pytest.approx(ref.loc["LS", "pm"])
    assert t.loc[("LS", "IP"), "n_seeds"] == 1 and pd.isna(t.loc[("LS", "IP"), "seed_lb"])


def test_runs_of_different_seeds_are_different_replicates():
    df = frame([0.8, 0.6], n_runs=5)
    pooled = pool_seeds(df)
    assert pooled.groupby(["seed"])["run"].nunique().tolist() == [5, 5] and pooled["run"].nunique() == 10
    t = table1(df).set_index(["dataset", "metric"])
    assert t.loc[("LS", "IP"), "n_runs"] == 10
    assert t.loc[("LS", "IP"), "reduction_pct"] == pytest.approx(30.0, abs=0.5)


def test_seed_level_interval_is_a_t_interval_over_per_seed_reductions():
    df = frame([0.8, 0.7, 0.9])
    t = table1(df).set_index(["dataset", "metric"]).loc[("LS", "IP")]
    v = np.array([20.0, 30.0, 10.0])
    lb, ub = stats.t.interval(0.95, 2, loc=v.mean(), scale=v.std(ddof=1) / np.sqrt(3))
    assert t["seed_mean"] == pytest.approx(20.0, abs=0.2) and t["seed_sd"] == pytest.approx(10.0, abs=0.2)
    assert t["seed_lb"] == pytest.approx(lb, abs=0.5) and t["seed_ub"] == pytest.approx(ub, abs=0.5)
    # every run shows CT better (the paper's star), but over three seeds the interval includes 0
    assert bool(t["significant"]) and not bool(t["seed_significant"])
    tight = table1(frame([0.8, 0.79, 0.81])).set_index(["dataset", "metric"]).loc[("LS", "IP")]
    assert bool(tight["seed_significant"]) and tight["seed_lb"] > 15


def _with_nan_groups():
    """LS and Circ, where half of LS's IP* values are NaN (groups of one counterfactual); CT's surviving LS values are
    those of the even runs, made 0.5 × BL so that the drop rule's cell (50%) is far from the full frame's (≈ 25%)."""
    df = pd.concat([frame([0.8, 0.7]), frame([0.8, 0.7], dataset="Circ")], ignore_index=True)
    ls = df["dataset"] == "LS"
    df.loc[ls & (df["run"] % 2 == 1), "ip_star"] = np.nan
    df.loc[ls & (df["run"] % 2 == 0) & (df["objective"] == "full"), "ip_star"] = 0.05
    df.loc[ls & (df["run"] % 2 == 0) & (df["objective"] == "vanilla"), "ip_star"] = 0.1
    return df


def test_withhold_leaves_cells_with_many_nan_values_not_computable():
    df = _with_nan_groups()
    t = table1(df, ReportSettings(ip_star_nan_groups="withhold")).set_index(["dataset", "metric"])
    cell = t.loc[("LS", "IP*")]
    assert pd.isna(cell["reduction_pct"]) and pd.isna(cell["seed_mean"]) and pd.isna(cell["significant"])
    assert cell["flag"].startswith("not computable: 50% of the IP* values are NaN")
    assert "ip_star_nan_groups = withhold" in cell["flag"]
    assert t.loc[("LS", "IP"), "flag"] == "" and np.isfinite(t.loc[("LS", "IP"), "reduction_pct"])
    assert bool(t.loc[("Circ", "IP*"), "significant"])  # the other cells keep their stars
    assert "average of 1 datasets" in t.loc[("Avg.", "IP*"), "flag"]


def test_drop_averages_the_groups_of_two_or_more_as_the_authors_did():
    """The default (reference §7.3, §7.4 step 1): NaN groups are left out and the cell is computed over the rest,
    with the NaN share on the cell; the switch changes the cell from empty to the 50% of the surviving groups."""
    df = _with_nan_groups()
    t = table1(df).set_index(["dataset", "metric"])
    assert t.equals(table1(df, report_settings({"ip_star_nan_groups": "drop"})).set_index(["dataset", "metric"]))
    cell = t.loc[("LS", "IP*")]
    assert cell["reduction_pct"] == pytest.approx(50.0) and cell["seed_mean"] == pytest.approx(50.0)
    assert cell["n_runs"] == 6  # the even runs of both seeds; the odd runs have no IP* left
    assert cell["nan_share"] == pytest.approx(0.5)
    assert cell["flag"] == ("50% of the IP* values are NaN (groups of fewer than 2 counterfactuals), left out of the "
                            "means as the authors' code does (ip_star_nan_groups = drop)")
    assert "average of 2 datasets" in t.loc[("Avg.", "IP*"), "flag"]  # LS is in it
    assert t.loc[("Avg.", "IP*"), "reduction_pct"] == pytest.approx(
        (50.0 + t.loc[("Circ", "IP*"), "reduction_pct"]) / 2)


def test_an_unknown_nan_rule_is_refused():
    with pytest.raises(ConfigError, match="ip_star_nan_groups.*drop.*withhold|drop.*withhold"):
        report_settings({"ip_star_nan_groups": "keep"})
    with pytest.raises(ConfigError, match="did you mean 'ip_star_nan_groups'"):
        report_settings({"ip_star_nan_group": "drop"})


def test_cells_resting_on_few_valid_counterfactuals_are_flagged():
    df = frame([0.8], ct_valid=0.03, n_runs=20, n_ind=10, rng=3)
    cell = table1(df).set_index(["dataset", "metric"]).loc[("LS", "IP")]
    assert cell["ct_validity"] < 0.05 and "valid CT counterfactuals" in cell["flag"]
    assert cell["flag"].startswith(f"rests on {100 * cell['ct_validity']:.1f}%")


@pytest.mark.parametrize("ours, ours_sig, pub, pub_sig, expected", [
    (20.0, True, 26.3, True, AGREE),
    (1.0, False, -1.9, False, DISAGREE),       # opposite sign: never agreement, whatever the stars say
    (-5.0, True, 5.2, True, DISAGREE),
    (3.9, False, 5.2, True, SIGN_ONLY),        # significance lost
    (30.0, True, 8.0, False, SIGN_ONLY),       # significance gained: disagrees too (either direction)
    (30.0, True, 27.6, None, SIGN_ONLY),       # the March preprint has no stars
    (np.nan, None, 8.0, False, "not computable"),
    (8.0, True, np.nan, None, "no published value"),
])
def test_agreement_categories(ours, ours_sig, pub, pub_sig, expected):
    assert agreement(ours, pd.NA if ours_sig is None else ours_sig, pub,
                     pd.NA if pub_sig is None else pub_sig) == expected


@pytest.fixture
def published(tmp_path):
    rows = ["version,dataset,metric,reduction_pct,pm,significant"]
    for v, ip in (("satml_2026", 26.0), ("preprint_2025_07", 29.0)):
        rows += [f"{v},LS,IP,{ip},0.7,1", f"{v},LS,IP*,50,2,1", f"{v},LS,Cost,16,0.6,1",
                 f"{v},Circ,IP,58,0.4,1", f"{v},Avg.,IP,15.6,,"]
    (tmp_path / "table1_reductions.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "preprint_2025_03_table.csv").write_text(
        "dataset,ip_pct_lam0.1,ip_pct_lam0.5,ip_pct_lam1,ip_pct_lam5,ip_pct_lam10,ipstar_pct,acc_ct,acc_bl,"
        "acc_fgsm003_ct,acc_fgsm003_bl,cost_pct\nLS,27.1,26.7,26.6,27.1,38.6,54.5,1,1,1,1,26.3\n")
    return tmp_path


def test_every_version_beside_ours_and_the_primary_is_the_july_preprint(published):
    df = pd.concat([frame([0.72]), frame([0.72], experiment="mutability"), frame([0.5], dataset="Circ")])
    t = compare_versions(table1(df), published).set_index(["dataset", "metric"])
    ls = t.loc[("LS", "IP")]
    assert ls["pub_reduction_pct"] == 29.0 and ls["pub_version"] == "preprint_2025_07"
    assert ls["satml_2026_reduction_pct"] == 26.0
    assert ls["preprint_2025_03_reduction_pct"] == pytest.approx(np.mean([27.1, 26.7, 26.6, 27.1, 38.6]))
    assert ls["preprint_2025_07_agreement"] == AGREE and ls["preprint_2025_03_agreement"] == SIGN_ONLY
    # 28% lies inside the authors' range [26, 29.2]
    assert ls["reduction_pct"] == pytest.approx(28.0, abs=0.3) and bool(ls["within_authors_range"])
    # an average over 2 of the paper's 9 datasets is not the paper's Avg.: flagged, not compared
    avg = t.loc[("Avg.", "IP")]
    assert "not the paper's nine" in avg["flag"] and pd.isna(avg["pub_reduction_pct"])
    counts = agreement_counts(compare_versions(table1(df), published)).set_index("version")
    assert counts.loc["preprint_2025_07", AGREE] == 4  # LS IP, IP*, Cost and Circ IP (50 vs 58)


def test_ipstar_groupings_side_by_side_with_agreement(published):
    from ctbench.report.tables.paper_tables import ipstar_groupings

    df = frame([0.5]).assign(ip_star_run=lambda d: d["ip_star"], ip_star_pooled=lambda d: d["ip_star"] * 1.5)
    df.loc[df["objective"] == "vanilla", "ip_star_pooled"] = df.loc[df["objective"] == "vanilla", "ip_star"]
    t = ipstar_groupings(df.assign(dataset="lin_sep"), published).set_index("dataset").loc["LS"]
    assert t["reduction_pct_per_run"] == pytest.approx(50.0, abs=1.0)
    assert t["reduction_pct_pooled"] == pytest.approx(25.0, abs=1.5)  # CT's pooled values 1.5 × larger
    assert t["preprint_2025_07_agreement_per_run"] == AGREE
    assert ipstar_groupings(frame([0.5])).empty  # evaluations without the two columns
