"""The book's includes for the consistency chapter (``paper/consistency.md``), from the report's consistency tables
(:mod:`..tables.consistency_tables`). A missing table gives a "not yet run" note, never an error."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..common import not_run_note, read_report_csv
from ..markdown import frame_to_markdown
from ..tables.consistency_tables import DATASET_ORDER

#: rows of 003's Table 1, in the paper's order
TABLE1_ROWS = ["Min L1", "Min L1 + SNS", "Min L2", "Min L2 + SNS", "Min eps PGD", "Min eps PGD + SNS",
               "Looveren et al.", "Pawelczyk et al."]


def _f(v: Any, digits: int = 2) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{float(v):.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def render_table1(report: Path | None) -> str:
    """003's Table 1 as the paper lays it out: one row per method, LOO / RS per dataset, ours over the paper's."""
    t = read_report_csv(report, "consistency_table1.csv")
    pub = pd.read_csv(Path(__file__).resolve().parent.parent / "published" / "black2022_table1_invalidation.csv")
    if t is None:
        return not_run_note("consistency_table1.csv", "part `black2022`", stage="consistency")
    cols = [d for d in DATASET_ORDER if d in set(t["dataset"]) or d == "Warfarin"]
    cols += [d for d in t["dataset"].unique() if d not in DATASET_ORDER]  # e.g. a synthetic set of a tiny run
    rows = []
    for m in TABLE1_ROWS + [m for m in t["method"].unique() if m not in TABLE1_ROWS]:
        row = [m]
        for d in cols:
            ours = t[(t["method"] == m) & (t["dataset"] == d)]
            p = pub[(pub["method"] == m) & (pub["dataset"] == d)]
            paper = f"({_f(p['iv_loo'].iloc[0])} / {_f(p['iv_rs'].iloc[0])})" if len(p) else "(–)"
            if d == "Warfarin":
                row.append(f"no data {paper}")
            elif ours.empty:
                row.append(f"– {paper}")
            else:
                r = ours.iloc[0]
                flag = "" if r["n_valid"] else " no valid CF"
                row.append(f"{_f(r['iv_loo'])} / {_f(r['iv_rs'])}{flag}<br>{paper}")
        rows.append(row)
    legend = ("Mean invalidation rate over valid counterfactuals, **LOO / RS**, ours on top and the paper's in "
              "parentheses (\"–\": the paper reports no value, its method had a low success rate). Warfarin has no "
              "offline copy of its data.\n\n")
    return legend + _table(["method", *cols], rows)


def render_cost(report: Path | None) -> str:
    t = read_report_csv(report, "consistency_table1.csv")
    if t is None:
        return not_run_note("consistency_table1.csv", "part `black2022`", stage="consistency")
    keep = ["method", "dataset", "validity", "n_valid", "cost_l1", "cost_l2", "pub_cost_l2", "sd_loo", "sd_rs"]
    t = t[[c for c in keep if c in t.columns]]
    return ("Share of valid counterfactuals, mean L1 and L2 cost of the valid ones (published L2 cost next to ours), "
            "and the standard deviation of the per-counterfactual invalidation rate.\n\n"
            + frame_to_markdown(t, digits=3))


def render_r2(report: Path | None) -> str:
    t = read_report_csv(report, "consistency_r2.csv")
    if t is None:
        return not_run_note("consistency_r2.csv", "part `black2022`", stage="consistency")
    return ("r² of a least-squares line of the invalidation rate on a predictor, over all valid counterfactuals "
            "of all methods of a dataset: `r2` on L2 cost with the RS and LOO models pooled (the paper's row), "
            "per source, on L1 cost, without the SNS methods, and on the two quantities of the paper's "
            "Theorem 2 — the base model's confidence and the log local Lipschitz estimate at the "
            "counterfactual.\n\n"
            + frame_to_markdown(t, digits=3))


def render_pairs(report: Path | None) -> str:
    t = read_report_csv(report, "consistency_sns_pairs.csv")
    if t is None:
        return not_run_note("consistency_sns_pairs.csv", "part `black2022`", stage="consistency")
    return ("Each base method against itself followed by SNS: `delta` = IV(method + SNS) − IV(method), ours and "
            "the paper's (`pub_delta`); negative = SNS makes the counterfactuals more consistent.\n\n"
            + frame_to_markdown(t, digits=3))


def render_figure(report: Path | None) -> str:
    if report is None or not (report / "consistency_iv.png").exists():
        return not_run_note("consistency_iv.png", "part `black2022`", stage="consistency")
    return ("```{figure} /_generated/report/consistency_iv.png\n:name: fig-consistency-iv\n:width: 95%\n\n"
            "Invalidation rate (RS and LOO pooled) against the base model's confidence at the counterfactual (left) "
            "and against the local Lipschitz estimate of its class probability (right), binned means per dataset; "
            "solid: the methods without SNS, dashed: with SNS.\n```\n")


def _iv(r: pd.Series, c: str) -> str:
    s = _f(r.get(c), 3)
    lb, ub = r.get(f"{c}_lb"), r.get(f"{c}_ub")
    return s + ("" if lb is None or pd.isna(lb) else f" [{_f(lb, 3)}, {_f(ub, 3)}]")


def render_ct(report: Path | None) -> str:
    t, d = read_report_csv(report, "consistency_ct.csv"), read_report_csv(report, "consistency_ct_delta.csv")
    if t is None or d is None:
        return not_run_note("consistency_ct.csv", "part `ct`", stage="consistency")
    rows = []
    for _, r in d.iterrows():
        for src in ("loo", "rs"):
            ct = t[(t["dataset"] == r["dataset"]) & (t["method"] == r["method"]) & (t["model"] == "CT")]
            bl = t[(t["dataset"] == r["dataset"]) & (t["method"] == r["method"]) & (t["model"] == "BL")]
            if ct.empty or bl.empty:
                continue
            rows.append([str(r["dataset"]), str(r["method"]), src.upper(), _iv(ct.iloc[0], f"iv_{src}"),
                         _iv(bl.iloc[0], f"iv_{src}"), _iv(r, f"delta_iv_{src}"),
                         f"{_f(ct.iloc[0]['cost_l2'])} / {_f(bl.iloc[0]['cost_l2'])}",
                         f"{_f(ct.iloc[0]['validity'])} / {_f(bl.iloc[0]['validity'])}", str(int(r["n_seeds"]))])
    legend = ("Mean invalidation rate over valid counterfactuals of CT and BL models, [Student-t 95% interval over "
              "training seeds]; Δ = CT − BL paired by seed (negative: CT's counterfactuals are more consistent). "
              "Cost: mean L2 cost CT / BL; validity CT / BL.\n\n")
    return legend + _table(["data", "method", "source", "IV CT", "IV BL", "Δ CT − BL", "cost CT / BL",
                            "validity CT / BL", "seeds"], rows)


def answer(report: Path | None) -> str:
    """The CT × consistency answer in words, counted from ``consistency_ct_delta.csv``."""
    d = read_report_csv(report, "consistency_ct_delta.csv")
    if d is None:
        return not_run_note("consistency_ct_delta.csv", "part `ct`", stage="consistency")
    lines = []
    for sns in (False, True):
        g = d[d["method"].str.endswith("+ SNS") == sns]
        if g.empty:
            continue
        for src in ("loo", "rs"):
            c, lb, ub = g[f"delta_iv_{src}"], g[f"delta_iv_{src}_lb"], g[f"delta_iv_{src}_ub"]
            better, worse = int((ub < 0).sum()), int((lb > 0).sum())
            lines.append(f"- {'with' if sns else 'without'} SNS, {src.upper()}: CT's counterfactuals are "
                         f"significantly more consistent in {better} and less consistent in {worse} of {len(g)} "
                         f"(dataset, method) cells; mean Δ IV = {c.mean():+.3f}.")
        cost = g["delta_cost_l2"]
        lines.append(f"- {'with' if sns else 'without'} SNS, cost: mean Δ L2 cost CT − BL = {cost.mean():+.3f} "
                     f"(significantly lower for CT in {int((g['delta_cost_l2_ub'] < 0).sum())}, higher in "
                     f"{int((g['delta_cost_l2_lb'] > 0).sum())} of {len(g)} cells).")
    return ("Counted from the table above (a cell counts when its 95% interval over seeds excludes 0):\n\n"
            + "\n".join(lines) + "\n")


def render_models(report: Path | None) -> str:
    t = read_report_csv(report, "consistency_models.csv")
    if t is None:
        return not_run_note("consistency_models.csv", "stage `consistency`", stage="consistency")
    return ("Test accuracy of each base model and the mean over its retrained models, failed (diverged) members, "
            "and the CPU seconds of each job (training, and everything).\n\n" + frame_to_markdown(t, digits=3))


def render_boxes(report: Path | None) -> str:
    """The chapter's section: both boxes side by side, ours over the paper's in parentheses."""
    path = None if report is None else Path(report).parent / "consistency_boxes" / "summary.csv"
    if path is None or not path.exists():
        return ("*Not yet run: `paper/results/consistency_boxes/summary.csv` (Min-ℓ1/ℓ2 under both elastic-net "
                "boxes) is absent.*\n")
    t = pd.read_csv(path)
    header = ["method", "dataset", "box", "success", "IV LOO", "IV RS", "L1 cost", "L2 cost"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for _, r in t.sort_values(["method", "dataset", "box"], kind="stable").iterrows():
        lines.append("| " + " | ".join([
            r["method"], r["dataset"], f"`{r['box']}`", f"{_f(r['validity'])} ({_f(r['pub_validity'])})",
            f"{_f(r['iv_loo'])} ({_f(r['pub_iv_loo'])})", f"{_f(r['iv_rs'])} ({_f(r['pub_iv_rs'])})",
            _f(r["cost_l1"]), f"{_f(r['cost_l2'])} ({_f(r['pub_cost_l2'])})"]) + " |")
    legend = ("Min-ℓ1 and Min-ℓ2 under the two boxes of the elastic-net search (fidelity switch `elastic_net_box`): "
              "`art`, stock ART's [0, 1] clamp in every shrinkage step and one scalar clip range at the end (what "
              "the authors ran, and the default), and `feature`, each feature's own domain (the `paper` preset). "
              "Success rate over the factuals; mean invalidation rate (LOO, RS) and mean cost over the valid "
              "counterfactuals; the paper's values in parentheses (\"–\": not published; success rates from App. B.3 "
              "Table 2).\n\n")
    return legend + "\n".join(lines) + "\n"


def pages(report: Path | None) -> dict[str, str]:
    """Include name → Markdown for ``book.render_includes`` (tables here, prose from :mod:`..text.consistency_text`)."""
    from ..text.consistency_text import pages as text_pages
    from .consistency_causes import render_causes
    from .consistency_published import render_table as render_published
    from .consistency_published import render_text as render_published_text
    from .consistency_target import render_target

    return {"consistency_table1": render_table1(report), "consistency_cost": render_cost(report),
            "consistency_published": render_published(report),
            "consistency_published_text": render_published_text(report),
            "consistency_causes": render_causes(),
            "consistency_target": render_target(report),
            "consistency_r2": render_r2(report), "consistency_pairs": render_pairs(report),
            "consistency_figure": render_figure(report), "consistency_ct": render_ct(report),
            "consistency_answer": answer(report), "consistency_models": render_models(report),
            **text_pages(report)}


__all__ = ["TABLE1_ROWS", "answer", "pages", "render_boxes"]
