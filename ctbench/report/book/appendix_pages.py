"""The book's includes for the paper's appendix items (:mod:`..tables.appendix_tables`,
:mod:`..figures.tuning_figures`, :mod:`..figures.mnist_grid`),
numbered as in the July 2025 preprint (the version reproduced). Every number comes from the report folder; a missing
file gives a "not yet run" note, never an error. :func:`pages` returns include name → Markdown for
``ctbench.report.book.build.render_includes``; :func:`grid_caption` gives the paper's figure numbers of a grid figure.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..common import not_run_note, read_report_csv
from ..figures.mnist_grid import PAPER_FIGURE
from ..figures.tuning_figures import FULL_NAMES, paper_figure_range
from ..tables.appendix_tables import PERFORMANCE_TABLE

GENERATED = "_generated"
#: the paper's figures of the grid searches (Notes 3, 5, 7): first number of the IP and cost series, four datasets
#: each in the order Circles, Linearly Separable, Moons, Overlapping
GRID_FIGURES = {"gen_params": (6, 10), "penalties": (14, 18), "training_params": (22, 26)}
_GRID_DATASETS = "Circles, Linearly Separable, Moons, Overlapping"


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _f(v: Any, digits: int = 2) -> str:
    if _nan(v):
        return "—"
    try:
        return f"{float(v):.{digits}f}"
    except (TypeError, ValueError):
        return str(v)


def _g(v: Any) -> str:
    if _nan(v):
        return "—"
    try:
        return f"{float(v):g}"
    except (TypeError, ValueError):
        return str(v)


def _table(header: list[str], rows: list[list[str]]) -> str:
    esc = [[str(c).replace("|", "\\|") for c in r] for r in rows]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in esc]) + "\n"


def _figure(rel: str, caption: str, name: str) -> str:
    return f"```{{figure}} /{GENERATED}/report/{rel}\n:name: {name}\n:width: 95%\n\n{caption}\n```\n"


def grid_caption(stem: str) -> str | None:
    """The paper's numbers of a grid-search figure ``<grid>_{ip_change,cost_change,mature}`` (None: not a grid)."""
    for grid, (ip, cost) in GRID_FIGURES.items():
        if stem == f"{grid}_ip_change":
            return f"Figures {ip}–{ip + 3} of the paper (IP change vs BL; rows: {_GRID_DATASETS})"
        if stem == f"{grid}_cost_change":
            return f"Figures {cost}–{cost + 3} of the paper (cost change vs BL; rows: {_GRID_DATASETS})"
        if stem == f"{grid}_mature":
            return "no figure of the paper (the appendix shows mature shares only for the tuning grids)"
    return None


# --------------------------------------------------------------------------------------------------- includes
def render_hyperparameters(report: Path | None) -> str:
    """Table 2 of the paper: the settings of the final CT models next to the published ones."""
    df = read_report_csv(report, "final_hyperparameters.csv")
    if df is None:
        return not_run_note("final_hyperparameters.csv", "`ctbench report --models`: the final models' sidecars")

    def pair(r: pd.Series, col: str) -> str:
        ours, pub = r.get(col), r.get(f"pub_{col}")
        if _nan(pub):
            return _g(ours)
        if col == "domain":  # the paper writes "none" where the code infers the box from the data: no bold
            nums = [_g(v) for v in str(pub).strip("()").split(",")]
            return str(ours) if str(ours) == f"({', '.join(nums)})" else f"{ours} (paper: {pub})"
        return _g(ours) if _g(ours) == _g(pub) else f"**{_g(ours)}** ({_g(pub)})"

    # two narrow tables (sizes, then the CT settings), so neither needs sideways scrolling
    sizes = [("n_train", "No. Train"), ("n_test", "No. Test"), ("batch_size", "Batch")]
    cols = [("domain", "Domain"), ("tau", "τ"), ("nce", "No. CE"), ("lambda_reg", "λ_reg")]
    rows_sizes, rows = [], []
    for _, r in df.iterrows():
        tuned = "" if _nan(r.get("tuned_tau")) else f"τ {_g(r['tuned_tau'])}, λ_reg {_g(r['tuned_lambda_reg'])}"
        rows_sizes.append([str(r["dataset"]), *[pair(r, c) for c, _ in sizes], str(int(r["n_seeds"]))])
        rows.append([str(r["dataset"]), *[pair(r, c) for c, _ in cols], tuned])
    n_match = int(df["matches_paper"].fillna(False).astype(bool).sum()) if "matches_paper" in df else 0
    others = df.iloc[0]
    legend = (f"Settings of the final `single` CT models, read from their sidecars; **bold**: differs from the paper, "
              f"whose value is in brackets. {n_match} of {len(df)} datasets were trained with the paper's τ, number "
              f"of counterfactuals, λ_reg and batch size. All other settings as recorded for the first dataset: "
              f"λ_adv {_g(others.get('lambda_adv'))}, λ_div {_g(others.get('lambda_div'))}, ECCo λ_egy "
              f"{_g(others.get('lambda_energy'))}, T {_g(others.get('max_iter'))}, {_g(others.get('epochs'))} epochs, "
              f"fidelity `{others.get('fidelity')}`. *tuned*: this run's tuning choice (`tune/<dataset>/best.json`), "
              "used for training only with `tune.select: true`. The paper's *No. Test* is 20% of *No. Train*, not "
              "the size of the test set its code used (reference §8.3).\n\n")
    return (legend + _table(["Data", *[lab for _, lab in sizes], "seeds"], rows_sizes) + "\n\n"
            + _table(["Data", *[lab for _, lab in cols], "tuned"], rows))


def render_grid_performance(report: Path | None) -> str:
    """Tables 4–6 of the paper (and the tuning grids): accuracy and F1 per objective, ours next to the paper's."""
    df = read_report_csv(report, "grid_performance.csv")
    if df is None:
        return not_run_note("grid_performance.csv", "stages `grids` and `tune`: `ctbench report --grids`")
    parts = ["Test accuracy and macro F1 of every CT model of a grid (*Full*, one per grid point) and of its shared "
             "BL model(s) (*Vanilla*): mean, standard deviation and standard error over models. The paper retrained "
             "BL at every grid point; its *Se* column is given as published.\n"]
    titles = {g: f"Table {n} of the paper: grid of Note {2 * n - 5}" for g, n in PERFORMANCE_TABLE.items()}
    titles.update({"tune": "Tuning grid (Note 9; no table in the paper)",
                   "tune_lr": "Learning-rate grid (Note 11; no table in the paper)"})
    for grid, g in df.groupby("grid", sort=False):
        f1 = g["variable"] == "F1-score"
        missing_f1 = bool(f1.any() and (g.loc[f1, "n_models"] == 0).all())
        g = g[~f1] if missing_f1 else g
        has_pub = "pub_mean" in g and g["pub_mean"].notna().any()
        header = ["Data", "Variable", "Objective", "Mean", "sd", "se", "models"]
        header += ["paper Mean", "paper Se", "Δ"] if has_pub else []
        rows = []
        for _, r in g.iterrows():
            row = [str(r["dataset"]), str(r["variable"]), str(r["objective"]), _f(r["mean"], 3), _f(r["sd"], 3),
                   _f(r["se"], 4), str(int(r["n_models"]))]
            if has_pub:
                d = r.get("diff")
                cell = _f(d, 3)
                row += [_f(r["pub_mean"]), _f(r["pub_se"]), f"**{cell}**" if not _nan(d) and abs(d) > 0.01 else cell]
            rows.append(row)
        legend = ("**Bold** Δ: more than 0.01 from the paper. " if has_pub else "") + (
            "F1 is not recorded in these chunks (written before the chunk rows carried `f1_test_*`; rerun the grid "
            "to fill it)." if missing_f1 else "")
        parts.append(f"**{titles.get(grid, grid)}.** {legend}\n\n" + _table(header, rows))
    return "\n".join(parts)


def render_tuning(report: Path | None) -> str:
    """Figures 30–65 of the paper (four figures, one panel per dataset) and the best point of each grid."""
    tdir = None if report is None else report / "tuning"
    if tdir is None or not tdir.is_dir():
        return not_run_note("tuning/", "stage `tune`: `ctbench report --grids` with the tune/tune_lr chunk CSVs")
    what = {"ip": "% change of IP vs BL per grid point; boxes over the test-time λ_egy (negative = more plausible)",
            "mature": "share of mature counterfactuals in each training epoch, one line per grid point"}
    parts = []
    for grid in ("tune", "tune_lr"):
        for kind in ("ip", "mature"):
            rel = f"tuning/{grid}_{kind}.png"
            if not (report / rel).exists():
                continue
            lo, hi = paper_figure_range(grid, kind)
            note = ("" if grid == "tune" else " In the `reference` fidelity mode the grid's CE step size is not "
                    "applied (the authors' code ignored it, `step_size_effective` in the chunk CSVs), so the three "
                    "step sizes give identical models and overlapping lines or boxes.")
            parts.append(_figure(rel, f"Figures {lo}–{hi} of the paper, one panel per dataset (panel titles give "
                                      f"the paper's number): {what[kind]}.{note}", f"fig-{grid}-{kind}"))
    pts = read_report_csv(report, "tuning/tuning_points.csv")
    pts = None if pts is None else pts[pts["ip_change_median"].notna()]
    if pts is not None and len(pts):
        best = pts.loc[pts.groupby(["grid", "dataset"], sort=False)["ip_change_median"].idxmin()]
        rows = [[str(r["grid"]), FULL_NAMES.get(r["dataset"], r["dataset"]), str(r["point"]),
                 _f(r["ip_change_median"]), _f(r["share_mature_last"]), _f(r["acc_test_ct"], 3),
                 _f(r["acc_test_bl"], 3)] for _, r in best.iterrows()]
        parts.append("Per grid and dataset, the point with the lowest median IP change (from "
                     "`tuning/tuning_points.csv`):\n\n" + _table(
                         ["grid", "Data", "point", "IP change (median, %)", "mature share (last epoch)",
                          "acc. CT", "acc. BL"], rows))
    return "\n\n".join(parts) if parts else not_run_note("tuning/*.png", "the tuning folder is empty")


def render_mnist_grid(report: Path | None) -> str:
    """Figures 4 and 5 of the paper: the 10×10 MNIST grids of CT and BL."""
    parts = []
    for model in ("CT", "BL"):
        rel = f"mnist_grid_{model.lower()}.png"
        n = PAPER_FIGURE[model]
        if report is not None and (report / rel).exists():
            who = "counterfactual training (CT)" if model == "CT" else "conventional training (BL)"
            parts.append(_figure(rel, f"Figure {n} of the paper: ECCo counterfactuals of an MLP trained with {who}. "
                                      "Row: a test image of that digit (the factual, on the diagonal, blue frame); "
                                      "column: target class. Red frame: the counterfactual misses its target.",
                                 f"fig-mnist-grid-{model.lower()}"))
        else:
            # the note's fence must open a line of its own, else MyST shows it as text
            parts.append(f"**Figure {n} of the paper.**\n\n" + not_run_note(rel, "`ctbench mnist-figures`"))
    table = read_report_csv(report, "mnist_grid.csv")
    if table is not None:
        s = table.groupby("model").agg(valid=("valid", "sum"), n=("valid", "size"), p=("p_target", "mean"),
                                       cost=("cost_l1", "mean"))
        rows = [[m, f"{int(r.valid)}/{int(r.n)}", _f(r.p, 3), _f(r.cost, 1)] for m, r in s.iterrows()]
        parts.append("Per model over the grid's searches (`mnist_grid.csv`):\n\n"
                     + _table(["model", "valid", "mean p(target)", "mean L1 cost"], rows))
    return "\n\n".join(parts)


def pages(report: Path | None) -> dict[str, str]:
    """Include name → Markdown of the appendix items (``paper/*.md`` include ``_generated/<name>.md``)."""
    return {"appendix_hyperparameters": render_hyperparameters(report),
            "appendix_grid_performance": render_grid_performance(report),
            "appendix_tuning": render_tuning(report),
            "appendix_mnist_grid": render_mnist_grid(report)}


__all__ = ["GRID_FIGURES", "grid_caption", "pages", "render_grid_performance", "render_hyperparameters",
           "render_mnist_grid", "render_tuning"]
