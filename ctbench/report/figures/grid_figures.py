"""Appendix-style figures of the grid searches and the tuning stage, from ``ctbench grid run`` chunk CSVs.

* :func:`plot_change` — % change of IP (implausibility) or cost of valid CEs vs the shared BL model, one column per
  varied parameter of the grid and one row per dataset; each panel shows the mean over all other grid parameters
  and the test-time λ_egy (± 1 standard deviation as error bars), one line per generator where the grid varies the
  generator (the appendix's "plausibility and cost change vs baseline").
* :func:`plot_mature` — share of mature CEs in each training epoch (appendix "Proportion of mature CE in each
  epoch", reference §1.9), one panel per dataset, mean over points with a band (min–max) per generator or per the
  grid's first varied parameter.
* :func:`write_grid_figures` — all figures for every grid found in the CSVs, PNG + PDF each, written atomically.

Drawn on the Agg canvas (no pyplot, no global backend change) in the report's seaborn theme (:mod:`.style`): one
distinct colour per line and fonts sized for the book's page width.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ...experiments.grids import GRIDS, epochs_path
from ...io import save_figure
from ..common import dataset_label
from .style import palette, styled

#: column of each grid parameter in a chunk CSV, and its axis label
PARAM_LABELS: dict[str, str] = {
    "generator": "generator", "tau": "τ (training)", "lambda_energy": "λ_egy (training)", "max_iter": "T",
    "lambda_adv": "λ_adv", "lambda_div": "λ_div", "lambda_reg": "λ_reg", "burnin": "burn-in", "nce": "nce",
    "epochs": "epochs", "step_size": "CE step size (nominal)",
}
METRIC_LABELS = {"ip": "IP change vs BL (%)", "cost": "cost change vs BL (%)"}


def varied_parameters(df: pd.DataFrame, grid: str) -> list[str]:
    """The grid's parameters that take more than one value in ``df`` (in the grid's order)."""
    params = list(GRIDS[grid]["params"]) if grid in GRIDS else [c for c in PARAM_LABELS if c in df]
    return [p for p in params if p in df and df[p].nunique(dropna=False) > 1]


def _sorted_values(s: pd.Series) -> list:
    vals = list(pd.unique(s.dropna()))
    try:
        return sorted(vals, key=float)
    except (TypeError, ValueError):
        order = {g: i for i, g in enumerate(("ecco", "generic", "revise"))}
        return sorted(vals, key=lambda v: (order.get(v, 99), str(v)))


@styled
def plot_change(df: pd.DataFrame, grid: str, metric: str, path: str | Path) -> list[Path]:
    """% change of ``metric`` (``ip`` or ``cost``) vs BL across the grid's parameters; writes ``path``.png/.pdf."""
    from matplotlib.figure import Figure

    col = f"{metric}_change_pct"
    d = df[df["grid"] == grid]
    if d.empty or col not in d:
        raise ValueError(f"plot_change: no rows with column {col!r} for grid {grid!r}")
    params = varied_parameters(d, grid) or ["lambda_energy_eval"]
    datasets = list(dict.fromkeys(d["dataset"]))
    hue = "generator" if "generator" in params and d["generator"].nunique() > 1 else None
    fig = Figure(figsize=(4.2 * len(params) + 1.6, 3.4 * len(datasets) + 1.2), layout="constrained")
    axes = fig.subplots(len(datasets), len(params), squeeze=False, sharey="row")
    hues = _sorted_values(d[hue]) if hue else [None]
    colours = dict(zip(hues, palette(len(hues)), strict=True))
    for i, ds in enumerate(datasets):
        dd = d[d["dataset"] == ds]
        for j, p in enumerate(params):
            ax = axes[i, j]
            xs = _sorted_values(dd[p])
            pos = np.arange(len(xs))
            groups = [None] if (hue is None or p == hue) else hues
            width = 0.6 / max(len(groups), 1)
            for k, h in enumerate(groups):
                sub = dd if h is None else dd[dd[hue] == h]
                stats = sub.groupby(p)[col].agg(["mean", "std"]).reindex(xs)
                off = (k - (len(groups) - 1) / 2) * width
                ax.errorbar(pos + off, stats["mean"], yerr=stats["std"].fillna(0.0), marker="o", ms=5,
                            capsize=3, lw=1.6, color=colours.get(h, "0.25"), label=None if h is None else str(h))
            ax.axhline(0.0, color="grey", lw=0.8, ls="--")
            ax.set_xticks(pos, [f"{v:g}" if isinstance(v, (int, float, np.number)) else str(v) for v in xs])
            ax.grid(False, axis="x")  # categorical x positions (offset per generator)
            ax.grid(alpha=0.3, axis="y")
            if i == len(datasets) - 1:
                ax.set_xlabel(PARAM_LABELS.get(p, p))
            if j == 0:
                ax.set_ylabel(f"{dataset_label(ds)}\n{METRIC_LABELS.get(metric, col)}")
    if hue:
        handles, labels = next(((a.get_legend_handles_labels()) for a in axes.ravel()
                                if a.get_legend_handles_labels()[0]), ([], []))
        if handles:
            fig.legend(handles, labels, title=hue, loc="outside right upper")
    note = GRIDS.get(grid, {}).get("note")
    fig.suptitle(f"{GRIDS.get(grid, {}).get('title', grid)}" + (f" (Note {note})" if note else "")
                 + f": {METRIC_LABELS.get(metric, col)}\nmean ± sd over the other parameters and test-time λ_egy")
    return save_figure(fig, Path(path))


@styled
def plot_mature(ep: pd.DataFrame, grid: str, path: str | Path, points: pd.DataFrame | None = None) -> list[Path]:
    """Share of mature CEs per epoch for ``grid``; ``points`` (summary rows) supplies the parameter columns."""
    from matplotlib.figure import Figure

    d = ep[ep["grid"] == grid]
    if d.empty:
        raise ValueError(f"plot_mature: no epoch rows for grid {grid!r}")
    hue = None
    if points is not None:
        pp = points[points["grid"] == grid]
        params = varied_parameters(pp, grid)
        hue = "generator" if "generator" in params else (params[0] if params else None)
        if hue:
            keys = pp[["dataset", "point", hue]].drop_duplicates(["dataset", "point"])
            d = d.merge(keys, on=["dataset", "point"], how="left")
    datasets = list(dict.fromkeys(d["dataset"]))
    fig = Figure(figsize=(4.6 * len(datasets) + 1.0, 4.6), layout="constrained")
    axes = fig.subplots(1, len(datasets), squeeze=False, sharey=True)[0]
    hues = _sorted_values(d[hue]) if hue else [None]
    colours = dict(zip(hues, palette(len(hues)), strict=True))
    for ax, ds in zip(axes, datasets, strict=True):
        dd = d[d["dataset"] == ds]
        for h in hues:
            sub = dd if h is None else dd[dd[hue] == h]
            s = sub.groupby("epoch")["share_mature"].agg(["mean", "min", "max"])
            if s["mean"].notna().any():
                ax.plot(s.index, s["mean"], lw=2, color=colours[h],
                        label=None if h is None else (f"{h:g}" if isinstance(h, float) else str(h)))
                ax.fill_between(s.index, s["min"], s["max"], alpha=0.15, color=colours[h], lw=0)
        ax.set_title(dataset_label(ds))
        ax.set_xlabel("epoch")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("share of mature CEs")
    if hue:
        handles, labels = axes[0].get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, title=PARAM_LABELS.get(hue, hue), loc="outside right upper")
    fig.suptitle(f"{GRIDS.get(grid, {}).get('title', grid)}: proportion of mature CEs per epoch "
                 "(mean, band = min–max over points)")
    return save_figure(fig, Path(path))


def load_chunks(paths: Iterable[str | Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Summary rows and per-epoch rows of chunk CSVs (the ``.epochs.csv`` next to each, where present)."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no chunk CSVs given")
    summary = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    eps = [pd.read_csv(epochs_path(p)) for p in paths if epochs_path(p).exists()]
    epochs = pd.concat(eps, ignore_index=True) if eps else pd.DataFrame()
    return summary, epochs


def write_grid_figures(chunk_csvs: Iterable[str | Path], out_dir: str | Path) -> list[Path]:
    """For every grid in the CSVs: ``<grid>_ip_change``, ``<grid>_cost_change`` and ``<grid>_mature`` (PNG + PDF)."""
    summary, epochs = load_chunks(chunk_csvs)
    out_dir = Path(out_dir)
    written: list[Path] = []
    for grid in dict.fromkeys(summary["grid"]):
        for metric in ("ip", "cost"):
            written += plot_change(summary, grid, metric, out_dir / f"{grid}_{metric}_change")
        if len(epochs) and (epochs["grid"] == grid).any():
            written += plot_mature(epochs, grid, out_dir / f"{grid}_mature", points=summary)
    return written


__all__ = ["load_chunks", "plot_change", "plot_mature", "varied_parameters", "write_grid_figures"]
