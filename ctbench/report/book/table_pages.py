"""The book's result tables (Table 1 to 3, the appendix tables, the ablation) as Markdown includes.

Tables are kept narrow enough to read without sideways scrolling: an estimate and its ± or interval share one cell,
our value and the published one are stacked in one cell, and columns that hold one value in every row move into the
sentence above the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ...facts import OBJECTIVE_LABELS
from ..common import not_run_note, paper_sorted, read_report_csv, truthy
from ..markdown import frame_to_markdown
from .md import cell_text, fmt_num, is_missing, md_table

#: Table 1's published versions: column prefix → label
TABLE1_VERSIONS = (("preprint_2025_07", "July 2025"), ("satml_2026", "final"), ("preprint_2025_03", "March 2025"))


def cell_reduction(v: Any, pm: Any, sig: Any) -> str:
    if is_missing(v):
        return "—"
    s = f"{float(v):.2f}"
    if not is_missing(pm):
        s += f"\u00a0±\u00a0{float(pm):.2f}"
    return s + ("\\*" if truthy(sig) else "")


def interval_cell(lb: Any, ub: Any, digits: int = 1) -> str:
    return "" if is_missing(lb) or is_missing(ub) else f"[{float(lb):.{digits}f},\u00a0{float(ub):.{digits}f}]"


def merge_columns(df: pd.DataFrame, label: str, cols: Sequence[str], fmt: Callable[..., str]) -> pd.DataFrame:
    """Replace ``cols`` (when the first is present) by one text column ``label`` = ``fmt(*values)`` where the
    earliest of them stood; absent companions are passed as NaN."""
    if cols[0] not in df.columns:
        return df
    values = [fmt(*[r.get(c, float("nan")) for c in cols]) for _, r in df.iterrows()]
    present = [c for c in cols if c in df.columns]
    pos = min(df.columns.get_loc(c) for c in present)   # where the first merged column stood
    df = df.drop(columns=present)
    df.insert(pos, label, values)
    return df


#: columns that describe how a table was computed (not results): said once above the table when constant
SETTING_COLUMNS = ("metric", "significant", "n_runs", "n_rows", "n_boot", "n_ratio", "level", "n_seeds",
                   "experiment", "epochs", "n_individuals")


def constant_columns(df: pd.DataFrame, keep: Sequence[str] = (),
                     only: Sequence[str] | None = None) -> tuple[pd.DataFrame, str]:
    """Drop the columns (of ``only``, default all but ``keep``) that hold one value in every row (three rows or
    more) and say them in a sentence."""
    if len(df) < 3:
        return df, ""
    const = [c for c in df.columns if c not in keep and (only is None or c in only)
             and df[c].nunique(dropna=False) == 1]
    if not const or len(const) == len(df.columns):
        return df, ""
    first = {c: df[c].iloc[0] for c in const}
    said = ", ".join(f"{cell_text(c)} = {cell_text(fmt_num(v, 3) if isinstance(v, float) else v)}"
                     for c, v in first.items())
    return df.drop(columns=const), f"Every row has {said}."


def with_interval(digits: int) -> Callable[[Any, Any, Any], str]:
    """A cell formatter ``estimate [lb, ub]``."""
    return lambda v, lb, ub: f"{fmt_num(v, digits)} {interval_cell(lb, ub, digits)}".strip()


def render_table1(report: Path | None) -> str:
    """Table 1, one row per cell: ours with the paper's ± and star over the interval across training seeds, every
    published version, and the agreement with the July 2025 preprint; notes go below the table."""
    df = read_report_csv(report, "table1.csv")
    if df is None or "reduction_pct" not in df.columns or (df["reduction_pct"].isna().all() and "flag" not in df):
        return not_run_note("table1.csv", "experiments `single` and `mutability`")
    versions = [(v, lab) for v, lab in TABLE1_VERSIONS if f"{v}_reduction_pct" in df.columns]
    order = {"IP": 0, "IP*": 1, "Cost": 2}
    df = paper_sorted(df.assign(_m=df["metric"].map(order)).sort_values(["_m"], kind="stable"), relabel=True)
    n_seeds = df["n_seeds"].dropna().unique() if "n_seeds" in df.columns else []
    one_n = len(n_seeds) == 1
    header = ["Data", "metric", "ours<br>seeds (95%)", *[lab for _, lab in versions], "vs July"]
    rows, notes = [], []
    for _, r in df.iterrows():
        seeds = interval_cell(r.get("seed_lb"), r.get("seed_ub"))
        if seeds and not one_n and not is_missing(r.get("n_seeds")):
            seeds += f" (n={int(r['n_seeds'])})"
        ours = cell_reduction(r["reduction_pct"], r.get("pm"), r.get("significant"))
        row = [str(r["dataset"]), str(r["metric"]), f"{ours}<br>{seeds}" if seeds else ours]
        for v, _ in versions:
            row.append(cell_reduction(r.get(f"{v}_reduction_pct"), r.get(f"{v}_pm"), r.get(f"{v}_significant")))
        agree = r.get("preprint_2025_07_agreement", "")
        agree = "" if is_missing(agree) else str(agree)
        row.append("**disagrees**" if agree == "disagrees" else agree)
        rows.append(row)
        flag = r.get("flag", "")
        if not is_missing(flag) and str(flag).strip():
            notes.append(f"- {r['dataset']} {r['metric']}: {cell_text(flag)}")
    n_text = f" over n = {int(n_seeds[0])} training seeds" if one_n else ""
    legend = ("Percent reduction CT vs BL (positive = CT better). *ours*: the paper's recipe over all (training "
              "seed, evaluation run) pairs, ± = 100·std of the per-run ratios, \\* = the 99% range of the per-run "
              "differences excludes 0; below it, *seeds*: the reduction computed per training seed, mean ± "
              f"Student-t 95% interval{n_text} — the uncertainty of retraining, which the paper's ± does not cover. "
              "*vs July*: agreement in sign and significance with the July 2025 preprint. IP* is grouped per "
              "evaluation run (see `ipstar_groupings.csv` for the pooled reading). An Avg. row is compared with the "
              "paper's only when it averages the same nine datasets.\n\n")
    return legend + md_table(header, rows) + ("\nNotes:\n\n" + "\n".join(notes) + "\n" if notes else "")


def render_agreement(report: Path | None) -> str:
    df = read_report_csv(report, "table1_agreement.csv")
    if df is None or df.empty:
        return not_run_note("table1_agreement.csv", "experiments `single` and `mutability` with the published tables")
    cols = [c for c in df.columns if c not in ("version",)]
    return md_table(cols, [[cell_text(fmt_num(r[c], 0)) if c != "label" else cell_text(r[c]) for c in cols]
                         for _, r in df.iterrows()])


def render_side_by_side(report: Path | None, name: str, columns: dict[str, str], keys: list[str],
                        flag: Callable[[pd.Series, str], bool], legend: str, digits: int = 2,
                        what: str = "") -> str:
    """A table whose ``pub_<col>`` columns (from ``with_published``) are compared with ours: each cell holds our
    value and, below it, the published one and the difference Δ (bold when ``flag`` says it is too far)."""
    df = read_report_csv(report, f"{name}.csv")
    if df is None:
        return not_run_note(f"{name}.csv", what)
    df = paper_sorted(df, relabel=True)
    cols = [c for c in columns if c in df.columns]
    header = [k.capitalize() if k != "dataset" else "Data" for k in keys] + [columns[c] for c in cols]
    rows = []
    for _, r in df.iterrows():
        row = [str(r[k]) for k in keys]
        for c in cols:
            cell = fmt_num(r[c], digits)
            if f"pub_{c}" in df.columns and not is_missing(r[f"pub_{c}"]):
                d = r[c] - r[f"pub_{c}"] if not is_missing(r[c]) else float("nan")
                delta = fmt_num(d, digits)
                delta = f"**{delta}**" if not is_missing(d) and flag(r, c) else delta
                cell += f"<br><small>paper\u00a0{fmt_num(r[f'pub_{c}'], digits)} (Δ\u00a0{delta})</small>"
            row.append(cell)
        rows.append(row)
    how = "Each cell: ours; below it the published value and the difference Δ = ours − paper."
    return legend + " " + how + "\n\n" + md_table(header, rows)


def flag_abs(threshold: float) -> Callable[[pd.Series, str], bool]:
    return lambda r, c: abs(float(r[c]) - float(r[f"pub_{c}"])) > threshold


def flag_rel(rel: float, floor: float) -> Callable[[pd.Series, str], bool]:
    def f(r: pd.Series, c: str) -> bool:
        return abs(float(r[c]) - float(r[f"pub_{c}"])) > max(rel * abs(float(r[f"pub_{c}"])), floor)
    return f


def flag_ig(r: pd.Series, c: str) -> bool:
    lb, ub = r.get("pub_lb_2_5"), r.get("pub_ub_97_5")
    if c != "median" or is_missing(lb) or is_missing(ub):
        return flag_rel(0.5, 0.05)(r, c)
    return not (float(lb) <= float(r[c]) <= float(ub))


def render_plain(report: Path | None, name: str, columns: list[str] | None = None, digits: int = 3,
                 what: str = "", legend: str = "",
                 merge: Sequence[tuple[str, Sequence[str], Callable[..., str]]] = (),
                 labels: dict[str, str] | None = None) -> str:
    """A report CSV as a table: ``columns`` in that order, ``merge`` = (label, columns, formatter) joins columns
    into one cell, constant columns go into the legend, ``labels`` renames headers."""
    df = read_report_csv(report, f"{name}.csv")
    if df is None:
        return not_run_note(f"{name}.csv", what)
    df = paper_sorted(df, relabel=True)
    if columns:
        df = df[[c for c in columns if c in df.columns]]
    for label, cols, fmt in merge:
        df = merge_columns(df, label, cols, fmt)
    df, const = constant_columns(df, only=SETTING_COLUMNS)
    df = df.rename(columns=labels or {})
    legend = " ".join(s for s in (legend, const) if s)
    return (legend + "\n\n" if legend else "") + frame_to_markdown(df, digits=digits)


def render_ipstar_groupings(report: Path | None) -> str:
    """IP* per evaluation run (Table 1's reading) beside IP* pooled over runs, each with its ± and star."""
    def fmt(suffix: str) -> tuple[str, list[str], Callable[..., str]]:
        return (f"{suffix.replace('_', ' ')}", [f"reduction_pct_{suffix}", f"pm_{suffix}", f"significant_{suffix}"],
                cell_reduction)

    return render_plain(
        report, "ipstar_groupings",
        ["dataset", "reduction_pct_per_run", "pm_per_run", "significant_per_run", "preprint_2025_07_agreement_per_run",
         "reduction_pct_pooled", "pm_pooled", "significant_pooled", "preprint_2025_07_agreement_pooled"],
        digits=2, what="experiment `single`", merge=[fmt("per_run"), fmt("pooled")],
        labels={"preprint_2025_07_agreement_per_run": "vs July (per run)",
                "preprint_2025_07_agreement_pooled": "vs July (pooled)"},
        legend="IP* reduction with MMD groups per evaluation run (Table 1) and pooled over runs: ours ± "
               "100·std, \\* = significant; *vs July*: agreement with the July 2025 preprint.")


def render_ablation(report: Path | None) -> str:
    df = read_report_csv(report, "ablation.csv")
    if df is None:
        return not_run_note("ablation.csv", "experiment `ablation`: objectives CT, CD, AR against BL")
    df = paper_sorted(df, relabel=True)
    df = df.assign(objective=df["objective"].map(lambda o: OBJECTIVE_LABELS.get(o, o)))
    wide = df.pivot_table(index=["dataset", "metric"], columns="objective", values="reduction_pct", sort=False)
    wide = wide.reset_index()
    legend = ("Percent reduction against BL of IP and IP* for the full objective (CT) and the partial objectives "
              "CD (contrastive divergence only) and AR (adversarial only) — the paper's Fig. 6.")
    return legend + "\n\n" + frame_to_markdown(wide, digits=2)


#: the published versions of the appendix CI table (July 2025: its appendix Table 3; final: an appendix table)
APPENDIX_CI_VERSIONS = (("July 2025", "appendix_ci_table_2025_07.csv"), ("final", "appendix_ci_table.csv"))


def render_appendix_ci(report: Path | None, published_dir: Path) -> str:
    """The appendix's means and 99% intervals: each cell holds ours and, below it, every published version that
    has the number, labelled (the July 2025 preprint's Table 3 and the final version's appendix table); Δ is ours
    minus the July value, bold beyond 25% (at least 0.02) of it."""
    df = read_report_csv(report, "appendix_ci.csv")
    if df is None:
        return not_run_note("appendix_ci.csv", "experiments `single` and `mutability`")
    df = paper_sorted(df, relabel=True)
    pubs = []
    for label, name in APPENDIX_CI_VERSIONS:
        p = Path(published_dir) / name
        if p.exists():
            pubs.append((label, pd.read_csv(p).rename(columns={"lb_99": "lb", "ub_99": "ub"})
                         .set_index(["metric", "dataset"])))
    cols = {"ct_mean_abs": "CT", "bl_mean_abs": "BL", "lb": "LB", "ub": "UB"}
    rows = []
    for _, r in df.iterrows():
        row = [str(r["metric"]), str(r["dataset"])]
        for c in cols:
            cell = fmt_num(r.get(c), 2)
            shown = []
            for i, (label, pub) in enumerate(pubs):
                key = (r["metric"], r["dataset"])
                if key not in pub.index or c not in pub.columns or is_missing(pub.loc[key, c]):
                    continue
                v = float(pub.loc[key, c])
                text = f"{label}\u00a0{fmt_num(v, 2)}"
                if i == 0 and not is_missing(r.get(c)):
                    d = float(r[c]) - v
                    delta = fmt_num(d, 2)
                    text += f" (Δ\u00a0{'**' + delta + '**' if abs(d) > max(0.25 * abs(v), 0.02) else delta})"
                shown.append(text)
            if shown:
                cell += "<br><small>" + "<br>".join(shown) + "</small>"
            row.append(cell)
        rows.append(row)
    legend = ("Mean |value| for CT and BL and the 99% interval of the per-run difference. Below each of our values: "
              "the published value in each version that prints it, labelled — the July 2025 preprint's Table 3 and "
              "the final version's appendix table — and Δ = ours − July, **bold** beyond 25% (at least 0.02).")
    return legend + "\n\n" + md_table(["Metric", "Data", *cols.values()], rows)


def render_table1_lenet(report: Path | None) -> str:
    """The LeNet pair's Table-1-style cells (``table1_lenet.csv``, beyond the paper) with the MLP's cell of the same
    metric beside each: ours, then the published MLP values, and the LeNet cell's agreement with the July one."""
    df = read_report_csv(report, "table1_lenet.csv")
    if df is None or "reduction_pct" not in df.columns:
        return not_run_note("table1_lenet.csv", "stage `lenet`, off by default: `snakemake --config "
                            "'lenet={enabled: true}'`", stage="lenet")
    df = paper_sorted(df, relabel=True)
    versions = [(v, lab) for v, lab in TABLE1_VERSIONS[:2] if f"{v}_reduction_pct" in df.columns]
    header = ["Data", "metric", "LeNet (ours)", "MLP (ours)", *[f"MLP {lab}" for _, lab in versions],
              "LeNet vs July MLP"]
    rows, notes = [], []
    for _, r in df.iterrows():
        row = [str(r["dataset"]), str(r["metric"]),
               cell_reduction(r["reduction_pct"], r.get("pm"), r.get("significant")),
               cell_reduction(r.get("mlp_reduction_pct"), r.get("mlp_pm"), r.get("mlp_significant"))]
        row += [cell_reduction(r.get(f"{v}_reduction_pct"), r.get(f"{v}_pm"), r.get(f"{v}_significant"))
                for v, _ in versions]
        agree = r.get("preprint_2025_07_agreement", "")
        row.append("" if is_missing(agree) else "**disagrees**" if agree == "disagrees" else str(agree))
        rows.append(row)
        flag = r.get("flag", "")
        if not is_missing(flag) and str(flag).strip():
            notes.append(f"- {r['dataset']} {r['metric']}: {cell_text(flag)}")
    legend = ("Beyond the paper: no version reports a LeNet result (LeNet appears only in the MNIST tuning runs and "
              "the compute remarks of appendix F.1.2). One CT and one BL LeNet-5, trained at the final MNIST settings "
              "and evaluated as the MLPs of Table 1 (same generator, λ_egy values, runs and individuals), one training "
              "seed: percent reduction CT vs BL with Table 1's ± and star. Beside it the MLP's cell: ours, and the "
              "published MLP values. IP and IP* as in Table 1; the cost is that of the unconstrained evaluation "
              "(the appendix's cost without mutability constraints), as Table 1's Cost column needs a CT trained "
              "with the protected pixels immutable, which the `lenet` stage does not train.\n\n")
    return legend + md_table(header, rows) + ("\nNotes:\n\n" + "\n".join(notes) + "\n" if notes else "")
