"""The prose of the Proposition 3.1 page, every number read from the run's own files (issue 14, item 5).

``prop31_summary.csv`` and ``prop31_violations.csv`` (closed-form arm) and ``prop31_settings.csv`` (both arms, per
setting, with the reference points and the negative controls). Judgements in the prose ("holds", "fails", "above
the baseline") are computed from the same numbers, so a run that comes out differently gets different sentences.
The only constants typed here are the design's (read from the code's defaults) and the 95% of the intervals.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pandas as pd

from ...experiments.prop31.closed_form import TrainConfig
from ...experiments.prop31.stats import HOLDS_ABOVE
from ...experiments.prop31.trainer_arm import TrainerArmConfig
from ..markdown import frame_to_markdown

SETTINGS = "prop31_settings.csv"


def _row(df: pd.DataFrame, by: str, group: str) -> pd.Series | None:
    r = df[(df["by"] == by) & (df["group"].astype(str) == group)]
    return None if r.empty else r.iloc[0]


def _pct(v: float) -> str:
    """Whole percent, one decimal where that would round a share strictly inside (0, 1) to 0% or 100%."""
    v = float(v)
    return f"{100 * v:.1f}%" if 0 < v < 1 and round(100 * v) in (0, 100) else f"{100 * v:.0f}%"


def _ci(r: pd.Series, suffix: str = "") -> str:
    return f"{_pct(r['share' + suffix])} ({_pct(r['ci_low' + suffix])}–{_pct(r['ci_high' + suffix])})"


def _share(r: pd.Series) -> str:
    return (f"{_pct(r['share'])} (Wilson 95% interval {_pct(r['ci_low'])}–{_pct(r['ci_high'])}, median ratio "
            f"{float(r['median_ratio']):.2f})")


def _names(items) -> str:
    items = [f"`{i}`" for i in items]
    return ", ".join(items) if items else "none"


def render_design(settings_csv: str | Path) -> str:
    """The design of this build: run counts from the settings file, training constants from the code's defaults."""
    s = pd.read_csv(settings_csv)
    cf, tr = TrainConfig(), asdict(TrainerArmConfig())
    grid = s[s["case"] == "closed_form:default_grid"]
    trainer = s[s["arm"] == "trainer"]
    out = ["Design of this build (run counts from `prop31_settings.csv`, constants from the code's defaults):", ""]
    if len(grid):
        g = grid.iloc[0]
        out.append(f"* closed-form arm: {int(g['runs'])} paired runs on the default grid (n = {g['n']} per class), "
                   f"full-batch gradient descent from zero, learning rate {cf.lr:g}, {cf.n_iter} steps; "
                   f"λ_div = {cf.lambda_div:g}, λ_reg = {cf.lambda_reg:g}; {cf.n_cf} counterfactuals per step by "
                   f"the Generic search (step {cf.step_size:g}, τ = {cf.tau:g}, T ≤ {cf.max_iter});")
    if len(trainer):
        out.append(f"* trainer arm: {len(trainer)} settings × {int(trainer['runs'].max())} seeds through "
                   f"`train_population` ({tr['objective']} objective, λ_div = {tr['lambda_div']:g}, λ_reg = "
                   f"{tr['lambda_reg']:g}, λ_adv = {tr['lambda_adv']:g}, {tr['generator']} search with τ = "
                   f"{tr['tau']:g}, T ≤ {tr['max_iter']}, Adam with learning rate {float(trainer['lr'].iloc[0]):g}, "
                   f"batch {tr['batch_size']}, {int(trainer['epochs'].iloc[0])} epochs, n = "
                   f"{', '.join(sorted(set(trainer['n'].astype(str))))} per class);")
    out.append(f"* a setting shows the conclusion when the Wilson 95% lower bound of its share of runs exceeds "
               f"{HOLDS_ABOVE:g}.")
    return "\n".join(out) + "\n"


def render_findings(summary_csv: str | Path) -> str:
    """Markdown paragraphs on the closed-form arm: default grid, checkpoints, variants and the baseline."""
    summary_csv = Path(summary_csv)
    df = pd.read_csv(summary_csv)
    allr = _row(df, "all", "all")
    if allr is None:
        raise ValueError(f"{summary_csv}: no 'all' row")
    out = [render_design(summary_csv.parent / SETTINGS)] if (summary_csv.parent / SETTINGS).exists() else []
    n, low = int(allr["runs"]), int(allr["lowered"])
    every = "in all" if low == n else f"in {low} of"
    imm_u, imm_p, imm_bl = (float(allr[f"median_abs_w_imm_{a}"]) for a in ("u", "p", "bl"))
    text = (f"Closed-form arm, default grid: protection lowered the relative sensitivity {every} {n} paired runs "
            f"(share {float(allr['share']):.2f}, Wilson 95% interval {float(allr['ci_low']):.3f}–"
            f"{float(allr['ci_high']):.3f}); the median ratio of the protected to the unprotected relative "
            f"sensitivity is {float(allr['median_ratio']):.2f}. The median $|w_{{\\mathrm{{imm}}}}|$ is "
            f"{imm_u:.2f} without protection, {imm_p:.2f} with it and {imm_bl:.2f} for the baseline")
    if imm_u > imm_p and abs(imm_p - imm_bl) < abs(imm_u - imm_bl):
        text += ": protection acts as the proof's immutable step says, by keeping the divergence from inflating it."
    else:
        text += "."
    its = df[df["by"] == "iteration"].assign(step=lambda d: d["group"].astype(int)).sort_values("step")
    if len(its) >= 2:
        first, last = its.iloc[0], its.iloc[-1]
        text += (f" At the first checkpoint (step {first['step']}) the share is {float(first['share']):.2f} with "
                 f"median ratio {float(first['median_ratio']):.2f}; at step {last['step']} the ratio is "
                 f"{float(last['median_ratio']):.2f}.")
    out.append(text)
    variants = df[df["by"] == "variant"].set_index("group")
    if len(variants):
        holds = [g for g, r in variants.iterrows() if int(r["lowered"]) == int(r["runs"])]
        weak = [g for g in variants.index if g not in holds]
        text = (f"Training variants of the closed-form arm (`by = variant`, {int(variants['runs'].iloc[0])} runs "
                f"each): protection lowered the relative sensitivity in every run for {_names(holds)}.")
        for g in weak:
            text += f" Under `{g}` the share is {_share(variants.loc[g])}."
        out.append(text)
    if "share_bl" in allr.index and pd.notna(allr["share_bl"]):
        rs_p, rs_bl = float(allr["median_rs_p"]), float(allr["median_rs_bl"])
        mut_p, mut_bl = float(allr["median_abs_w_mut_p"]), float(allr["median_abs_w_mut_bl"])
        out.append(f"Against the baseline (closed-form arm): protected CT's relative sensitivity is below the "
                   f"baseline's in {_ci(allr, '_bl')} of the runs; the medians are {rs_p:.2f} (protected CT) and "
                   f"{rs_bl:.2f} (baseline). The median $|w_{{\\mathrm{{mut}}}}|$ is {mut_p:.2f} for protected CT "
                   f"and {mut_bl:.2f} for the baseline: CT {'shrinks' if mut_p < mut_bl else 'grows'} the mutable "
                   f"coefficient" + (", against the proof's account (which has it grow)." if mut_p < mut_bl else
                                     ", as the proof's account has it."))
    t0 = variants.loc["x_prime_is_factual_T0"] if "x_prime_is_factual_T0" in variants.index else None
    if t0 is not None:
        out[-1] += (f" In the $T = 0$ variant, where $x'$ stays at the factual, the protected model's median "
                    f"$|w_{{\\mathrm{{mut}}}}|$ is {float(t0['median_abs_w_mut_p']):.2f} and its relative "
                    f"sensitivity {float(t0['median_rs_p']):.2f}.")
    return "\n\n".join(out) + "\n"


def render_violations(violations_csv: str | Path) -> str:
    """One sentence per broken assumption: the share of runs in which protection still lowered the sensitivity."""
    df = pd.read_csv(violations_csv)
    clean = df[df["kind"] == "clean"]
    df = df[df["kind"] != "clean"].sort_values("share", ascending=False)
    parts = [f"`{r['kind']}` {_pct(r['share'])} ({_pct(r['ci_low'])}–{_pct(r['ci_high'])}, {int(r['runs'])} runs)"
             for _, r in df.iterrows()]
    survives = df[df["ci_low"] > HOLDS_ABOVE]["kind"].tolist()
    text = ("Share of runs in which protection still lowered the relative sensitivity, per broken assumption "
            "(closed-form arm, Wilson 95% interval): " + "; ".join(parts) + ". ")
    if len(clean):
        text += f"With all assumptions in place (`clean`) it is {_ci(clean.iloc[0])}. "
    text += (f"The conclusion survives (lower bound above {HOLDS_ABOVE:g}) under {len(survives)} of {len(df)} "
             f"violations: {_names(survives)}.")
    return text + "\n"


def _table(s: pd.DataFrame) -> str:
    cols = ["case", "role", "K", "D", "runs", "share_vs_u", "ci_low_vs_u", "holds_vs_u", "conclusion_fails",
            "share_vs_bl", "ci_low_vs_bl", "holds_vs_bl", "median_rs_u", "median_rs_p", "median_rs_bl",
            "median_sens_imm_p", "median_sens_imm_bl", "median_sens_rest_p", "median_sens_rest_bl", "mature_p"]
    t = s[[c for c in cols if c in s.columns]].astype(object)
    return frame_to_markdown(t.where(t.notna(), ""), digits=3)


def render_settings(settings_csv: str | Path) -> str:
    """The per-setting table of both arms and the sentences on the checks, the negative controls, the baseline and
    what the check does and does not show."""
    s = pd.read_csv(settings_csv)
    checks, controls = s[s["role"] == "check"], s[s["role"] == "negative_control"]
    out = ["Per arm and setting (`case`): share of paired runs in which protected CT's relative sensitivity is "
           "below unprotected CT's (`_vs_u`) and below the baseline's (`_vs_bl`), the Wilson 95% lower bound and "
           "whether it exceeds the threshold (`holds_…`); for the negative controls whether the conclusion fails; "
           "medians of the relative sensitivity (`rs`) and of the sensitivity to the immutable feature "
           "(`sens_imm`) and to the others (`sens_rest`) per arm (`u`, `p`, `bl`); `mature_p` the mean share of "
           "counterfactuals that reached τ (trainer arm).\n\n" + _table(s)]
    held = checks[checks["holds_vs_u"].astype(bool)]
    text = (f"**Against unprotected CT (the proposition's comparison).** The conclusion holds on {len(held)} of "
            f"{len(checks)} settings where the proviso holds")
    missed = checks[~checks["holds_vs_u"].astype(bool)]
    text += "." if missed.empty else "; it does not on " + _names(missed["case"]) + "."
    text += " Shares: " + "; ".join(f"`{r['case']}` {_ci(r, '_vs_u')}" for _, r in checks.iterrows()) + "."
    out.append(text)
    if len(controls):
        failed = controls[controls["conclusion_fails"].astype(str).str.lower() == "true"]
        text = (f"**Negative controls (no other feature both discriminative and mutable).** The conclusion fails "
                f"on {len(failed)} of {len(controls)}: " + "; ".join(
                    f"`{r['case']}` {_ci(r, '_vs_u')}, "
                    f"{'fails' if str(r['conclusion_fails']).lower() == 'true' else 'still holds'}"
                    for _, r in controls.iterrows()) + ".")
        still = controls[controls["conclusion_fails"].astype(str).str.lower() != "true"]
        if len(still):
            text += (f" Where it still holds ({_names(still['case'])}), the check cannot tell the proposition from "
                     "the by-product of zeroing the divergence's gradient on the immutable feature: that step "
                     "needs no discriminative mutable feature.")
        tr_nc = failed[failed["arm"] == "trainer"]
        tr_ck = checks[checks["arm"] == "trainer"]
        if len(tr_nc) and len(tr_ck) and "mature_p" in s.columns and \
                tr_nc["mature_p"].mean() < tr_ck["mature_p"].mean():
            text += (f" In the trainer arm the mean share of counterfactuals that reach τ is "
                     f"{_pct(tr_nc['mature_p'].mean())} on the failing controls against "
                     f"{_pct(tr_ck['mature_p'].mean())} on the checks; ctbench replaces immature counterfactuals by "
                     "$x^+$, so without a "
                     "discriminative mutable feature the divergence has little to act on in either arm.")
        out.append(text)
    below = checks[checks["holds_vs_bl"].astype(bool)]
    text = (f"**Against the baseline (conventional training).** Protected CT relies less on the immutable feature, "
            f"relative to the others, than the baseline on {len(below)} of {len(checks)} checks "
            f"({_names(below['case'])}). " + "; ".join(
                f"`{r['case']}` {_ci(r, '_vs_bl')}, median rs {float(r['median_rs_p']):.2f} vs "
                f"{float(r['median_rs_bl']):.2f}" for _, r in checks.iterrows()) + ".")
    out.append(text)
    shows = checks["holds_vs_u"].astype(bool).all()
    bl_all = checks["holds_vs_bl"].astype(bool).all()
    fails = controls["conclusion_fails"].astype(str).str.lower() == "true"
    arm_names = controls["arm"].map({"closed_form": "closed-form"}).fillna(controls["arm"])
    arms_fail = [a for a, g in fails.groupby(arm_names) if g.all()]
    arms_hold = [a for a, g in fails.groupby(arm_names) if not g.all()]
    plain = ["**In plain words.** What this check shows: "
             + ("under the proposition's assumptions, on every setting tried in both arms, protecting the immutable "
                "feature makes CT rely less on it, relative to the others, than CT without protection"
                if shows else "the proposition's conclusion does not hold on every setting tried (see above)")]
    if arms_fail:
        plain[-1] += (f"; in the {' and '.join(arms_fail)} arm{'s' if len(arms_fail) > 1 else ''} every negative "
                      "control fails, so there the conclusion depends on the proviso")
    if arms_hold:
        plain[-1] += (f"; in the {' and '.join(arms_hold)} arm{'s' if len(arms_hold) > 1 else ''} a negative "
                      "control still shows it, so there the check does not establish that the proviso is what the "
                      "conclusion depends on")
    plain[-1] += "."
    plain.append("What it does not show: "
                 + ("that protected CT relies less on the immutable feature than a conventionally trained model "
                    "(which lower recourse costs under mutability constraints would need): that holds only on "
                    + _names(below["case"]) + "; "
                    if not bl_all else "")
                 + "anything beyond linear softmax models on Gaussian classes with these settings (non-linear "
                   "models, real data, other searches are not covered).")
    out.append(" ".join(plain))
    return "\n\n".join(out) + "\n"


def render_settings_section(report: Path | None) -> str:
    """The book's ``prop31_settings`` include: :func:`render_settings` or a note when the file is missing."""
    p = Path(report) / "prop31" / SETTINGS if report is not None else None
    if p is None or not p.exists():
        return ("```{note}\nNot yet run in this profile: `prop31/prop31_settings.csv` is not in the report folder "
                "(stage `prop31`: `ctbench prop31`). Run it, then rebuild the book.\n```\n")
    return render_settings(p)
