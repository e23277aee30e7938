"""Black et al. (ICLR 2022) Figure 1: where two models that differ only in their random seed disagree.

Two deep models (MLP) and two linear models are trained on a 2D dataset with the library's trainer (conventional
training), each pair from seeds ``seed`` and ``seed + 1``; the figure shades where each pair's predicted classes
differ on a grid over the data. Black et al.'s point: deep models disagree in whole regions far from the data,
linear models only in a thin wedge between their two boundaries. Settings are this module's :data:`BLACK_FIG1`
(documented choices: ctbench's ``moons`` data, Adam, the paper only says "MLP" and "linear").
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...io import provenance

#: settings of the run (no values are given by Black et al. beyond "a 2D dataset", "deep" and "linear")
BLACK_FIG1: dict[str, Any] = {
    "dataset": "moons",
    "models": {"deep": {"type": "mlp", "hidden": 64, "layers": 3}, "linear": {"type": "linear"}},
    "training": {"epochs": 100, "batch_size": 30, "nce": None, "lr": 0.01},
    "quick_epochs": 10,
    "grid": 120,
    "margin": 1.0,
}


def grid_points(X: np.ndarray, n: int, margin: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An ``n``×``n`` grid over the data's bounding box widened by ``margin``: (xs, ys, points (n², 2))."""
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"Black et al. Figure 1 needs 2D data; got shape {X.shape}")
    lo, hi = X.min(0) - margin, X.max(0) + margin
    xs, ys = np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n)
    gx, gy = np.meshgrid(xs, ys)
    return xs, ys, np.column_stack([gx.ravel(), gy.ravel()])


def predict(model: torch.nn.Module, P: np.ndarray) -> np.ndarray:
    """Predicted classes of ``model`` at the points ``P``."""
    with torch.no_grad():
        return model(torch.as_tensor(P, dtype=torch.float32)).argmax(1).numpy()


def train_plain(data, spec: dict[str, Any], seed: int, epochs: int, fid) -> torch.nn.Module:
    """One conventionally trained model (objective ``vanilla``) from ``seed`` (initialisation and batch order)."""
    from ...models import build_model
    from ...training import Objective, TrainParams, train

    model = build_model(spec, data.n_features, data.n_classes, seed=seed)
    model, _ = train(model, data.X_train, data.y_train, objective=Objective(name="vanilla"), generator=None,
                     params=TrainParams(seed=seed, **{**BLACK_FIG1["training"], "epochs": int(epochs)}),
                     fidelity=fid, X_val=data.X_val, y_val=data.y_val, n_classes=data.n_classes)
    return model.eval()


def black_figure1(seed: int = 0, quick: bool = False, epochs: int | None = None,
                  fidelity: str = "reference") -> pd.DataFrame:
    """The grid table behind Black et al.'s Figure 1 (``black_figure1.csv``: x1, x2, each model's prediction and
    each pair's disagreement), with ``attrs`` ``train`` = (X, y), ``grid`` = (xs, ys) and ``meta`` (the sidecar)."""
    from ...data import load_dataset
    from ...fidelity import resolve_fidelity

    t0 = time.perf_counter()
    epochs = int(epochs if epochs is not None else
                 (BLACK_FIG1["quick_epochs"] if quick else BLACK_FIG1["training"]["epochs"]))
    fid = resolve_fidelity(fidelity, {})
    data = load_dataset(BLACK_FIG1["dataset"], fidelity=fid)
    xs, ys, P = grid_points(np.asarray(data.X_train), BLACK_FIG1["grid"], BLACK_FIG1["margin"])
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        table = pd.DataFrame({"x1": P[:, 0], "x2": P[:, 1]})
        shares = {}
        for kind, spec in BLACK_FIG1["models"].items():
            for k, s in enumerate((seed, seed + 1)):
                table[f"{kind}_{k}"] = predict(train_plain(data, spec, s, epochs, fid), P)
            table[f"{kind}_disagree"] = table[f"{kind}_0"] != table[f"{kind}_1"]
            shares[kind] = float(table[f"{kind}_disagree"].mean())
    finally:
        torch.set_num_threads(prev)
    meta = {"kind": "black_figure1", "settings": {**copy.deepcopy(BLACK_FIG1), "epochs": epochs,
                                                   "fidelity": fid.mode},
            "seeds": [seed, seed + 1], "quick": quick, "disagreement_share": shares,
            "seconds": time.perf_counter() - t0, "provenance": provenance()}
    table.attrs.update(train=(np.asarray(data.X_train), np.asarray(data.y_train)), grid=(xs, ys), meta=meta)
    return table
