"""The appendix's 10×10 MNIST counterfactual grids (Figures 4 and 5 of the July 2025 preprint, appendix C.4).

Row ``i`` holds one test image of digit ``i`` (the factual, on the diagonal) and its ECCo counterfactuals in every
other class ``j`` (column ``j``); Figure 4 is the CT model, Figure 5 the conventionally trained one (BL), with the same
factuals. Reference §7.8 records the authors' settings for this figure: ECCo with λ_egy = 25 and max-iter convergence
(our default: the main MNIST figure's 1000 steps and λ_cst 0.001). Each factual is drawn (``default_rng([seed, 2])``)
among the test images of its class that *both* models classify correctly, so every row starts from a point both agree
on (all images of the class where no image qualifies; ``factual_correct_for_all`` says which). All 90 searches
of a model run as one batch (one :meth:`~ctbench.api.TrainedModel.counterfactuals` call) in
:func:`ctbench.experiments.figure_runs.grid_searches`; this module only draws and writes their result.

Outputs: ``mnist_grid_ct.png``/``.pdf`` (Figure 4), ``mnist_grid_bl.png``/``.pdf`` (Figure 5) and ``mnist_grid.csv``
(one row per model, factual class and target: test index, p(target), predicted class, validity, steps, L1 cost).
A counterfactual that does not reach its target class gets a red frame.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...io import atomic_write_text, save_figure

#: the July 2025 preprint's figure number of each model's grid
PAPER_FIGURE = {"CT": 4, "BL": 5}


def grid_figure(images: np.ndarray, table: pd.DataFrame, model: str, title: str = ""):
    """One model's K×K grid: rows = factual class, columns = target class, red frame = not valid."""
    from matplotlib.figure import Figure

    K = images.shape[0]
    side = int(round(np.sqrt(images.shape[2])))
    fig = Figure(figsize=(1.05 * K + 0.9, 1.05 * K + 0.9), layout="constrained")
    axes = fig.subplots(K, K, squeeze=False)
    valid = {(int(r.factual), int(r.target)): bool(r.valid) for r in table[table["model"] == model].itertuples()}
    for i in range(K):
        for j in range(K):
            ax = axes[i, j]
            ax.imshow(images[i, j].reshape(side, side), cmap="gray", vmin=-1, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_gid(f"cell:{i}:{j}")
            colour = "tab:blue" if i == j else (None if valid.get((i, j), True) else "red")
            if colour:
                for s in ax.spines.values():
                    s.set_edgecolor(colour)
                    s.set_linewidth(2.5)
            if i == 0:
                ax.set_title(str(j), fontsize="medium")
            if j == 0:
                ax.set_ylabel(str(i), rotation=0, fontsize="medium", labelpad=10, va="center")
    fig.supxlabel("target class", fontsize="medium")
    fig.supylabel("factual class", fontsize="medium")
    if title:
        fig.suptitle(title, fontsize="medium")
    return fig


def write_mnist_grids(res: dict[str, Any], out_dir: str | Path) -> dict[str, Any]:
    """Draw and write ``mnist_grid_{ct,bl}.png/.pdf`` and ``mnist_grid.csv`` from the result of
    :func:`ctbench.experiments.figure_runs.grid_searches` (``images``, ``table``, ``generator``, ``convergence``)."""
    out = Path(out_dir)
    paths = []
    g, c = res["generator"], res["convergence"]
    for name, images in res["images"].items():
        n = PAPER_FIGURE.get(name)
        title = (f"{'Figure ' + str(n) + ' of the paper — ' if n else ''}{name}: ECCo counterfactuals "
                 f"(λ_egy {g['lambda_energy']:g}, {c['max_iter']} steps); factuals on the diagonal")
        paths += save_figure(grid_figure(images, res["table"], name, title), out / f"mnist_grid_{name.lower()}")
    paths.append(atomic_write_text(out / "mnist_grid.csv", res["table"].to_csv(index=False)))
    return {**res, "paths": paths}


__all__ = ["PAPER_FIGURE", "grid_figure", "write_mnist_grids"]
