"""The discrepancies chapter's prose is rendered from the result files (ctbench/report/text/discrepancy_text.py)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from ctbench.report.tables.paper_tables import PUBLISHED_DIR
from ctbench.report.text.discrepancy_text import render_switch_findings, render_table1_findings

COMMITTED = Path(__file__).resolve().parents[1] / "paper" / "results" / "report"


@pytest.fixture()
def report(tmp_path):
    if not (COMMITTED / "table1.csv").exists():
        pytest.skip("no committed result set")
    for name in ("table1.csv", "table1_agreement.csv", "table3.csv", "table3_agreement.csv", "performance.csv"):
        shutil.copy(COMMITTED / name, tmp_path / name)
    return tmp_path


def _cells(text: str) -> dict[str, str]:
    """Bullet lines by cell name ("Moon IP*"), markdown escapes removed."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^- \*\*(.+?)\*\* \(", line)
        if m:
            out[m.group(1).replace("\\", "")] = line
    return out


def _bullet(text: str, cell: str) -> str:
    return _cells(text)[cell]


def test_numbers_follow_the_files(report):
    t1 = pd.read_csv(report / "table1.csv")
    before = render_table1_findings(report)
    i = t1.index[(t1["dataset"] == "Moon") & (t1["metric"] == "IP")][0]
    t1.loc[i, ["reduction_pct", "pm"]] = [12.345, 6.789]
    t1.loc[i, "seed_values"] = "1.00 2.00 3.00 4.00 5.00"
    t1.to_csv(report / "table1.csv", index=False)
    agr = pd.read_csv(report / "table1_agreement.csv")
    agr.loc[agr["version"] == "preprint_2025_07", "sign and significance"] = 3
    agr.to_csv(report / "table1_agreement.csv", index=False)
    after = render_table1_findings(report)
    assert after != before
    moon = _bullet(after, "Moon IP")
    assert "ours 12.3 ± 6.8" in moon and "Per training seed 1.0, 2.0, 3.0, 4.0, 5.0" in moon
    assert "with 3 of the 27 cells of the July 2025 preprint" in after


def test_only_cells_that_disagree_with_july_are_listed(report):
    t1 = pd.read_csv(report / "table1.csv")
    text = render_table1_findings(report)
    listed = set(_cells(text))
    want = {f"{r.dataset} {r.metric}" for r in t1.itertuples()
            if r.dataset != "Avg." and r.preprint_2025_07_agreement != "sign and significance"}
    assert listed == want


def test_a_seed_that_trained_worse_is_named(report):
    t1 = pd.read_csv(report / "table1.csv")
    i = t1.index[(t1["dataset"] == "Moon") & (t1["metric"] == "IP")][0]
    t1.loc[i, "seed_values"] = "20.00 21.00 -30.00 22.00 23.00"
    t1.to_csv(report / "table1.csv", index=False)
    rows = [{"dataset": "Moon", "seed": s, "acc_ct": 1.0, "acc_bl": 0.95 if s == 2 else 1.0, "f1_ct": 1.0,
             "f1_bl": 1.0} for s in range(5)]
    pd.DataFrame(rows).to_csv(report / "performance_seeds.csv", index=False)
    moon = _bullet(render_table1_findings(report), "Moon IP")
    assert "BL models of seed(s) 2 reach test accuracy 0.950 against 1.000" in moon
    assert "those seeds give -30.0, the others 20.0, 21.0, 22.0 and 23.0" in moon
    assert "CT models of seed" not in moon  # CT's accuracy is the same for every seed


def test_switch_findings_compare_with_july_and_count(tmp_path):
    july = pd.read_csv(PUBLISHED_DIR / "table1_reductions.csv")
    ls = july[(july["version"] == "preprint_2025_07") & (july["dataset"] == "LS") & (july["metric"] == "IP*")].iloc[0]
    rows = []
    for ds, ref, pap in (("lin_sep", -5.0, float(ls["reduction_pct"])), ("circles", 70.0, 80.0)):
        rows.append({"switch": "mmd_length_scale", "dataset": ds, "metric": "IP*", "reference": ref, "paper": pap,
                     "delta": pap - ref, "pm_reference": 1.0, "pm_paper": 1.0, "significant_reference": True,
                     "significant_paper": bool(ls["significant"]) if ds == "lin_sep" else True,
                     "reference_setting": "5.0", "paper_setting": "0.5", "experiment": "single", "n_seeds": 5})
    pd.DataFrame(rows).to_csv(tmp_path / "fidelity_effects.csv", index=False)
    text = render_switch_findings(tmp_path, PUBLISHED_DIR)
    assert "**`mmd_length_scale`** (5 training seeds)" in text
    assert f"LS IP\\* -5.0 ± 1.0\\* with 5.0, {float(ls['reduction_pct']):.1f} ± 1.0" in text
    # LS agrees with July under 0.5 only (opposite sign under 5.0); Circ depends on July's star there
    assert "with 0.5" in text and "of these 2 cells agree with July" in text


def test_variant_runs_are_compared_cell_by_cell(tmp_path):
    from ctbench.report.text.discrepancy_text import render_variant_findings

    if not (COMMITTED / "table1.csv").exists():
        pytest.skip("no committed result set")
    base = tmp_path / "set" / "report"
    variant = tmp_path / "set" / "variants" / "reference_2025_07"
    for folder in (base, variant):
        folder.mkdir(parents=True)
        for name in ("table1.csv", "table1_agreement.csv", "table3_agreement.csv"):
            shutil.copy(COMMITTED / name, folder / name)
    assert "No variant run" in render_variant_findings(tmp_path / "elsewhere" / "report")
    assert "No cell changes" in render_variant_findings(base)
    # the variant flips one cell that disagreed with July into agreement, and gains one count
    t1 = pd.read_csv(variant / "table1.csv")
    col = "preprint_2025_07_agreement"
    i = t1.index[(t1["dataset"] != "Avg.") & (t1[col] != "sign and significance") & t1[col].notna()][0]
    cell = f"{t1.loc[i, 'dataset']} {t1.loc[i, 'metric']}"
    t1.loc[i, ["reduction_pct", col]] = [12.345, "sign and significance"]
    t1.to_csv(variant / "table1.csv", index=False)
    agr = pd.read_csv(variant / "table1_agreement.csv")
    before = int(agr.loc[agr["version"] == "preprint_2025_07", "sign and significance"].iloc[0])
    agr.loc[agr["version"] == "preprint_2025_07", "sign and significance"] = before + 1
    agr.to_csv(variant / "table1_agreement.csv", index=False)
    text = render_variant_findings(base).replace("\\", "")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "July |" not in line]
    assert len(rows) == 1 and rows[0].startswith(f"| {cell} ") and "12.3" in rows[0]
    assert rows[0].rstrip(" |").endswith("→ sign and significance")
    assert f"{before + 1} cells agree in sign and significance with the July 2025 preprint (default run: {before})" \
        in text


def _seed_rows(values: list[float], july: list[str], final: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"dataset": "Moon", "metric": "IP", "seed": range(len(values)), "reduction_pct": values,
                         "significant": True, "verdict_preprint_2025_07": july, "tolerance_preprint_2025_07": 5.0,
                         "verdict_satml_2026": final, "tolerance_satml_2026": 5.0})


def test_each_training_seed_alone_is_counted_against_july_and_final(report):
    """Issue 25 item 2: a disagreeing cell says, from table1_seeds.csv, its value on each seed alone and how many
    seeds reach July and the final version; with no seed reaching July it says the gap is not seed variation."""
    assert "training seed alone" not in _bullet(render_table1_findings(report), "Moon IP")  # no file: no sentence
    some = ["reproduced"] * 6 + ["partly"] * 4
    _seed_rows([20.0] * 6 + [-6.0] * 3 + [float("nan")], some, ["reproduced"] * 5 + ["partly"] * 5).to_csv(
        report / "table1_seeds.csv", index=False)
    moon = _bullet(render_table1_findings(report), "Moon IP")
    assert "On each of the 9 training seeds alone that have it: seed 0 20.0\\*; seed 1 20.0\\*" in moon
    assert "seed 8 -6.0\\*; no value on seed 9." in moon
    assert "6 of 9 reach the July value (same sign and significance, magnitude within ±5), 5 of 9 reach the final" \
           in moon
    assert "The gap to July lies within training-seed variation: 6 of 9 seeds agree with July." in moon
    rows = _seed_rows([20.0] * 5 + [float("nan")] * 5, ["reproduced"] * 10, ["reproduced"] * 10)
    rows.loc[5:, "note"] = "no mutability evaluation of Moon (the retrain stage runs only the single experiment)"
    rows.to_csv(report / "table1_seeds.csv", index=False)
    moon = _bullet(render_table1_findings(report), "Moon IP")
    assert ("seed 4 20.0\\*; no value on seeds 5–9: no mutability evaluation of Moon (the retrain stage runs only "
            "the single experiment). 5 of 5 reach the July value") in moon
    _seed_rows([-30.0] * 10, ["not reproduced"] * 10, ["not reproduced"] * 9 + ["reproduced"]).to_csv(
        report / "table1_seeds.csv", index=False)
    moon = _bullet(render_table1_findings(report), "Moon IP")
    assert "0 of 10 reach the July value" in moon and "1 of 10 reach the final version's" in moon
    assert ("No seed reaches the July value: the gap to July is not training-seed variation (the final version's "
            "value is reached on 1 of 10).") in moon


def test_table1_target_needs_agreement_or_a_measured_cause(tmp_path):
    """Issue 25's Table-1 target, judged from the files: a cell that agrees with neither version counts as caused
    only while some training seed alone reaches a published value or a variant run agrees with July."""
    from ctbench.report.text.discrepancy_text import render_table1_causes

    if not (COMMITTED / "table1.csv").exists():
        pytest.skip("no committed result set")
    report = tmp_path / "set" / "report"
    report.mkdir(parents=True)
    shutil.copy(COMMITTED / "table1.csv", report / "table1.csv")
    t1 = pd.read_csv(report / "table1.csv")
    col, fin = "preprint_2025_07_agreement", "satml_2026_agreement"
    # one cell that agrees with neither version, whatever the committed set holds
    i = t1.index[(t1["dataset"] == "Moon") & (t1["metric"] == "IP")][0]
    t1.loc[i, [col, fin]] = ["sign only", "sign only"]
    t1.to_csv(report / "table1.csv", index=False)
    text = render_table1_causes(report)
    assert "Moon IP |" in text and "| none measured |" in text and "is not met" in text
    # a seed alone that reaches July is a measured cause
    seeds = _seed_rows([20.0, -5.0], ["reproduced", "not reproduced"], ["partly", "partly"])
    seeds.to_csv(report / "table1_seeds.csv", index=False)
    text = render_table1_causes(report)
    assert "1 of 2 seeds alone reach July, 0 the final version's" in text
    assert "none measured" not in text.split("Moon IP |")[1].splitlines()[0]
    # a variant run that agrees with July is one too, and is named with its value
    seeds.assign(verdict_preprint_2025_07="not reproduced").to_csv(report / "table1_seeds.csv", index=False)
    assert "is not met" in render_table1_causes(report)
    variant = tmp_path / "set" / "variants" / "reference_2025_07"
    variant.mkdir(parents=True)
    v = t1.copy()
    v.loc[i, ["reduction_pct", "pm", "significant", col]] = [19.5, 1.0, True, "sign and significance"]
    v.to_csv(variant / "table1.csv", index=False)
    row = render_table1_causes(report).split("Moon IP |")[1].splitlines()[0]
    assert "`fidelity: reference_2025_07`" in row and "19.5 ± 1.0\\*" in row


def test_ls_target_against_the_printed_value_and_its_interval(tmp_path):
    """Issue 25 item 1: CT's LS means within 5% of the appendix, judged against the printed value and against the
    interval of values that print as it; the text follows appendix_ci.csv."""
    from ctbench.report.text.discrepancy_text import _printed_interval, render_ls_target

    assert _printed_interval(0.11)[:2] == pytest.approx((0.105, 0.115))
    assert _printed_interval(2.51)[:2] == pytest.approx((2.505, 2.515))
    assert _printed_interval(3.4)[:2] == pytest.approx((3.35, 3.45))
    rows = [{"dataset": "LS", "metric": "IP", "ct_mean_abs": 2.40, "pub_ct_mean_abs": 2.51},
            {"dataset": "LS", "metric": "IP*", "ct_mean_abs": 0.103, "pub_ct_mean_abs": 0.11},
            {"dataset": "OL", "metric": "IP", "ct_mean_abs": 9.0, "pub_ct_mean_abs": 1.0}]
    pd.DataFrame(rows).to_csv(tmp_path / "appendix_ci.csv", index=False)
    text = render_ls_target(tmp_path)
    assert "| 2.400 | 2.51 | -4.4% |" in text and "| 0.103 | 0.11 | -6.4% | [0.105, 0.115) | -1.9% |" in text
    assert "printed appendix value: IP." in text and "IP\\*: outside against the printed value, within" in text
    rows[1]["ct_mean_abs"] = 0.09  # 14% below 0.105 too
    pd.DataFrame(rows).to_csv(tmp_path / "appendix_ci.csv", index=False)
    assert "IP\\*: outside either way." in render_ls_target(tmp_path)
    rows[0]["ct_mean_abs"] = 2.70
    pd.DataFrame(rows).to_csv(tmp_path / "appendix_ci.csv", index=False)
    assert "printed appendix value: none." in render_ls_target(tmp_path)


def test_target_texts_without_published_columns(tmp_path):
    """A profile whose datasets have no published Table 1 or appendix values (a custom dataset): each target text
    says so instead of failing."""
    from ctbench.report.text.discrepancy_text import render_ls_target, render_table1_causes

    pd.DataFrame([{"dataset": "Toy", "metric": "IP", "reduction_pct": 10.0, "pm": 1.0, "significant": True}]).to_csv(
        tmp_path / "table1.csv", index=False)
    pd.DataFrame([{"dataset": "Toy", "metric": "IP", "ct_mean_abs": 1.0, "bl_mean_abs": 2.0}]).to_csv(
        tmp_path / "appendix_ci.csv", index=False)
    assert "no cell compared" in render_table1_causes(tmp_path)
    assert "no published values" in render_ls_target(tmp_path)
