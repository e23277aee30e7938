"""The Prop 3.1 page's prose is written from the run's own files, never fixed numbers (issue 14, item 5): every
number in the rendered text is a value of the result files (or a constant of the code's design), and the
judgements in words follow the numbers."""

import re
from dataclasses import asdict

import pandas as pd
import pytest

from ctbench.experiments import prop31 as P
from ctbench.report.text.prop31_text import render_findings, render_settings, render_settings_section, render_violations

COLS = ["by", "group", "runs", "lowered", "share", "ci_low", "ci_high", "share_bl", "ci_low_bl", "ci_high_bl",
        "median_ratio", "median_rs_u", "median_rs_p", "median_rs_bl", "median_abs_w_imm_u", "median_abs_w_imm_p",
        "median_abs_w_imm_bl", "median_abs_w_mut_u", "median_abs_w_mut_p", "median_abs_w_mut_bl"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny real run of both arms (``ctbench prop31 --quick`` with shorter training)."""
    out = tmp_path_factory.mktemp("prop31")
    from ctbench.cli.study_cmds import write_prop31

    write_prop31(P.check(quick=True, cfg=P.TrainConfig(n_iter=60, record_every=10), seeds=[0, 1, 2],
                         trainer_cfg=P.TrainerArmConfig(epochs=3)), out)
    return out


def _candidates(*csvs) -> set[str]:
    """Every way the prose may print a value of the files, plus the design's constants."""
    out = {"95%"}
    values = []
    for p in csvs:
        df = pd.read_csv(p)
        for col in df.columns:
            for v in df[col].dropna():
                if isinstance(v, str):
                    out |= set(re.findall(r"\d+(?:\.\d+)?", v))
                else:
                    values.append(float(v))
    values += [float(v) for cfg in (P.TrainConfig(), P.TrainerArmConfig()) for v in asdict(cfg).values()
               if isinstance(v, int | float)] + [P.HOLDS_ABOVE]
    for v in values:
        out |= {f"{v:.0f}", f"{v:.1f}", f"{v:.2f}", f"{v:.3f}", f"{v:g}", f"{100 * v:.0f}%", f"{100 * v:.1f}%"}
    return out


def _numbers(text: str) -> list[str]:
    text = re.sub(r"`[^`]*`", "", text)                      # names of settings, files and variants
    text = re.sub(r"\\mathrm\{[^}]*\}|\{prf:ref\}", "", text)
    text = "\n".join(line for line in text.splitlines() if not line.startswith("|"))  # tables are the CSV itself
    return re.findall(r"\d+(?:\.\d+)?%?", text)


def test_every_number_in_the_prose_comes_from_the_result_files(run):
    text = (render_findings(run / "prop31_summary.csv") + render_violations(run / "prop31_violations.csv")
            + render_settings(run / "prop31_settings.csv"))
    allowed = _candidates(*(run / f for f in ("prop31_summary.csv", "prop31_violations.csv",
                                              "prop31_settings.csv")))
    numbers = _numbers(text)
    assert len(numbers) > 40
    stray = [n for n in numbers if n not in allowed]
    assert not stray, stray
    settings = pd.read_csv(run / "prop31_settings.csv")
    grid = settings[settings["case"] == "closed_form:default_grid"].iloc[0]
    assert f"{int(grid['runs'])} paired runs on the default grid" in text
    assert f"{len(settings[settings['arm'] == 'trainer'])} settings × 3 seeds" in text
    assert "3 epochs" in text  # the trainer arm's training length is the run's, not the default's


def test_a_changed_result_changes_the_prose(run, tmp_path):
    s = pd.read_csv(run / "prop31_settings.csv")
    s.loc[s["case"] == "trainer:K2_D2", ["share_vs_u", "ci_low_vs_u", "ci_high_vs_u"]] = [0.123, 0.0456, 0.2]
    s.loc[s["case"] == "trainer:K2_D2", "holds_vs_u"] = False
    s.to_csv(tmp_path / "prop31_settings.csv", index=False)
    text = render_settings(tmp_path / "prop31_settings.csv")
    assert "`trainer:K2_D2` 12% (5%–20%)" in text and "it does not on `trainer:K2_D2`" in text
    assert "does not hold on every setting tried" in text


def _settings(tmp_path, control_fails: bool, bl_holds: bool):
    rows = []
    for case, role in (("closed_form:default_grid", "check"), ("trainer:K2_D2", "check"),
                       ("trainer:nc_x", "negative_control")):
        check = role == "check"
        low = 0.9 if check else (0.2 if control_fails else 0.7)
        rows.append({"case": case, "arm": case.split(":")[0], "role": role, "runs": 20, "epochs": 40, "lr": 0.01,
                     "n": "200", "share_vs_u": low + 0.05, "ci_low_vs_u": low, "ci_high_vs_u": 1.0,
                     "holds_vs_u": low > 0.5, "conclusion_fails": None if check else control_fails,
                     "share_vs_bl": 0.9 if bl_holds else 0.1, "ci_low_vs_bl": 0.8 if bl_holds else 0.02,
                     "ci_high_vs_bl": 0.95, "holds_vs_bl": bl_holds, "median_rs_u": 3.0, "median_rs_p": 1.25,
                     "median_rs_bl": 1.5, "mature_p": 0.9 if check else 0.1})
    p = tmp_path / "prop31_settings.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    return p


def test_judgements_follow_the_numbers(tmp_path):
    good = render_settings(_settings(tmp_path, control_fails=True, bl_holds=True))
    assert "The conclusion fails on 1 of 1" in good
    assert "in the trainer arm every negative control fails, so there the conclusion depends on the proviso" in good
    assert "reach τ is 10% on the failing controls against 90% on the checks" in good
    assert "than the baseline on 2 of 2 checks" in good and "that holds only on" not in good
    bad = render_settings(_settings(tmp_path, control_fails=False, bl_holds=False))
    assert "The conclusion fails on 0 of 1" in bad and "`trainer:nc_x` 75% (70%–100%), still holds" in bad
    assert "cannot tell the proposition from" in bad
    assert "in the trainer arm a negative control still shows it, so there the check does not establish" in bad
    assert "than the baseline on 0 of 2 checks (none)" in bad and "that holds only on none" in bad


def _summary(tmp_path, lowered=1620, runs=1620, mut_p=0.16, mut_bl=1.57):
    rows = [["all", "all", runs, lowered, lowered / runs, 0.998, 1.0, 0.01, 0.0, 0.02, 0.16, 52.0, 8.7, 1.0, 7.3,
             1.6, 1.6, 0.16, mut_p, mut_bl],
            ["iteration", "50", runs, runs, 1.0, 0.99, 1.0, 0, 0, 0, 0.33, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            ["iteration", "400", runs, lowered, lowered / runs, 0.99, 1.0, 0, 0, 0, 0.16, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            ["variant", "default", 20, 20, 1.0, 0.8, 1.0, 0, 0, 0, 0.19, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            ["variant", "replace_immature", 20, 12, 0.62, 0.54, 0.68, 0, 0, 0, 0.94, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            ["variant", "x_prime_is_factual_T0", 20, 20, 1.0, 0.8, 1.0, 0, 0, 0, 0.4, 0, 0.34, float("nan"), 0, 0,
             0, 0, 5.9, 0]]
    p = tmp_path / "prop31_summary.csv"
    pd.DataFrame(rows, columns=COLS).to_csv(p, index=False)
    return p


def test_closed_form_sentences_carry_the_summarys_numbers(tmp_path):
    text = render_findings(_summary(tmp_path))
    assert "in all 1620 paired runs" in text and "median ratio of the protected to the unprotected" in text
    assert "is 7.30 without protection, 1.60 with it and 1.60 for the baseline: protection acts" in text
    assert "step 50" in text and "0.33" in text
    assert "Under `replace_immature` the share is 62% (Wilson 95% interval 54%–68%, median ratio 0.94)" in text
    assert "below the baseline's in 1% (0%–2%) of the runs; the medians are 8.70 (protected CT) and 1.00" in text
    assert "0.16 for protected CT and 1.57 for the baseline: CT shrinks the mutable coefficient, against" in text
    assert "is 5.90 and its relative sensitivity 0.34." in text
    assert "in 1500 of 1620 paired runs" in render_findings(_summary(tmp_path, lowered=1500))
    assert "CT grows the mutable coefficient, as the proof" in render_findings(_summary(tmp_path, mut_p=2.0))


def test_percentages_never_round_a_share_to_certainty():
    from ctbench.report.text.prop31_text import _pct

    assert (_pct(0.998), _pct(0.003), _pct(1.0), _pct(0.0), _pct(0.62)) == ("99.8%", "0.3%", "100%", "0%", "62%")


def test_violations_sentence(tmp_path):
    p = tmp_path / "v.csv"
    pd.DataFrame({"kind": ["clean", "rho-0.8", "flip"], "runs": [20, 180, 180], "lowered": [20, 100, 180],
                  "share": [1.0, 0.556, 1.0], "ci_low": [0.8, 0.483, 0.979], "ci_high": [1.0, 0.627, 1.0]}).to_csv(
        p, index=False)
    text = render_violations(p)
    assert "`flip` 100% (98%–100%, 180 runs); `rho-0.8` 56% (48%–63%, 180 runs)" in text
    assert "(`clean`) it is 100% (80%–100%)" in text and "under 1 of 2 violations: `flip`." in text


def test_missing_settings_file_gives_a_note(tmp_path):
    assert "Not yet run" in render_settings_section(tmp_path) and "Not yet run" in render_settings_section(None)
