"""Figures of the Proposition 3.1 check (:mod:`ctbench.experiments.prop31`): coefficient paths of the closed-form arm
and the per-run effect of protection, each written as PNG and PDF."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...experiments.prop31.closed_form import ARMS, relative_sensitivity
from ...experiments.prop31.simulation import IMM, MUT
from ...io import save_figure

# -- plots ---------------------------------------------------------------------------------------------------------
_ARM_NAMES = {"u": "unprotected CT", "p": "protected CT", "bl": "baseline (CE only)"}
_COLOURS = {"u": "tab:red", "p": "tab:blue", "bl": "0.45"}



def plot_paths(paths: dict, path: str | Path) -> list[Path]:
    """Three panels over training: w_imm, w_mut and |w_imm|/|w_mut|; thin lines per seed, thick the median."""
    from matplotlib.figure import Figure  # no pyplot: no global backend state

    it = paths["iters"]
    fig = Figure(figsize=(12, 3.6))
    axes = fig.subplots(1, 3)
    for arm in ("bl", "u", "p"):
        P = paths[arm]
        series = ((it, P[..., IMM]), (it, P[..., MUT]), (it[1:], relative_sensitivity(P[:, 1:])))  # w(0) = 0
        for ax, (x, v) in zip(axes, series, strict=True):
            ax.plot(x, v.T, color=_COLOURS[arm], alpha=0.12, lw=0.6)
            ax.plot(x, np.median(v, 0), color=_COLOURS[arm], lw=2, label=_ARM_NAMES[arm])
    titles = (r"$w_{\mathrm{imm}} = \theta_{y^+,\mathrm{imm}} - \theta_{y^-,\mathrm{imm}}$",
              r"$w_{\mathrm{mut}} = \theta_{y^+,\mathrm{mut}} - \theta_{y^-,\mathrm{mut}}$",
              r"relative sensitivity $|w_{\mathrm{imm}}|\,/\,|w_{\mathrm{mut}}|$")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("gradient step")
        ax.axhline(0, color="grey", lw=0.5)
    axes[2].set_yscale("log")
    rs = np.concatenate([relative_sensitivity(paths[a][:, 1:]).ravel() for a in ARMS])
    rs = rs[np.isfinite(rs) & (rs > 0)]
    if rs.size:
        axes[2].set_ylim(np.quantile(rs, 0.01) / 2, np.quantile(rs, 0.99) * 2)
    axes[0].legend(frameon=False, fontsize=8)
    r = paths["setting"].row()
    fig.suptitle(f"Coefficient paths: gap_imm = {r['gap_imm']:g}, gap_mut = {r['gap_mut']:g}, "
                 f"σ = ({r['sigma_imm']:g}, {r['sigma_mut']:g}), n = {r['n']} per class, "
                 f"{paths['p'].shape[0]} seeds (medians bold)", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_sensitivity(df: pd.DataFrame, path: str | Path, violations: pd.DataFrame | None = None) -> list[Path]:
    """Left: rs_p against rs_u per run (log–log, diagonal = no effect); right: log(rs_p/rs_u) by setting kind."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2))
    a, b = fig.subplots(1, 2)
    for n, g in df.groupby("n"):
        a.scatter(g["rs_u"], g["rs_p"], s=5, alpha=0.4, label=f"n = {n} per class")
    finite = df[["rs_u", "rs_p"]].replace([np.inf, 0], np.nan).stack()
    if len(finite):
        lo, hi = finite.min(), finite.max()
        a.plot([lo, hi], [lo, hi], color="grey", lw=0.8)
    a.set(xscale="log", yscale="log", xlabel=r"$|w_{imm}|/|w_{mut}|$, unprotected",
          ylabel=r"$|w_{imm}|/|w_{mut}|$, protected",
          title="Assumptions hold (default grid); below the diagonal: lowered")
    a.title.set_fontsize(9)
    a.legend(frameon=False, fontsize=8)
    groups = [("default grid", df)]
    if violations is not None:
        groups += [(k, g) for k, g in violations.groupby("kind", sort=False)]
    data = [np.log(g["ratio"].replace([np.inf, 0], np.nan).dropna().to_numpy()) for _, g in groups]
    b.boxplot(data, orientation="horizontal", showfliers=False)
    b.set_yticks(range(1, len(groups) + 1), [k for k, _ in groups], fontsize=8)
    b.axvline(0, color="grey", lw=0.8)
    b.set_xlabel("log(rs_protected / rs_unprotected)   (< 0: protection lowers it)", fontsize=9)
    b.set_title("Per-run effect of protection, by setting kind", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path)

