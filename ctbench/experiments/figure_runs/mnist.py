"""The MNIST figures' runs: two saved models (CT, BL) loaded, searched and attributed.

**MNIST** (:func:`mnist_figures`, reference §7.8): counterfactuals of factuals of class 0 that both models predict
as 0 (``default_rng(seed)``, seed 42 as ``Random.seed!(42)`` of ``mnist_chart.jl``), towards several targets, by
ECCo with λ_egy = 1.0, λ_cst = 0.001 and ``MaxIterConvergence(1000)``, searched in the [−1, 1] pixel box with the
dataset's protected pixel rows immutable for both models (the shared baseline is trained without constraints, so
its own metadata has none); BL rows on top,
CT rows below → ``mnist_counterfactuals.png``/``.pdf``/``.csv``. Class-conditional integrated gradients
(:func:`ctbench.evaluation.integrated_gradients.class_attribution_maps`: all test images of a class, 50 steps, U(−1, 1)
baselines, min–max normalised) for both models → ``mnist_attribution.png``/``.pdf``/``.csv``, with the protected
rows marked. The appendix's 10×10 grids (:func:`grid_searches`, Figures 4–5) are searched here too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...io import provenance


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


def mnist_figures(ct_model_path: str | Path, bl_model_path: str | Path, seed: int = 42, *,
                  n_factuals: int = 3, factual_class: int = 0, targets: Sequence[int] = (1, 2, 3, 4),
                  lambda_energy: float = 1.0, lambda_cost: float = 0.001, max_iter: int = 1000,
                  use_constraints: bool = True, classes: Sequence[int] = (5, 6, 7, 8, 9),
                  attribution_samples: int | None = None, steps: int = 50, data=None, grid10: bool = True,
                  grid10_lambda_energy: float = 25.0) -> pd.DataFrame:
    """The MNIST counterfactual grid and class-conditional attribution maps of a CT and a BL model; with ``grid10``
    also the appendix's 10×10 grids (Figures 4–5, :func:`grid_searches`, ECCo λ_egy ``grid10_lambda_energy``).

    ``data``: the dataset (default: rebuilt from the CT model's metadata, as ``ctbench evaluate`` does);
    ``attribution_samples``: at most this many test images per class for the maps (default: all, as the paper).
    Returns the counterfactual table (``mnist_counterfactuals.csv``) with what the drawing needs in its ``attrs``
    (``attribution`` table, ``maps``, ``grid``, images, ``meta`` sidecar); :func:`ctbench.cli.figure_cmds.
    write_mnist_figures` draws and writes them.
    """
    from ...data import load_dataset
    from ...evaluation.integrated_gradients import class_attribution_maps
    from ...training.pipeline import load_model

    t0 = time.perf_counter()
    models = {"BL": load_model(bl_model_path), "CT": load_model(ct_model_path)}
    for name, m in models.items():
        if m.meta["model_spec"]["n_features"] != 784:
            raise ValueError(f"mnist_figures: the {name} model takes {m.meta['model_spec']['n_features']} features, "
                             "not 784 (28×28 images)")
    if data is None:
        ct = models["CT"]
        data = load_dataset(ct.config["data"]["name"], fidelity=ct.fidelity, **ct.config["data"]["params"])
    X, y = np.asarray(data.X_test, dtype=np.float32), np.asarray(data.y_test)
    K = int(data.n_classes)
    targets = [int(t) for t in targets]
    if any(t == factual_class or not 0 <= t < K for t in targets):
        raise ValueError(f"targets {targets} must be classes in 0..{K - 1} other than the factual class")
    preds = {n: m.predict(X) for n, m in models.items()}
    pool = np.flatnonzero((y == factual_class) & (preds["BL"] == factual_class) & (preds["CT"] == factual_class))
    if len(pool) == 0:
        raise ValueError(f"mnist_figures: no test image of class {factual_class} is predicted as such by both models")
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(pool, size=min(int(n_factuals), len(pool)), replace=False))
    n_f, n_t = len(idx), len(targets)
    x_rep = np.repeat(X[idx], n_t, axis=0)
    t_rep = np.tile(np.asarray(targets, dtype=np.int64), n_f)
    gen_spec = {"type": "ecco", "lambda_cost": float(lambda_cost), "lambda_energy": float(lambda_energy)}
    conv = {"kind": "max_iter", "tau": 0.5, "max_iter": int(max_iter)}
    protected = list(getattr(data, "protected", []) or [])
    rows, cfs = [], {}
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name, m in models.items():
            res = m.counterfactuals(x_rep, t_rep, generator=gen_spec, convergence=conv,
                                    use_constraints=use_constraints,
                                    mutability=protected if (use_constraints and protected) else None, seed=seed)
            cf = res.counterfactual.detach().cpu().numpy()
            cfs[name] = cf
            pred_cf = m.predict(cf)
            delta = np.abs(cf - x_rep)
            for r in range(len(cf)):
                rows.append({"model": name, "test_index": int(idx[r // n_t]), "factual": factual_class,
                             "target": int(t_rep[r]), "p_target": float(res.prob_target[r]),
                             "predicted": int(pred_cf[r]), "valid": bool(pred_cf[r] == t_rep[r]),
                             "steps": int(res.steps[r]), "cost_l1": float(delta[r].sum()),
                             "max_change_protected": float(delta[r, protected].max()) if protected else np.nan})
        cf_table = pd.DataFrame(rows)
        grid = None
        if grid10:  # appendix Figures 4-5: every factual class × every target, one batched search per model
            grid = grid_searches(models, X, y, seed=seed, lambda_energy=grid10_lambda_energy, lambda_cost=lambda_cost,
                                 max_iter=max_iter, use_constraints=use_constraints, protected=protected)

        # ---- class-conditional integrated gradients
        classes = [int(c) for c in classes]
        sel = []
        arng = np.random.default_rng([seed, 1])
        for c in classes:
            pool_c = np.flatnonzero(y == c)
            if attribution_samples is not None and len(pool_c) > attribution_samples:
                pool_c = np.sort(arng.choice(pool_c, size=int(attribution_samples), replace=False))
            sel.append(pool_c)
        sel = np.concatenate(sel) if sel else np.array([], dtype=np.int64)
        maps = {name: class_attribution_maps(m.model.eval(), X[sel], y[sel], K, steps=steps, seed=seed)
                for name, m in models.items()}
    finally:
        torch.set_num_threads(prev_threads)
    prot_mask = np.zeros(784, dtype=bool)
    prot_mask[protected] = True
    arows = []
    for name in ("BL", "CT"):
        for c in classes:
            mp = maps[name][c].reshape(-1)
            arows.append({"model": name, "class": c, "n_images": int((y[sel] == c).sum()),
                          "mean_protected": float(mp[prot_mask].mean()) if prot_mask.any() else np.nan,
                          "mean_other": float(mp[~prot_mask].mean())})
    attr_table = pd.DataFrame(arows)
    side = {"kind": "mnist_figures", "models": {"CT": str(ct_model_path), "BL": str(bl_model_path)}, "seed": seed,
            "factual_class": factual_class, "factual_test_indices": idx.tolist(), "targets": targets,
            "generator": gen_spec, "convergence": conv, "use_constraints": use_constraints, "classes": classes,
            "attribution_samples": attribution_samples, "ig_steps": steps,
            "grid10": {"lambda_energy": grid10_lambda_energy} if grid10 else None,
            "model_meta": {n: {"objective": m.meta.get("objective_effective"), "acc_test": m.meta.get("acc_test"),
                               "fidelity": m.fidelity.mode} for n, m in models.items()},
            "seconds": time.perf_counter() - t0, "provenance": provenance()}
    cf_table.attrs.update(attribution=attr_table, maps=maps, grid=grid, images=X, factuals=idx, counterfactuals=cfs,
                          plot={"factual_class": factual_class, "targets": targets, "lambda_energy": lambda_energy,
                                "lambda_cost": lambda_cost, "max_iter": max_iter, "classes": classes,
                                "protected": protected}, meta=side)
    return cf_table
