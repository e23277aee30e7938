"""Drawing of Black et al.'s Figure 1 from its run's grid table (:mod:`ctbench.experiments.figure_runs.black`):
(a) the data, (b) where the two deep models disagree, (c) where the two linear models disagree."""

from __future__ import annotations

import numpy as np
import pandas as pd


def black_figure1_plot(table: pd.DataFrame, X: np.ndarray, y: np.ndarray, xs: np.ndarray, ys: np.ndarray,
                       shares: dict[str, float]):
    """Three panels side by side; the shaded cells are grid points where the pair's predicted classes differ."""
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13.0, 4.2))
    axes = fig.subplots(1, 3, sharex=True, sharey=True)
    colours = np.where(y == 1, "tab:orange", "tab:blue")
    shade = ListedColormap(["white", "tab:red"])
    for ax, (key, title) in zip(axes, (("", "(a) data"), ("deep", "(b) two deep models (MLP)"),
                                       ("linear", "(c) two linear models")), strict=True):
        if key:
            grid = table[f"{key}_disagree"].to_numpy().reshape(len(ys), len(xs)).astype(float)
            ax.pcolormesh(xs, ys, grid, cmap=shade, vmin=0, vmax=1, alpha=0.45, shading="auto")
            for k, style in ((0, "-"), (1, "--")):
                ax.contour(xs, ys, table[f"{key}_{k}"].to_numpy().reshape(len(ys), len(xs)), levels=[0.5],
                           colors="black", linestyles=style, linewidths=1)
            title += f": disagree on {100 * shares[key]:.1f}% of the area"
        ax.scatter(X[:, 0], X[:, 1], c=colours, s=6, alpha=0.4, linewidths=0)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("x₁")
    axes[0].set_ylabel("x₂")
    fig.tight_layout()
    return fig
