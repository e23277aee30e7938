"""The book's figure includes: robustness, Figure 1 and the MNIST figures, the Proposition 3.1 check and the grid
searches (figures with their tables). A figure that is missing gives a "not yet run" note on its own line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...facts import OBJECTIVE_LABELS
from ..common import not_run_note, paper_sorted, read_report_csv
from ..markdown import frame_to_markdown
from .md import fmt_num, md_figure
from .table_pages import constant_columns, merge_columns

#: figures of chapter 4: file → caption
PAPER_FIGURES = {
    "figure1.png": "Figure 1: counterfactuals of a conventionally trained model and of CT, without and with a "
                   "mutability constraint (the paper's proof-of-concept figure). Panels (b) and (d), the linear CT "
                   "models with both features mutable and with age immutable, are also the CT appendix's mutability "
                   "figure (`app_mtblty.svg`: scatter and decision boundary, (a) both mutable, (b) one immutable), "
                   "drawn once here.",
    "black_figure1.png": "Black et al. (ICLR 2022) Figure 1: (a) the data (Moons), (b) where two MLPs trained from "
                         "different seeds disagree, (c) the same for two linear models; the titles give the shaded "
                         "share of the plotted area (`black_figure1.csv`: the grid's predictions).",
    "black_figure2.png": "Black et al. (ICLR 2022) Figure 2: (a) a small ReLU MLP (2×8) on Moons: every hidden "
                         "unit's activation constraint dashed, the decision boundary solid, and ∇f at four test "
                         "points whose activation regions are shaded (blue, green, purple: the boundary crosses the "
                         "region and ∇f is orthogonal to it; yellow: it does not, and ∇f is orthogonal to an "
                         "extension of a nearby piece); (b) σ(t·x′) against t from the zero baseline (Eq. 4) for "
                         "Min-ℓ2 and Min-ℓ2 + SNS counterfactuals of the same test factuals, split by whether the "
                         "target is the class of x = 0; the titles give the median of maxₜ dσ/dt "
                         "(`black_figure2.json`: the medians, `black_figure2.csv`: per counterfactual).",
    "mnist_counterfactuals.png": "Figure 2 of the paper (columns 1–5), MNIST: a factual 0 and ECCo counterfactuals "
                                 "in target classes 1 to 4, BL (top) and CT (bottom).",
    "mnist_attribution.png": "Figure 2 of the paper (columns 6–10), MNIST: integrated gradients averaged over test "
                             "images of classes 5 to 9, BL (top) and CT (bottom); the protected pixel rows should be "
                             "blue (insensitive) for CT.",
}


def render_robustness(report: Path | None) -> str:
    if report is None or not (report / "robustness.png").exists():
        if read_report_csv(report, "robustness.csv") is not None:
            return "The robustness table exists but its figure is missing; see `robustness.csv`.\n"
        return not_run_note("robustness.png", "stage `robustness`: FGSM and PGD accuracy over ε")
    out = md_figure("robustness.png", "Test accuracy under FGSM and PGD attacks over the perturbation size ε "
                  "(paper: Fig. 3 in the preprint, Fig. 5 in the final version).", "fig-robustness")
    df = read_report_csv(report, "robustness.csv")
    if df is not None and {"attack", "eps", "accuracy", "dataset"} <= set(df.columns):
        df = paper_sorted(df, relabel=True)
        df["model"] = df["objective"].map(lambda o: OBJECTIVE_LABELS.get(o, o)) if "objective" in df.columns \
            else df.get("model", "")
        summ = df.groupby(["dataset", "attack", "model"], sort=False)["accuracy"].agg(
            clean=lambda a: a.iloc[0], mean_over_eps="mean", at_max_eps=lambda a: a.iloc[-1]).reset_index()
        out += ("\nAccuracy per dataset, attack and model: clean (ε = 0), mean over the ε grid and at the largest "
                "ε.\n\n" + frame_to_markdown(summ, digits=3))
    return out


def _g(v: float) -> str:
    return f"{float(v):.3g}"


def render_black_figure2_finding(report: Path | None) -> str:
    """What panel (b) of Black et al.'s Figure 2 shows in this run, read from ``black_figure2.json`` (the medians)
    and ``black_figure2.csv`` (costs): whether SNS flattens σ(t·x′) on each kind of path, which the paper's caption
    asserts for every counterfactual. Empty when the figure did not run."""
    if report is None or not (report / "black_figure2.json").exists():
        return ""
    import json

    flat = json.loads((report / "black_figure2.json").read_text())["flatness"]
    table = read_report_csv(report, "black_figure2.csv")
    both = table.groupby("row")["valid"].transform("all")
    cost = table[both].groupby("method")["cost_l2"].median()
    sentences = []
    for part, what in (("target_is_baseline_class", "whose target is the class the model gives x = 0"),
                       ("target_is_other_class", "whose path from x = 0 must cross the decision boundary")):
        m = flat.get(part, {})
        if "min_l2" not in m or "min_l2+sns" not in m:
            continue
        a, b = m["min_l2"]["median_max_slope"], m["min_l2+sns"]["median_max_slope"]
        verb = "lowers" if b < a else "raises"
        sentences.append(f"on the {m['min_l2']['n']} counterfactuals {what}, SNS {verb} the median maxₜ dσ/dt from "
                         f"{_g(a)} to {_g(b)}")
    if not sentences:
        return ""
    out = "In this run (`black_figure2.json`), " + "; ".join(sentences) + "."
    allm = flat.get("all", {})
    if {"min_l2", "min_l2+sns"} <= set(cost.index) and {"min_l2", "min_l2+sns"} <= set(allm):
        i0, i1 = allm["min_l2"]["median_sns_integral"], allm["min_l2+sns"]["median_sns_integral"]
        out += (f" SNS moves x′ from the factual by a median ℓ2 cost of {_g(cost['min_l2+sns'])} against "
                f"{_g(cost['min_l2'])} and {'raises' if i1 > i0 else 'does not raise'} the path integral "
                f"of σ it maximises (Eq. 5; median {_g(i0)} → {_g(i1)}); as dσ(t·x′)/dt = ∇σ(t·x′)·x′ grows "
                "with ‖x′‖, a path that must cross the boundary can get steeper. The paper's caption (SNS gives the "
                "flatter curve) holds where the slope falls.")
    return out + "\n"


def render_paper_figures(report: Path | None) -> str:
    parts = []
    for fname, caption in PAPER_FIGURES.items():
        stem = Path(fname).stem
        if report is not None and (report / fname).exists():
            parts.append(md_figure(fname, caption, f"fig-{stem.replace('_', '-')}"))
            if fname == "black_figure2.png" and (finding := render_black_figure2_finding(report)):
                parts.append(finding)
        else:
            # the note's fence must open a line of its own, else MyST shows it as text
            parts.append(f"**{caption.split(':')[0].split(', ')[-1]}.**\n\n" + not_run_note(fname))
    return "\n".join(parts)


def _prop31_compact(df: pd.DataFrame) -> pd.DataFrame:
    """The Prop 3.1 summary in 7 columns: the share with its interval, and u / p / bl triples in one cell each."""
    def triple(u: object, p: object, bl: object) -> str:
        return " / ".join(fmt_num(v, 3) for v in (u, p, bl))

    def share(s: object, lo: object, hi: object) -> str:
        return f"{fmt_num(s, 2)} [{fmt_num(lo, 2)},\u00a0{fmt_num(hi, 2)}]"

    df = merge_columns(df, "lowered / runs", ["lowered", "runs"], lambda lo, n: f"{fmt_num(lo, 0)} / {fmt_num(n, 0)}")
    df = merge_columns(df, "share lowered [95%]", ["share", "ci_low", "ci_high"], share)
    df = merge_columns(df, "median RS u / p / bl", ["median_rs_u", "median_rs_p", "median_rs_bl"], triple)
    df = merge_columns(df, "accuracy u / p / bl", ["acc_u", "acc_p", "acc_bl"], triple)
    return df.drop(columns=[c for c in df.columns if c.startswith("median_abs_w_")])


def render_prop31(report: Path | None) -> tuple[str, str]:
    """The Proposition 3.1 check (``prop31/`` of the report): results (summary + figures) and the violations."""
    pdir = report / "prop31" if report is not None else None
    if pdir is None or not (pdir / "prop31_summary.csv").exists():
        note = not_run_note("prop31/prop31_summary.csv", "stage `prop31`: `ctbench prop31`")
        return note, note
    summary = _prop31_compact(pd.read_csv(pdir / "prop31_summary.csv"))
    parts = ["Share of paired runs in which protection lowered the relative sensitivity (Wilson 95% interval): "
             "overall (`by = all`), by sample size, mean gap and standard deviations, at training checkpoints "
             "(`by = iteration`) and for the training variants (`by = variant`). Medians of the relative "
             "sensitivity and test accuracy for unprotected CT / protected CT / baseline; the weights' medians "
             "are in `prop31/prop31_summary.csv`.\n\n" + frame_to_markdown(summary, digits=3)]
    for stem, caption in (("prop31_paths", "Coefficient paths (thin: seeds, bold: median) without and with "
                           "protection, and the relative sensitivity |w_imm| / |w_mut|."),
                          ("prop31_sensitivity", "Relative sensitivity with against without protection, one point "
                           "per run (below the diagonal: protection lowered it), and the per-run log ratio for "
                           "each violation of the assumptions.")):
        if (pdir / f"{stem}.png").exists():
            parts.append(md_figure(f"prop31/{stem}.png", caption, name=f"fig-{stem.replace('_', '-')}"))
    violations = pdir / "prop31_violations.csv"
    viol = (frame_to_markdown(_prop31_compact(pd.read_csv(violations)), digits=3) if violations.exists()
            else not_run_note("prop31/prop31_violations.csv", "stage `prop31`"))
    return "\n\n".join(parts), viol


def render_prop31_findings(report: Path | None) -> str:
    """The Prop 3.1 page's prose, every number from the run's own summary (:mod:`..text.prop31_text`)."""
    from ..text.prop31_text import render_findings, render_violations

    summary = report / "prop31" / "prop31_summary.csv" if report is not None else None
    if summary is None or not summary.exists():
        return not_run_note("prop31/prop31_summary.csv", "stage `prop31`")
    text = render_findings(summary)
    violations = summary.parent / "prop31_violations.csv"
    return text + ("\n" + render_violations(violations) if violations.exists() else "")


def render_prop31_settings(report: Path | None) -> str:
    from ..text.prop31_text import render_settings_section  # both arms per setting, with the negative controls

    return render_settings_section(report)


def render_grids(report: Path | None) -> str:
    from .appendix_pages import grid_caption

    gdir = report / "grids" if report is not None else None
    if gdir is None or not gdir.is_dir():
        return not_run_note("grids/", "stages `grids` and `tune`: appendix Notes 3, 5, 7, 9 and 11")
    parts = []
    tables = sorted(p for p in gdir.rglob("*.csv"))
    figures = sorted(p for p in gdir.rglob("*.png"))
    if not tables and not figures:
        return not_run_note("grids/*.png", "the grids folder is empty")
    for p in figures:
        rel = p.relative_to(report).as_posix()
        title = p.stem.replace("_", " ")
        paper = grid_caption(p.stem)  # the paper's figure numbers (appendix_book)
        caption = f"Grid search: {title} (`{rel}`)" + (f"; {paper}" if paper else "") + "."
        parts.append(f"## {title}\n\n" + md_figure(rel, caption))
    for p in tables:
        rel = p.relative_to(report).as_posix()
        df = pd.read_csv(p)
        shown, const = constant_columns(df.head(60))
        more = f"\n\n*First 60 of {len(df)} rows; the full table is `{rel}`.*" if len(df) > 60 else ""
        parts.append(f"## `{rel}`\n\n" + (const + "\n\n" if const else "") + frame_to_markdown(shown, digits=3)
                     + more)
    return "\n\n".join(parts)

