"""Drawing of Black et al.'s Figures 1 and 2 from their runs (:mod:`ctbench.experiments.figure_runs.black` and
``black2``). Figure 1: (a) the data, (b) where the two deep models disagree, (c) where the two linear models
disagree. Figure 2: (a) a ReLU network's regions and gradients, (b) σ(t·x') for Min-ℓ2 and Min-ℓ2 + SNS."""

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


#: colours of Figure 2: the shaded regions of (a)'s points (as the paper: blue, green where the boundary crosses the
#: region, yellow where it does not), and (b)'s two methods
REGION_COLOURS = ("tab:blue", "tab:green", "tab:purple", "tab:cyan", "tab:pink")
UNCROSSED_COLOUR = "gold"
METHOD_STYLE = {"min_l2": ("tab:blue", "Min-ℓ2"), "min_l2+sns": ("tab:red", "Min-ℓ2 + SNS")}


def black_figure2_plot(table: pd.DataFrame, grid: pd.DataFrame, points: pd.DataFrame, curves: pd.DataFrame,
                       X: np.ndarray, y: np.ndarray, xs: np.ndarray, ys: np.ndarray, pre: np.ndarray,
                       flat: dict):
    """(a) activation constraints (dashed: each hidden unit's zero set), the decision boundary (solid), the regions
    of a few test points shaded and ∇f there as an arrow (unit length: only the direction is drawn); (b) σ(t·x')
    against t for the counterfactuals valid under both methods, thin per row and bold the median over rows, split by
    whether the target is the class of the zero baseline."""
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure

    fig = Figure(figsize=(15.0, 4.8))
    ax_a, *ax_b = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.25, 1, 1]})
    shape = (len(ys), len(xs))
    ax_a.scatter(X[:, 0], X[:, 1], c=np.where(y == 1, "tab:orange", "tab:grey"), s=3, alpha=0.15, linewidths=0)
    shade = np.full(shape, np.nan)
    region = grid["region"].to_numpy().reshape(shape)
    colours = [REGION_COLOURS[k % len(REGION_COLOURS)] if c else UNCROSSED_COLOUR
               for k, c in enumerate(points["crossed"])] if len(points) else []
    for k, r in enumerate(points["region"] if len(points) else []):
        shade[region == r] = k
    if len(points):
        ax_a.pcolormesh(xs, ys, shade, cmap=ListedColormap(colours), vmin=-0.5,
                        vmax=len(points) - 0.5, alpha=0.35, shading="auto")
    for u in range(pre.shape[1]):
        z = pre[:, u].reshape(shape)
        if z.min() < 0 < z.max():
            ax_a.contour(xs, ys, z, levels=[0], colors="dimgrey", linestyles="--", linewidths=0.7).set_gid(
                f"activation_constraint_{u}")
    ax_a.contour(xs, ys, grid["logit"].to_numpy().reshape(shape), levels=[0], colors="black",
                 linewidths=2).set_gid("decision_boundary")
    span = 0.12 * max(xs[-1] - xs[0], ys[-1] - ys[0])
    for k, p in enumerate(points.itertuples()):
        g = np.array([p.grad1, p.grad2]) / max(np.hypot(p.grad1, p.grad2), 1e-12)
        colour = colours[k]
        ax_a.annotate("", xy=(p.x1 + span * g[0], p.x2 + span * g[1]), xytext=(p.x1, p.x2),
                      arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 2})
        ax_a.plot(p.x1, p.x2, "o", color=colour, mec="black", ms=6)
    ax_a.set_xlim(xs[0], xs[-1])
    ax_a.set_ylim(ys[0], ys[-1])
    ax_a.set_title("(a) activation constraints (dashed), decision boundary (solid),\n∇f at points in crossed / "
                   "uncrossed regions", fontsize=10)
    ax_a.set_xlabel("x₁")
    ax_a.set_ylabel("x₂")

    valid = table.groupby("row")["valid"].transform("all")
    group = table.loc[valid].drop_duplicates("row").set_index("row")["target_is_baseline_class"]
    for ax, (key, same) in zip(ax_b, (("target_is_other_class", False), ("target_is_baseline_class", True)),
                               strict=True):
        rows = group.index[group.to_numpy() == same]
        text = []
        for method, (colour, label) in METHOD_STYLE.items():
            c = curves[(curves["method"] == method) & curves["row"].isin(rows)]
            if c.empty:
                continue
            wide = c.pivot(index="t", columns="row", values="sigma")
            ax.plot(wide.index, wide.to_numpy(), color=colour, lw=0.5, alpha=0.25)
            ax.plot(wide.index, wide.median(axis=1), color=colour, lw=2.5, label=f"{label} (pointwise median)")
            text.append(f"{label}: {flat[key][method]['median_max_slope']:.2g}")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("t")
        ax.set_title(f"(b) σ(t·x′), target {'=' if same else '≠'} class of x = 0 ({len(rows)} rows)\n"
                     f"median maxₜ dσ/dt: {'; '.join(text)}", fontsize=10)
        ax.legend(loc="lower right", fontsize=8)
    ax_b[0].set_ylabel("σ_target(t·x′)")
    fig.tight_layout()
    return fig
