"""Drawing of the paper's qualitative figures from the runs' arrays and tables: Figure 1 (linear classifiers on LS)
and the MNIST counterfactuals and attribution maps.

The runs (training, searches, attributions) are :mod:`ctbench.experiments.figure_runs`; these functions only draw
what they are given, so the report layer never trains or searches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["figure1_plot", "mnist_attribution_plot", "mnist_counterfactual_plot"]


def figure1_plot(table: pd.DataFrame, panels: dict[str, dict[str, Any]], X_train: np.ndarray, y_train: np.ndarray, *,
                 seed: int, epochs: int, feature_label: str = "age"):
    """Figure 1's 2×2 panels: training points (800 drawn with ``default_rng(seed + 1)``), each panel's decision
    boundary (``panels[key]["w"]``, ``["c"]``), factual → counterfactual arrows from ``table``, in ``panels`` order."""
    from matplotlib.figure import Figure

    Xtr, ytr = X_train, y_train
    sub = np.random.default_rng(seed + 1).choice(len(ytr), size=min(800, len(ytr)), replace=False)
    lo = np.minimum(Xtr.min(0), table[["cf_x1", "cf_x2"]].min().to_numpy()) - 0.5
    hi = np.maximum(Xtr.max(0), table[["cf_x1", "cf_x2"]].max().to_numpy()) + 0.5
    fig = Figure(figsize=(10.0, 9.0))
    axes = fig.subplots(2, 2, sharex=True, sharey=True).ravel()
    colours = np.where(ytr[sub] == 1, "tab:orange", "tab:blue")
    for ax, (key, info) in zip(axes, panels.items(), strict=True):
        title = info["title"]
        ax.scatter(Xtr[sub, 0], Xtr[sub, 1], c=colours, s=8, alpha=0.35, linewidths=0)
        w, c = info["w"], info["c"]
        xs = np.linspace(lo[0], hi[0], 2)
        if abs(w[1]) > 1e-12:
            ax.plot(xs, -(w[0] * xs + c) / w[1], color="green", lw=2)
        elif abs(w[0]) > 1e-12:
            ax.axvline(-c / w[0], color="green", lw=2)
        t = table[table["panel"] == key]
        for _, r in t.iterrows():
            ax.annotate("", xy=(r["cf_x1"], r["cf_x2"]), xytext=(r["x1"], r["x2"]),
                        arrowprops={"arrowstyle": "->", "color": "0.3", "lw": 0.8})
        ax.scatter(t["x1"], t["x2"], c="tab:blue", edgecolors="black", s=45, zorder=3, label="factual")
        ax.scatter(t["cf_x1"], t["cf_x2"], c="tab:orange", marker="*", edgecolors="black", s=220, zorder=4,
                   label="counterfactual")
        if key in ("c", "d"):
            ax.text(0.02, 0.02, "age immutable in the search" + (" and protected in CT" if key == "d" else ""),
                    transform=ax.transAxes, fontsize="small", color="0.3")
        ax.set_title(f"({key}) {title}\n|w_age| / |w_x₂| = {info['ratio']:.2f}, valid {info['valid']:.0%}",
                     fontsize="medium")
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
    for ax in axes[2:]:
        ax.set_xlabel(f"x₁ ({feature_label})")
    for ax in axes[::2]:
        ax.set_ylabel("x₂")
    axes[0].legend(loc="upper left", fontsize="small")
    fig.suptitle(f"Linear classifiers on LS: conventional training vs CT (Generic counterfactuals, "
                 f"{epochs} epochs, seed {seed})", fontsize="medium")
    return fig


def _mark_protected_rows(ax, protected: Sequence[int], width: int = 28) -> None:
    rows = sorted({int(p) // width for p in protected})
    if not rows:
        return
    # contiguous blocks of protected rows → a dashed line at each block edge that faces the image centre
    blocks, start = [], rows[0]
    for a, b in zip(rows, rows[1:] + [None], strict=True):
        if b != a + 1:
            blocks.append((start, a))
            start = b
    for s, e in blocks:
        for edge in (s - 0.5, e + 0.5):
            if 0 < edge < width - 1:
                ax.axhline(edge, color="black", lw=0.8, ls="--")



def mnist_counterfactual_plot(X: np.ndarray, idx: np.ndarray, cfs: dict[str, np.ndarray], cf_table: pd.DataFrame,
                              factual_class: int, targets: Sequence[int], *, lambda_energy: float, lambda_cost: float,
                              max_iter: int):
    """The MNIST counterfactual grid: BL rows on top, CT rows below; column 0 = the factual ``X[idx[i]]``, then its
    counterfactual towards each target (``cfs[model]`` in factual-major, target-minor order, as ``cf_table``)."""
    from matplotlib.figure import Figure

    n_f, n_t = len(idx), len(targets)
    fig = Figure(figsize=(1.6 * (n_t + 1) + 0.8, 1.75 * 2 * n_f + 0.6))
    axes = fig.subplots(2 * n_f, n_t + 1, squeeze=False)
    for b, name in enumerate(("BL", "CT")):
        for i in range(n_f):
            r = b * n_f + i
            ax = axes[r, 0]
            ax.imshow(X[idx[i]].reshape(28, 28), cmap="gray", vmin=-1, vmax=1)
            ax.set_title(f"factual {factual_class} (#{idx[i]})" if r == 0 else f"#{idx[i]}", fontsize="small")
            ax.set_ylabel(name, fontsize="large", rotation=0, labelpad=18, va="center")
            for j, t in enumerate(targets):
                k = i * n_t + j
                ax = axes[r, j + 1]
                ax.imshow(cfs[name][k].reshape(28, 28), cmap="gray", vmin=-1, vmax=1)
                p = cf_table[(cf_table["model"] == name)].iloc[k]["p_target"]
                ax.set_title(f"→ {t}  p={p:.2f}", fontsize="small")
    for ax in axes.ravel():
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(f"ECCo counterfactuals (λ_egy {lambda_energy}, λ_cst {lambda_cost}, {max_iter} steps): "
                 "BL (top), CT (bottom)", fontsize="medium")
    return fig


def mnist_attribution_plot(maps: dict[str, dict[int, np.ndarray]], classes: Sequence[int], protected: Sequence[int]):
    """Class-conditional integrated-gradient maps (rows BL, CT; one column per class), protected rows dashed."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1.9 * len(classes) + 1.0, 4.3))
    axes = fig.subplots(2, len(classes), squeeze=False)
    im = None
    for r, name in enumerate(("BL", "CT")):
        for j, c in enumerate(classes):
            ax = axes[r, j]
            im = ax.imshow(maps[name][c], cmap="coolwarm", vmin=0.0, vmax=1.0)
            if protected:
                _mark_protected_rows(ax, protected)
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(f"class {c}", fontsize="small")
            if j == 0:
                ax.set_ylabel(name, fontsize="large", rotation=0, labelpad=18, va="center")
    if im is not None:
        fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label="normalised IG")
    fig.suptitle("Integrated gradients per class (mean over test images; dashed: protected rows)", fontsize="medium")
    return fig
