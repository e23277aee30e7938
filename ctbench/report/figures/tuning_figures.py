"""The tuning stage's figures in the style of the paper's appendix E (Figures 30–65 of the July 2025 preprint).

The paper shows, per dataset, the % change of IP against BL over the tuning grid (boxplots; Figures 30–38 for the
``tune`` grid of Note 9, 48–56 for ``tune_lr`` of Note 11) and the share of mature counterfactuals in each training
epoch (Figures 39–47 and 57–65). Here each of the four is one figure with a panel per dataset, in the paper's order
(alphabetical by full name), each panel titled with the paper's figure number, so one PNG replaces nine.

* :func:`tuning_ip_figure` — boxplots of ``ip_change_pct`` per grid point over the rows of the chunk CSVs (the
  test-time λ_egy values and seeds; the chunk rows hold run-pooled means, so the boxes show the spread over the
  test settings, not over the evaluation runs as the paper's do). x: the grid's second parameter (λ_reg), colour:
  its first (τ for ``tune``, the nominal CE step size for ``tune_lr``).
* :func:`tuning_mature_figure` — the share of mature CEs per epoch, one line per grid point (colour as above,
  line style by λ_reg), from the ``.epochs.csv`` files.
* :func:`write_tuning_figures` — both for every tuning grid in the CSVs (PNG + PDF, atomic) plus
  ``tuning_points.csv``, the per-point numbers behind them.

Lines and boxes carry the point id as their ``gid`` so tests (and readers of the SVG/PDF) can tie them to the data.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ...experiments.grids import GRIDS
from ...facts import DATASETS
from ...io import atomic_write_text, save_figure
from ..common import dataset_label
from .grid_figures import PARAM_LABELS, load_chunks, varied_parameters
from .style import sequential, styled

TUNING_GRIDS = ("tune", "tune_lr")
#: the paper's panel order (appendix E: alphabetical by the datasets' full names)
PAPER_DATASET_ORDER = ("adult", "california_housing", "circles", "credit_default", "gmsc", "lin_sep", "mnist",
                       "moons", "over")
FULL_NAMES = {d: f.full_name for d, f in DATASETS.items()}  # the catalogue's full names (panel titles)
#: the paper's number of the first figure (dataset Adult) of each (grid, kind); the others follow in panel order
FIRST_FIGURE = {("tune", "ip"): 30, ("tune", "mature"): 39, ("tune_lr", "ip"): 48, ("tune_lr", "mature"): 57}


def paper_figure_number(grid: str, kind: str, dataset: str) -> int | None:
    """The July 2025 preprint's figure number of ``dataset``'s panel (``kind`` = ``ip`` or ``mature``)."""
    first = FIRST_FIGURE.get((grid, kind))
    if first is None or dataset not in PAPER_DATASET_ORDER:
        return None
    return first + PAPER_DATASET_ORDER.index(dataset)


def paper_figure_range(grid: str, kind: str) -> tuple[int, int] | None:
    first = FIRST_FIGURE.get((grid, kind))
    return None if first is None else (first, first + len(PAPER_DATASET_ORDER) - 1)


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    if "error" in df:
        df = df[df["error"].isna() | (df["error"].astype(str).str.strip() == "")]
    return df


def _datasets(df: pd.DataFrame) -> list[str]:
    present = list(dict.fromkeys(df["dataset"]))
    return sorted(present, key=lambda d: (PAPER_DATASET_ORDER.index(d) if d in PAPER_DATASET_ORDER else 99, d))


def _roles(df: pd.DataFrame, grid: str) -> tuple[str | None, str | None]:
    """(hue, x) parameters: the grid's first and second varied parameter (either may be absent in a small run)."""
    params = list(GRIDS[grid]["params"]) if grid in GRIDS else []
    varied = varied_parameters(df, grid)
    hue = params[0] if params and params[0] in varied else None
    x = params[1] if len(params) > 1 and params[1] in df else None
    return hue, x


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, (int, float, np.number)) else str(v)


def _panels(n: int):
    from matplotlib.figure import Figure

    ncol = min(3, n)
    nrow = int(np.ceil(n / ncol))
    fig = Figure(figsize=(5.6 * ncol + 1.6, 4.4 * nrow + 1.0), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _colours(values: list) -> dict:
    """One colour per (ordered) hue value, from a sequential palette: τ and the step size are ordered parameters."""
    return dict(zip(values, sequential(len(values)), strict=True))


def _title(grid: str, kind: str, ds: str) -> str:
    n = paper_figure_number(grid, kind, ds)
    return (f"Fig. {n}: " if n else "") + (FULL_NAMES.get(ds) or dataset_label(ds))


@styled
def tuning_ip_figure(summary: pd.DataFrame, grid: str):
    """Boxplots of the % change of IP vs BL per grid point, one panel per dataset (see the module docstring)."""
    from matplotlib.patches import Patch

    d = _ok(summary[summary["grid"] == grid])
    d = d[np.isfinite(pd.to_numeric(d["ip_change_pct"], errors="coerce"))]
    if d.empty:
        raise ValueError(f"tuning_ip_figure: no finite ip_change_pct rows for grid {grid!r}")
    hue, xp = _roles(d, grid)
    datasets = _datasets(d)
    fig, axes = _panels(len(datasets))
    hues = sorted(d[hue].dropna().unique()) if hue else [None]
    colours = _colours(hues)
    for ax, ds in zip(axes, datasets, strict=True):
        dd = d[d["dataset"] == ds]
        xs = sorted(dd[xp].dropna().unique()) if xp else [None]
        width = 0.8 / len(hues)
        for i, xv in enumerate(xs):
            for k, hv in enumerate(hues):
                sub = dd if xv is None else dd[dd[xp] == xv]
                sub = sub if hv is None else sub[sub[hue] == hv]
                for point, g in sub.groupby("point", sort=False):  # one point per (x, hue) cell
                    pos = i + (k - (len(hues) - 1) / 2) * width
                    bp = ax.boxplot(g["ip_change_pct"].to_numpy(float), positions=[pos], widths=width * 0.85,
                                    patch_artist=True, showfliers=True, manage_ticks=False,
                                    medianprops={"color": "black", "gid": f"median:{point}"},
                                    boxprops={"facecolor": colours[hv], "alpha": 0.75, "gid": f"box:{point}"})
                    bp["boxes"][0].set_gid(f"box:{point}")
        ax.axhline(0.0, color="grey", lw=0.8, ls="--")
        ax.set_xticks(range(len(xs)), [_fmt(v) for v in xs] if xp else [""])
        ax.set_xlabel(PARAM_LABELS.get(xp, xp) if xp else "")
        ax.set_ylabel("IP change vs BL (%)")
        ax.set_title(_title(grid, "ip", ds))
        ax.grid(False, axis="x")  # categorical x: grid lines would run through the boxes
        ax.grid(alpha=0.3, axis="y")
    if hue:
        handles = [Patch(facecolor=colours[h], alpha=0.75, label=_fmt(h)) for h in hues]
        fig.legend(handles=handles, title=PARAM_LABELS.get(hue, hue), loc="outside right upper")
    note = GRIDS.get(grid, {}).get("note")
    fig.suptitle(f"{GRIDS.get(grid, {}).get('title', grid)} (Note {note}): % change of IP vs BL\nboxes over the "
                 "test-time λ_egy (negative = more plausible)")
    return fig


@styled
def tuning_mature_figure(epochs: pd.DataFrame, summary: pd.DataFrame, grid: str):
    """Share of mature CEs per epoch, one line per grid point, one panel per dataset."""
    from matplotlib.lines import Line2D

    ep = epochs[epochs["grid"] == grid]
    if ep.empty:
        raise ValueError(f"tuning_mature_figure: no epoch rows for grid {grid!r}")
    pts = _ok(summary[summary["grid"] == grid])
    hue, xp = _roles(pts, grid)
    keys = [c for c in (hue, xp) if c]
    ep = ep.merge(pts[["dataset", "point", *keys]].drop_duplicates(["dataset", "point"]), on=["dataset", "point"],
                  how="inner")
    datasets = _datasets(ep)
    fig, axes = _panels(len(datasets))
    hues = sorted(ep[hue].dropna().unique()) if hue else [None]
    xs = sorted(ep[xp].dropna().unique()) if xp else [None]
    colours = _colours(hues)
    styles = dict(zip(xs, ["-", "--", ":", "-.", (0, (5, 1)), (0, (1, 3))] * 3, strict=False))
    for ax, ds in zip(axes, datasets, strict=True):
        dd = ep[ep["dataset"] == ds]
        for point, g in dd.groupby("point", sort=False):
            g = g.groupby("epoch", as_index=False)["share_mature"].mean()  # mean over seeds
            first = dd[dd["point"] == point].iloc[0]
            hv = first[hue] if hue else None
            xv = first[xp] if xp else None
            ax.plot(g["epoch"], g["share_mature"], color=colours[hv], ls=styles[xv], lw=2, gid=f"line:{point}")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("epoch")
        ax.set_ylabel("share of mature CEs")
        ax.set_title(_title(grid, "mature", ds))
        ax.grid(alpha=0.3)
    handles = [Line2D([], [], color=colours[h], lw=2, label=f"{PARAM_LABELS.get(hue, hue)} {_fmt(h)}")
               for h in hues if hue]
    handles += [Line2D([], [], color="black", ls=styles[x], label=f"{PARAM_LABELS.get(xp, xp)} {_fmt(x)}")
                for x in xs if xp]
    if handles:
        fig.legend(handles=handles, loc="outside right upper")
    note = GRIDS.get(grid, {}).get("note")
    fig.suptitle(f"{GRIDS.get(grid, {}).get('title', grid)} (Note {note}):\nproportion of mature counterfactuals in "
                 "each epoch")
    return fig


def tuning_points(summary: pd.DataFrame) -> pd.DataFrame:
    """Per tuning grid point: IP change (median, min, max over the rows), last-epoch share of mature CEs and the
    test accuracies — the numbers behind the figures."""
    d = _ok(summary[summary["grid"].isin(TUNING_GRIDS)])
    keys = ["grid", "dataset", "point"] + [c for c in ("tau", "lambda_reg", "step_size") if c in d]
    agg = (d.groupby(keys, dropna=False, sort=False)
           .agg(ip_change_median=("ip_change_pct", "median"), ip_change_min=("ip_change_pct", "min"),
                ip_change_max=("ip_change_pct", "max"), cost_change_mean=("cost_change_pct", "mean"),
                share_mature_last=("share_mature_last", "mean"), acc_test_ct=("acc_test_ct", "mean"),
                acc_test_bl=("acc_test_bl", "mean"), n_rows=("ip_change_pct", "size"))
           .reset_index())
    return agg


def split_tuning(paths: Iterable[str | Path]) -> tuple[list[Path], list[Path]]:
    """(grid-search chunks, tuning chunks) by the ``grid`` column (the folder name for a header-only CSV)."""
    grid_paths, tune_paths = [], []
    for p in map(Path, paths):
        head = pd.read_csv(p, nrows=1, usecols=lambda c: c == "grid")
        name = str(head["grid"].iloc[0]) if len(head) and "grid" in head else p.parent.parent.name
        (tune_paths if name in TUNING_GRIDS else grid_paths).append(p)
    return grid_paths, tune_paths


@styled
def write_tuning_figures(chunk_csvs: Iterable[str | Path], out_dir: str | Path) -> list[Path]:
    """``<grid>_ip`` and ``<grid>_mature`` (PNG + PDF) for each tuning grid in the CSVs, and ``tuning_points.csv``."""
    summary, epochs = load_chunks(chunk_csvs)
    out = Path(out_dir)
    written: list[Path] = []
    for grid in [g for g in TUNING_GRIDS if (summary["grid"] == g).any()]:
        ip = pd.to_numeric(_ok(summary[summary["grid"] == grid]).get("ip_change_pct"), errors="coerce")
        if ip is not None and np.isfinite(ip).any():  # a tiny run may have no valid CE at all: no IP figure
            written += save_figure(tuning_ip_figure(summary, grid), out / f"{grid}_ip")
        if len(epochs) and (epochs["grid"] == grid).any():
            written += save_figure(tuning_mature_figure(epochs, summary, grid), out / f"{grid}_mature")
    pts = tuning_points(summary)
    if len(pts):
        written.append(atomic_write_text(out / "tuning_points.csv", pts.to_csv(index=False)))
    return written


__all__ = ["FIRST_FIGURE", "paper_figure_number", "paper_figure_range", "split_tuning", "tuning_ip_figure",
           "tuning_mature_figure", "tuning_points", "write_tuning_figures"]
