"""The appendix's 10×10 MNIST counterfactual grids (Figures 4 and 5 of the July 2025 preprint, appendix C.4).

Row ``i`` holds one test image of digit ``i`` (the factual, on the diagonal) and its ECCo counterfactuals in every
other class ``j`` (column ``j``); Figure 4 is the CT model, Figure 5 the conventionally trained one (BL), with the same
factuals. Reference §7.8 records the authors' settings for this figure: ECCo with λ_egy = 25 and max-iter convergence
(our default: the main MNIST figure's 1000 steps and λ_cst 0.001). Each factual is drawn (``default_rng([seed, 2])``)
among the test images of its class that *both* models classify correctly, so every row starts from a point both agree
on (all images of the class where no image qualifies; ``factual_correct_for_all`` says which). All 90 searches
of a model run as one batch (one :meth:`~ctbench.api.TrainedModel.counterfactuals` call).

Outputs: ``mnist_grid_ct.png``/``.pdf`` (Figure 4), ``mnist_grid_bl.png``/``.pdf`` (Figure 5) and ``mnist_grid.csv``
(one row per model, factual class and target: test index, p(target), predicted class, validity, steps, L1 cost).
A counterfactual that does not reach its target class gets a red frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..io import atomic_write_text, save_figure

#: the July 2025 preprint's figure number of each model's grid
PAPER_FIGURE = {"CT": 4, "BL": 5}


def pick_factuals(X: np.ndarray, y: np.ndarray, preds: dict[str, np.ndarray], n_classes: int,
                  seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """(one test index per class, whether every model classifies it correctly): drawn among the images of that
    class that all models get right, or among all images of the class when there is none (a weak model)."""
    rng = np.random.default_rng([seed, 2])
    idx, agreed = [], []
    for c in range(n_classes):
        ok = y == c
        if not ok.any():
            raise ValueError(f"mnist grid: the test set has no image of class {c}")
        for p in preds.values():
            ok &= p == c
        pool = np.flatnonzero(ok) if ok.any() else np.flatnonzero(y == c)
        idx.append(int(rng.choice(pool)))
        agreed.append(bool(ok.any()))
    return np.asarray(idx), np.asarray(agreed)


def grid_searches(models: dict[str, Any], X: np.ndarray, y: np.ndarray, *, seed: int = 42,
                  lambda_energy: float = 25.0, lambda_cost: float = 0.001, max_iter: int = 1000,
                  use_constraints: bool = True, protected: Sequence[int] = ()) -> dict[str, Any]:
    """The K×(K−1) counterfactuals of every model (one batched search each). Returns ``{"factuals": idx,
    "images": {model: (K, K, D) array, diagonal = factual}, "table": per-search rows}``."""
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y)
    K = int(y.max()) + 1
    preds = {n: m.predict(X) for n, m in models.items()}
    idx, agreed = pick_factuals(X, y, preds, K, seed)
    pairs = [(i, j) for i in range(K) for j in range(K) if i != j]
    src = np.asarray([i for i, _ in pairs])
    tgt = np.asarray([j for _, j in pairs], dtype=np.int64)
    x_rep = X[idx[src]]
    gen = {"type": "ecco", "lambda_cost": float(lambda_cost), "lambda_energy": float(lambda_energy)}
    conv = {"kind": "max_iter", "tau": 0.5, "max_iter": int(max_iter)}
    protected = list(protected)
    images, rows = {}, []
    for name, m in models.items():
        res = m.counterfactuals(x_rep, tgt, generator=gen, convergence=conv, use_constraints=use_constraints,
                                mutability=protected if (use_constraints and protected) else None, seed=seed)
        cf = res.counterfactual.detach().cpu().numpy()
        pred = m.predict(cf)
        grid = np.repeat(X[idx][:, None, :], K, axis=1)  # the diagonal keeps the factual
        grid[src, tgt] = cf
        images[name] = grid
        cost = np.abs(cf - x_rep).sum(1)
        for r, (i, j) in enumerate(pairs):
            rows.append({"model": name, "factual": i, "target": j, "test_index": int(idx[i]),
                         "factual_correct_for_all": bool(agreed[i]),
                         "p_target": float(res.prob_target[r]), "predicted": int(pred[r]),
                         "valid": bool(pred[r] == j), "steps": int(res.steps[r]), "cost_l1": float(cost[r])})
    return {"factuals": idx, "images": images, "table": pd.DataFrame(rows), "generator": gen, "convergence": conv}


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


def write_mnist_grids(models: dict[str, Any], X: np.ndarray, y: np.ndarray, out_dir: str | Path,
                      **kw: Any) -> dict[str, Any]:
    """Run :func:`grid_searches` and write ``mnist_grid_{ct,bl}.png/.pdf`` and ``mnist_grid.csv``."""
    res = grid_searches(models, X, y, **kw)
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


__all__ = ["PAPER_FIGURE", "grid_figure", "grid_searches", "pick_factuals", "write_mnist_grids"]
