"""The Prop 3.1 page's sentences are written from the run's own summary, never fixed numbers (issue 14, item 5)."""

import pandas as pd

from ctbench.report.prop31_text import render_findings, render_violations

COLS = ["by", "group", "runs", "lowered", "share", "ci_low", "ci_high", "median_ratio", "median_rs_u", "median_rs_p",
        "median_rs_bl", "median_abs_w_imm_u", "median_abs_w_imm_p", "median_abs_w_imm_bl", "median_abs_w_mut_u",
        "median_abs_w_mut_p", "median_abs_w_mut_bl"]


def _summary(tmp_path, lowered=1620, runs=1620):
    rows = [["all", "all", runs, lowered, lowered / runs, 0.998, 1.0, 0.16, 52.0, 8.7, 1.0, 7.3, 1.6, 1.6, 0.16,
             0.16, 1.57],
            ["iteration", "50", runs, runs, 1.0, 0.99, 1.0, 0.33, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            ["iteration", "400", runs, lowered, lowered / runs, 0.99, 1.0, 0.16, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            ["variant", "default", 20, 20, 1.0, 0.8, 1.0, 0.19, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            ["variant", "replace_immature", 20, 12, 0.62, 0.54, 0.68, 0.94, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            ["variant", "x_prime_is_factual_T0", 20, 20, 1.0, 0.8, 1.0, 0.4, 0, 0.34, float("nan"), 0, 0, 0, 0, 5.9,
             0]]
    p = tmp_path / "prop31_summary.csv"
    pd.DataFrame(rows, columns=COLS).to_csv(p, index=False)
    return p


def test_sentences_carry_the_summarys_numbers(tmp_path):
    text = render_findings(_summary(tmp_path))
    assert "in all 1620 paired runs" in text and "median ratio of the protected to the unprotected" in text
    assert "grows to 7.3" in text and "stays at 1.6" in text and "step 50" in text and "0.33" in text
    assert "Under `replace_immature` the share is 62%" in text and "`default`" in text
    assert "about 0.16 against 1.57" in text and "(median 8.7) is above the baseline's (1.0)" in text
    assert "is 5.90 and its relative sensitivity 0.34." in text  # no "baseline nan"
    some = render_findings(_summary(tmp_path, lowered=1500))
    assert "in 1500 of 1620 paired runs" in some


def test_violations_sentence(tmp_path):
    p = tmp_path / "v.csv"
    pd.DataFrame({"kind": ["clean", "rho-0.8", "flip"], "runs": [20, 180, 180], "lowered": [20, 165, 180],
                  "share": [1.0, 0.917, 1.0], "ci_low": [0.8, 0.867, 0.979], "ci_high": [1.0, 0.949, 1.0]}).to_csv(
        p, index=False)
    text = render_violations(p)
    assert "`flip` 100% (98%–100%, 180 runs); `rho-0.8` 92% (87%–95%, 180 runs)" in text
    assert "not always in every run" in text and "clean" not in text
