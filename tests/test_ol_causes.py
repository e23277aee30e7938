"""The discrepancies chapter's OL section (issue 25, items 4 and 2), rendered from the benchmark files: a changed file
changes the text, a missing one gives a note, a file without a needed column stops with its name."""

import shutil

import pandas as pd
import pytest

from ctbench.report.text.ol_causes_text import EVAL, STEP, TRAINING, published, render_ol_causes


def _row(variant, seed, ct, bl, basis="code", sd=0.01, mean=0.04, pm=9.0, star=True):
    return {"variant": variant, "what": f"what {variant}", "source": f"source {variant}", "basis": basis,
            "seed": seed, "n_runs": 100, "ct_validity": ct, "bl_validity": bl, "ip_star_reduction_pct": -33.0,
            "ip_star_pm": pm, "ip_star_significant": star, "ip_star_lb": 0.01, "ip_star_ub": 0.07,
            "ip_star_ct": 0.155, "ip_star_bl": 0.117, "ip_star_delta_mean": mean, "ip_star_delta_sd": sd}


@pytest.fixture
def files(tmp_path):
    ev = tmp_path / "ol-causes.csv"
    pd.DataFrame([_row("as run", 0, 0.70, 0.93), _row("as run", 1, 0.80, 0.95),
                  _row("step size 0.25", 0, 1.0, 1.0, "paper"), _row("step size 0.25", 1, 1.0, 1.0, "paper"),
                  _row("individuals by true label", 0, 0.86, 0.98, "diagnostic")]).to_csv(ev, index=False)
    tr = tmp_path / "ol-causes-training.csv"
    pd.DataFrame([_row("maturity", 0, 0.35, 0.93, "paper"),
                  _row("calibrated centres", 0, 0.64, 0.94, "paper")]).to_csv(tr, index=False)
    st = tmp_path / "ol-causes-step.csv"
    pd.DataFrame([{"seed": 0, "step_size": e, "n_runs": 25, "ct_validity": c, "bl_validity": b,
                   "ct_share_all_steps": 1.0, "bl_share_all_steps": 0.99, "ct_logit_slope": 1.1,
                   "bl_logit_slope": 1.4, "bayes_logit_slope": 1.44}
                  for e, c, b in ((0.1, 0.74, 0.93), (0.125, 0.87, 0.98), (0.25, 1.0, 1.0))]).to_csv(st, index=False)
    return ev, tr, st


def test_validity_rows_and_findings_come_from_the_files(files):
    text = render_ol_causes(*files)
    assert "| as run | evaluation | code | 2 | 0.75 (0.70–0.80) | 0.94 (0.93–0.95) |" in text
    assert "| maturity | training | paper | 1 | 0.35 | 0.93 |" in text
    assert ("on the same 1 seeds, CT's validity is 0.64 with the calibrated centres (the previous default) and 0.70 "
            "with the centres the authors' code draws") in text
    assert "| published (final version, Table 3) | | | one model | 0.86 | 0.98 |" in text
    assert "0 of 2 seeds come within 0.05 of the published 0.86" in text
    # the diagnostic row meets both published values, but only differences with a basis count
    assert "None brings both CT and BL within 0.05 of the published validities." in text
    assert "η = 0.125 comes nearest both published validities (CT 0.87, BL 0.98, mean over 1 seeds)" in text
    assert "100 % of CT's and 99 % of BL's test-time searches use all T = 50 steps" in text
    assert "IP*" not in text.replace("IP\\*", "")   # every star escaped: two never open an emphasis
    assert "|IP" not in text.split("### IP")[1].split("\n\n")[1]   # no |·| inside the IP* table's cells


def test_a_changed_file_changes_the_text(files):
    ev, tr, st = files
    df = pd.read_csv(ev)
    df.loc[(df["variant"] == "as run") & (df["seed"] == 1), "ct_validity"] = 0.84
    df.loc[df["variant"] == "step size 0.25", ["ct_validity", "bl_validity"]] = [0.88, 0.97]
    df.to_csv(ev, index=False)
    text = render_ol_causes(ev, tr, st)
    assert "1 of 2 seeds come within 0.05 of the published 0.86" in text
    assert "Within 0.05 of both published validities: step size 0.25 (0.88 / 0.97)." in text
    s = pd.read_csv(st)
    s.loc[s["step_size"] == 0.25, ["ct_validity", "bl_validity"]] = [0.86, 0.98]
    s.to_csv(st, index=False)
    assert "η = 0.25 comes nearest" in render_ol_causes(ev, tr, st)


def test_ip_star_spread_against_the_published_interval(files):
    ev, tr, st = files
    pub = published()
    assert (pub["lb"], pub["ub"], pub["pm"], pub["significant"]) == (-0.01, 0.05, 14.59, False)
    text = render_ol_causes(*files)
    # [−0.01, 0.05] → sd = 0.06 / (2·2.5758) = 0.0116, 0.0097–0.0136 with the rounding; ours 0.0100: inside
    assert "sd(Δ_r) = 0.0116 (0.0097–0.0136 with the rounding of the printed bounds)" in text
    assert "ours is 0.0100 per seed, inside that range: in IP\\*'s own units" in text
    assert "| as run | evaluation | code | 2 | -33.0 | 9.0 | 2 of 2 | 0.155 | 0.117 | 0.0100 |" in text
    assert "ours 0.040 per seed, 4.0 sd from 0" in text
    assert "the cell keeps its star on most seeds with every one; the ± reaches the published one with none." in text
    df = pd.read_csv(ev)
    df.loc[df["variant"] == "as run", "ip_star_delta_sd"] = 0.005
    df.to_csv(ev, index=False)
    text = render_ol_causes(ev, tr, st)
    assert "ours is 0.0050 per seed, below that range (ratio 0.43 to the implied value)." in text
    assert "8.0 sd from 0" in text
    df.loc[df["variant"] == "step size 0.25", ["ip_star_significant", "ip_star_pm"]] = [False, 15.0]
    df.to_csv(ev, index=False)
    pd.DataFrame([_row("step size 0.25", 0, 1.0, 1.0, "paper", star=False)]).to_csv(tr, index=False)
    text = render_ol_causes(ev, tr, st)
    assert ("the cell loses its star on most seeds with step size 0.25, step size 0.25 (retrained); the ± reaches "
            "the published one with step size 0.25.") in text


def test_missing_and_bad_files(files, tmp_path):
    ev, tr, st = files
    assert "Not yet measured" in render_ol_causes(tmp_path / "a.csv", tmp_path / "b.csv", st)
    assert "comes nearest" not in render_ol_causes(ev, tr, tmp_path / "none.csv")
    assert "| maturity |" not in render_ol_causes(ev, tmp_path / "none.csv", st)
    pd.read_csv(ev).drop(columns="ip_star_delta_sd").to_csv(ev, index=False)
    with pytest.raises(ValueError, match=r"ol-causes\.csv: column\(s\) \['ip_star_delta_sd'\] missing"):
        render_ol_causes(ev, tr, st)


def test_the_committed_files_render(tmp_path):
    """The chapter's include is rendered from the committed files (copied, so that the test reads what is there)."""
    paths = []
    for f in (EVAL, TRAINING, STEP):
        shutil.copy(f, tmp_path / f.name)
        paths.append(tmp_path / f.name)
    assert render_ol_causes(*paths) == render_ol_causes()
