"""Black et al. (ICLR 2022) Figure 2: (a) the geometry of a ReLU network's input space, (b) σ(t·x') along the path
from the zero baseline for Min-ℓ2 counterfactuals and the same refined by SNS.

(a) A small ReLU MLP on Moons (conventional training, :data:`~.black.BLACK_FIG1`'s settings). On a grid: every hidden
unit's pre-activation (its zero set is an activation constraint, drawn dashed), the activation pattern (equal patterns
= one activation region, where the network is affine) and the logit difference f = f₁ − f₀ (its zero set is the
decision boundary, drawn solid). At a few test points the input gradient ∇f, which within a region is the region's
affine map: orthogonal to the boundary where the boundary crosses that region, else to its extension.

(b) For seeded test factuals, Min-ℓ2 (``make_method("min_l2")``) and Min-ℓ2 + SNS (``SNSGenerator.refine``, the
consistency study's settings: the ``paper`` preset, radius 0.8 × the median training norm) towards the other class.
For each valid counterfactual x': σ(t·x') = softmax(f(t·x'))[target] for t ∈ [0, 1] (the zero baseline, as Eq. 4 and
the project's SNS) and dσ(t·x')/dt = ∇σ(t·x')·x' by autograd; the sidecar has per method the median of
max_t dσ/dt (Eq. 4's term), of σ(x') and of SNS's Riemann integral, overall and split by whether the target is the
class of the baseline (then the curve can stay flat; otherwise it must climb from σ(0) to σ(x')).
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from ...io import provenance
from .black import BLACK_FIG1, grid_points, train_plain

#: settings of the run (Black et al. give none for Figure 2: it is an illustration)
BLACK_FIG2: dict[str, Any] = {
    "dataset": "moons",
    "model": {"type": "mlp", "hidden": 8, "layers": 2},   # small, so that the regions stay readable
    "training": BLACK_FIG1["training"],
    "quick_epochs": BLACK_FIG1["quick_epochs"],
    "grid": 160,
    "margin": 0.5,
    "n_points": 4,               # gradient arrows in (a): 3 in regions the boundary crosses, 1 in one it does not
    "n_factuals": 200,           # seeded test rows searched in (b); only valid Min-ℓ2 rows are drawn
    # Min-ℓ2 as the consistency study on a non-003 dataset (step 0.01); a box per feature, because ART's [0, 1]
    # clamp (``box="art"``) assumes min-max data and Moons is not
    "min_l2": {"learning_rate": 0.01, "box": "feature"},
    "sns": {"fidelity": "paper", "radius_factor": 0.8},  # radius = factor × median training norm, as the study
    "t_points": 1001,            # t grid of the curves and of max_t dσ/dt
    "curve_every": 5,            # the curves CSV and the plot keep every 5th t (201 points)
}


def hidden_preactivations(model: nn.Sequential, P: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(pre-activations of every hidden unit, (N, units); logits (N, K)) of an MLP (Linear/ReLU sequence)."""
    pre, h = [], P
    for layer in model:
        h = layer(h)
        if isinstance(layer, nn.Linear):
            pre.append(h)
    return torch.cat(pre[:-1], 1), h


def region_ids(pre: np.ndarray) -> np.ndarray:
    """One id per distinct activation pattern (sign of every hidden pre-activation): the activation regions."""
    return np.unique(pre > 0, axis=0, return_inverse=True)[1].reshape(-1)


def input_gradient(model: nn.Module, P: torch.Tensor) -> torch.Tensor:
    """∇ₓ (f₁ − f₀) at the points ``P`` (the binary model's single logit, as the paper's f)."""
    P = P.detach().clone().requires_grad_(True)
    out = model(P)
    (g,) = torch.autograd.grad((out[:, 1] - out[:, 0]).sum(), P)
    return g


def pick_points(logit_pts: np.ndarray, reg_pts: np.ndarray, grads: np.ndarray, reg_grid: np.ndarray,
                logit_grid: np.ndarray, n: int) -> list[dict[str, Any]]:
    """The arrows of (a): from distinct regions, the test points nearest the boundary of their region's affine map
    (|f| / ‖∇f‖), ``n − 1`` in regions that the decision boundary crosses on the grid and one in a region it does
    not (fewer if there are none)."""
    dist = np.abs(logit_pts) / np.maximum(np.linalg.norm(grads, axis=1), 1e-12)
    crossed = {int(r): bool((logit_grid[reg_grid == r] > 0).any() and (logit_grid[reg_grid == r] <= 0).any())
               for r in np.unique(reg_grid)}
    want = {True: n - 1, False: 1}
    out: list[dict[str, Any]] = []
    for i in np.argsort(dist, kind="stable"):
        r = int(reg_pts[i])
        if r not in crossed or any(p["region"] == r for p in out) or want[crossed[r]] == 0:
            continue  # a region with no grid cell cannot be shaded
        want[crossed[r]] -= 1
        out.append({"index": int(i), "region": r, "crossed": crossed[r], "distance": float(dist[i])})
        if not any(want.values()):
            break
    return sorted(out, key=lambda p: not p["crossed"])


def path_curves(model: nn.Module, cf: torch.Tensor, target: torch.Tensor, ts: torch.Tensor
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(σ_target(t·x'), dσ_target(t·x')/dt, ‖∇σ_target(t·x')‖₂), each (len(ts), rows): the zero-baseline path of
    Eq. 4, slope by autograd (∇σ(t·x')·x'); the gradient norm is Eq. 3's term, which Eq. 4 bounds from below."""
    T, B, D = len(ts), cf.shape[0], cf.shape[1]
    path = (ts[:, None, None] * cf[None]).reshape(T * B, D).detach().requires_grad_(True)
    sig = torch.softmax(model(path), 1).reshape(T, B, -1).gather(2, target.reshape(1, B, 1).expand(T, B, 1))
    (g,) = torch.autograd.grad(sig.sum(), path)
    g = g.reshape(T, B, D)
    return sig.squeeze(2).detach().numpy(), (g * cf[None]).sum(2).numpy(), g.norm(dim=2).numpy()


def _geometry(model, X_train, X_test) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Panel (a): the grid table (x1, x2, f, region) with the pre-activations, and the arrows' points."""
    xs, ys, P = grid_points(X_train, BLACK_FIG2["grid"], BLACK_FIG2["margin"])
    Pt = torch.as_tensor(P, dtype=torch.float32)
    with torch.no_grad():
        pre, logits = hidden_preactivations(model, Pt)
    pre = pre.numpy()
    logit = (logits[:, 1] - logits[:, 0]).numpy()
    reg = region_ids(pre)
    grid = pd.DataFrame({"x1": P[:, 0], "x2": P[:, 1], "logit": logit, "region": reg})
    Xt = torch.as_tensor(X_test, dtype=torch.float32)
    with torch.no_grad():
        pre_t, logits_t = hidden_preactivations(model, Xt)
    # region ids of the test points in the grid's numbering (a pattern the grid lacks gets -1)
    keys = {p.tobytes(): r for p, r in zip(pre > 0, reg, strict=True)}
    reg_t = np.array([keys.get(p.tobytes(), -1) for p in (pre_t.numpy() > 0)])
    g = input_gradient(model, Xt).numpy()
    picked = pick_points((logits_t[:, 1] - logits_t[:, 0]).numpy(), reg_t, g, reg, logit, BLACK_FIG2["n_points"])
    points = pd.DataFrame([{**p, "x1": float(X_test[p["index"], 0]), "x2": float(X_test[p["index"], 1]),
                            "grad1": float(g[p["index"], 0]), "grad2": float(g[p["index"], 1])} for p in picked])
    info = {"n_regions": int(len(np.unique(reg))), "n_units": int(pre.shape[1]), "xs": xs, "ys": ys, "pre": pre}
    return grid, points, info


def _paths(model, data, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Panel (b): Min-ℓ2 and Min-ℓ2 + SNS from the same factuals; per-row table and the curves."""
    from ...generators import SNSGenerator, make_method
    from ...generators.pgd import median_norm
    from ...generators.sns import integrated_score

    X_test = np.asarray(data.X_test)
    n = min(BLACK_FIG2["n_factuals"], len(X_test))
    rows = np.sort(np.random.default_rng(seed).choice(len(X_test), n, replace=False))
    x = torch.as_tensor(X_test[rows], dtype=torch.float32)
    with torch.no_grad():
        target = 1 - model(x).argmax(1)
        baseline_class = int(model(torch.zeros(1, x.shape[1])).argmax(1))
    radius = BLACK_FIG2["sns"]["radius_factor"] * median_norm(data.X_train)
    sns = SNSGenerator(radius=radius, fidelity=BLACK_FIG2["sns"]["fidelity"], seed=seed)
    min_l2 = make_method("min_l2", **BLACK_FIG2["min_l2"])
    base = min_l2.search(model, x, target, None, None, torch.Generator().manual_seed(seed))
    found = {"min_l2": base, "min_l2+sns": sns.refine(model, base, None, torch.Generator().manual_seed(seed))}
    ts = torch.linspace(0, 1, BLACK_FIG2["t_points"])
    every = BLACK_FIG2["curve_every"]
    tables, curves = [], []
    for method, res in found.items():
        cf = res.counterfactual.detach()
        with torch.no_grad():
            valid = (model(cf).argmax(1) == target).numpy()
        sig, slope, gnorm = path_curves(model, cf, target, ts)
        k = slope.argmax(0)
        tables.append(pd.DataFrame({
            "method": method, "row": rows, "x1": x[:, 0].numpy(), "x2": x[:, 1].numpy(),
            "cf1": cf[:, 0].numpy(), "cf2": cf[:, 1].numpy(), "target": target.numpy(),
            "target_is_baseline_class": target.numpy() == baseline_class, "valid": valid,
            "cost_l2": (cf - x).norm(dim=1).numpy(), "sigma_final": sig[-1], "max_slope": slope.max(0),
            "t_max_slope": ts.numpy()[k], "max_grad_norm": gnorm.max(0),
            "sns_integral": integrated_score(model, cf, target, sns.grid_points).numpy()}))
        keep = np.flatnonzero(valid)
        tk = ts.numpy()[::every]
        curves.append(pd.DataFrame({"method": method, "row": np.repeat(rows[keep], len(tk)),
                                    "t": np.tile(tk, len(keep)), "sigma": sig[::every, keep].T.reshape(-1),
                                    "slope": slope[::every, keep].T.reshape(-1)}))
    info = {"baseline_class": baseline_class, "sns": sns.params(), "min_l2": min_l2.params(), "n_factuals": int(n)}
    return pd.concat(tables, ignore_index=True), pd.concat(curves, ignore_index=True), info


def flatness(table: pd.DataFrame) -> dict[str, Any]:
    """Per method, over the rows valid under both methods: the medians of max_t dσ/dt, max_t ‖∇σ‖, σ(x') and SNS's
    integral, overall and by whether the target is the baseline's class."""
    both = table.groupby("row")["valid"].transform("all")
    v = table[both]
    out: dict[str, Any] = {}
    for label, part in (("all", v), ("target_is_baseline_class", v[v["target_is_baseline_class"]]),
                        ("target_is_other_class", v[~v["target_is_baseline_class"]])):
        out[label] = {m: {"n": int(len(g)), "median_max_slope": float(g["max_slope"].median()),
                          "median_max_grad_norm": float(g["max_grad_norm"].median()),
                          "median_sigma_final": float(g["sigma_final"].median()),
                          "median_sns_integral": float(g["sns_integral"].median())}
                      for m, g in part.groupby("method", sort=False)}
    return out


def black_figure2(seed: int = 0, quick: bool = False, epochs: int | None = None,
                  fidelity: str = "reference") -> pd.DataFrame:
    """The per-counterfactual table of Black et al.'s Figure 2 (b) (``black_figure2.csv``), with ``attrs``
    ``grid`` (panel (a)'s grid table), ``points`` (its arrows), ``curves`` (panel (b)'s curves), ``train`` (X, y),
    ``axes`` (xs, ys, pre-activations), ``model`` (the trained MLP) and ``meta`` (the sidecar)."""
    from ...data import load_dataset
    from ...fidelity import resolve_fidelity

    t0, c0 = time.perf_counter(), time.process_time()
    epochs = int(epochs if epochs is not None else
                 (BLACK_FIG2["quick_epochs"] if quick else BLACK_FIG2["training"]["epochs"]))
    fid = resolve_fidelity(fidelity, {})
    data = load_dataset(BLACK_FIG2["dataset"], fidelity=fid)
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = train_plain(data, BLACK_FIG2["model"], seed, epochs, fid)
        grid, points, geo = _geometry(model, np.asarray(data.X_train), np.asarray(data.X_test))
        table, curves, info = _paths(model, data, seed)
    finally:
        torch.set_num_threads(prev)
    with torch.no_grad():
        acc = float((model(torch.as_tensor(data.X_test, dtype=torch.float32)).argmax(1).numpy()
                     == np.asarray(data.y_test)).mean())
    validity = table.groupby("method", sort=False)["valid"].mean().to_dict()
    meta = {"kind": "black_figure2", "settings": {**copy.deepcopy(BLACK_FIG2), "epochs": epochs,
                                                   "fidelity": fid.mode},
            "seed": seed, "quick": quick, "test_accuracy": acc, "n_regions": geo["n_regions"],
            "n_units": geo["n_units"], "points": points.to_dict("records"), "baseline": "zero vector",
            "baseline_class": info["baseline_class"], "sns": info["sns"], "min_l2": info["min_l2"],
            "validity": {k: float(v) for k, v in validity.items()}, "flatness": flatness(table),
            "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
            "provenance": provenance()}
    table.attrs.update(grid=grid, points=points, curves=curves, axes=(geo["xs"], geo["ys"], geo["pre"]), model=model,
                       train=(np.asarray(data.X_train), np.asarray(data.y_train)), meta=meta)
    return table
