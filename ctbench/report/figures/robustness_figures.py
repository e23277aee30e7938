"""Figures of the predictive-performance stage: adversarial accuracy vs ε (paper Fig. 5) and per-class
integrated-gradient maps (paper Fig. 4), drawn from result frames with seaborn in the report's theme (:mod:`.style`).

The computations live in :mod:`ctbench.evaluation.robustness` and :mod:`ctbench.evaluation.integrated_gradients`; this
module
only draws, so the core never imports plotting code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ...io import save_figure
from .style import palette, styled


@styled
def plot_robustness(df: pd.DataFrame, path: str | Path, hue: str = "model", col: str = "attack",
                    col_wrap: int | None = None, title: str | None = None) -> list[Path]:
    """:func:`robustness_figure` written to ``<path>.png`` and ``<path>.pdf``; returns their paths."""
    return save_figure(robustness_figure(df, hue=hue, col=col, col_wrap=col_wrap, title=title), path)


@styled
def robustness_figure(df: pd.DataFrame, hue: str = "model", col: str = "attack", col_wrap: int | None = None,
                      title: str | None = None):
    """Adversarial accuracy vs ε: one panel per value of ``col``, one colour per value of ``hue``.

    ``df`` holds :func:`~ctbench.evaluation.robustness.robustness_curve` rows (``attack``, ``eps``, ``accuracy``),
    usually several concatenated with a ``hue`` column. Rows that share (panel, hue, attack, ε) — e.g. training seeds
    — are drawn as their mean with a min–max band. With ``col`` other than ``attack`` the attacks share a panel and
    differ by line style. Colours come from :func:`~ctbench.report.figures.style.palette` (as many as hue values, none
    repeated) and the legend sits below the panels. Returns the matplotlib ``Figure``.
    """
    import seaborn as sns
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    missing = {"attack", "eps", "accuracy"} - set(df.columns)
    if col not in df.columns:
        missing.add(col)
    if missing:
        raise ValueError(f"plot_robustness: missing column(s) {sorted(missing)}")
    d = df.assign(attack=df["attack"].astype(str).str.upper())
    if hue not in d.columns:
        hue = None
    levels = list(dict.fromkeys(d[hue].astype(str))) if hue else []
    if hue:
        d[hue] = d[hue].astype(str)
    style = "attack" if col != "attack" and d["attack"].nunique() > 1 else None
    panels = list(dict.fromkeys(d[col]))
    ncols = min(len(panels), col_wrap or len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(4.6 * ncols, 3.8 * nrows + 1.2), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True).ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for k, (ax, p) in enumerate(zip(axes, panels, strict=False)):
        sns.lineplot(data=d[d[col] == p], x="eps", y="accuracy", hue=hue, hue_order=levels or None,
                     palette=palette(len(levels)) if hue else None, style=style,
                     style_order=list(dict.fromkeys(d["attack"])) if style else None,
                     estimator="mean", errorbar=("pi", 100), marker="o", markersize=5, ax=ax, legend=k == 0)
        ax.set_title(str(p).upper() if col == "attack" else str(p))
        ax.set_xlabel("ε")
        ax.set_ylabel("accuracy")
        ax.xaxis.set_major_locator(MaxNLocator(3, steps=[1, 2, 5, 10]))  # adjacent panels' end labels would touch
    first = axes[0].get_legend()
    if first is not None:
        handles, labels = axes[0].get_legend_handles_labels()
        first.remove()
        fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 10), frameon=False)
    if title:
        fig.suptitle(title)
    return fig


@styled
def plot_attribution_maps(maps, path: str | Path, titles: Sequence[str] | None = None, cmap: str = "viridis",
                          ncols: int | None = None) -> list[Path]:
    """Heat-map grid of per-class attribution maps (``(K, H, W)``, or ``(K, D)`` drawn as 1×D strips), all on the
    common [0, 1] scale of :func:`~ctbench.evaluation.integrated_gradients.class_attribution_maps` with one colour bar.

    Writes ``<path>.png`` and ``<path>.pdf`` (Agg canvas) and returns their paths.
    """
    from matplotlib.figure import Figure

    maps = np.asarray(maps, dtype=float)
    if maps.ndim == 2:
        maps = maps[:, None, :]
    if maps.ndim != 3 or maps.shape[0] == 0:
        raise ValueError(f"plot_attribution_maps: expected (K, H, W) or (K, D) maps, got shape {maps.shape}")
    K = maps.shape[0]
    ncols = int(ncols or min(K, 5))
    nrows = math.ceil(K / ncols)
    fig = Figure(figsize=(2.6 * ncols + 0.8, 2.7 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    im = None
    for k, ax in enumerate(axes.ravel()):
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
        if k >= K:
            ax.set_axis_off()
            continue
        im = ax.imshow(maps[k], cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto" if maps.shape[1] == 1 else "equal")
        ax.set_title(titles[k] if titles is not None else str(k))
    if im is not None:
        fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8)
    return save_figure(fig, path)


__all__ = ["plot_attribution_maps", "plot_robustness", "robustness_figure"]
