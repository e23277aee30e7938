"""Integrated gradients and the protected-feature summary of Table II / Fig. 4 (reference §7.7, §11 item 20).

Choices (the reference's IntegratedGradients.jl package is unpublished, §12, so these are documented decisions):

* **Attributed output**: the raw **logit of the target class** by default (``output="logit"``; the models return
  logits and the reference's energies are raw logits, §11.10). ``output="prob"`` attributes the softmax probability
  of the target class instead. Completeness holds for whichever output is chosen:
  ``Σ_d IG_d(x) ≈ f_t(x) − f_t(baseline)``.
* **Path integral**: the **trapezoid rule** with ``steps`` intervals on α ∈ [0, 1] (``steps + 1`` gradient
  evaluations, end points weighted ½). It is exact for models that are linear along the path and its error falls
  like 1/steps² for smooth models (1/steps at ReLU kinks). ``rule="right"`` gives the right Riemann sum
  (α = 1/m, …, 1) of Sundararajan et al. for comparison.
* **Baseline**: the paper draws it from U(−1, 1); we draw **one baseline per sample** (independently per feature),
  from a ``torch.Generator`` so that CT and BL models get identical baselines for one seed. ``"data_range"``
  (uniform within the per-feature min/max of the evaluation set) and ``"zeros"`` are alternatives.
* **Target**: the sample's ground-truth label (as in the reference).
* **Round aggregation** (:func:`ig_rounds`): per round, ``n_samples`` test indices drawn with replacement
  (reusable across models: pass ``indices`` or the same ``seed``), the signed attributions averaged over those
  samples into ``g ∈ R^D``, standardised (:func:`standardise_attributions`) and averaged over the protected
  (0-based) feature indices.

Protected features are **0-based** here (the reference's 1-based lists, §2.3, minus one; MNIST: rows 0–4 and 23–27,
i.e. flat indices 0–139 and 644–783).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from ctbench.evaluation.robustness import as_x, as_y, eval_mode, model_device
from ctbench.facts import ATTRIBUTION

__all__ = [
    "integrated_gradients", "random_baseline", "data_range_baseline", "make_baseline", "draw_round_indices",
    "standardise_attributions", "ig_rounds", "ig_summary", "class_attribution_maps", "BASELINES",
]

BASELINES = ("uniform", "data_range", "zeros")


# --------------------------------------------------------------------------------------------------- baselines
def random_baseline(X, low: float = -1.0, high: float = 1.0, generator: torch.Generator | None = None) -> torch.Tensor:
    """One baseline per sample, each feature ~ U(low, high) (paper: U(−1, 1)); shape of ``X``, float32, CPU."""
    X = torch.as_tensor(np.asarray(X) if not torch.is_tensor(X) else X)
    u = torch.rand(tuple(X.shape), generator=generator, dtype=torch.float32)
    return low + (high - low) * u


def data_range_baseline(X, generator: torch.Generator | None = None, data=None) -> torch.Tensor:
    """One baseline per sample, feature d ~ U(min_d, max_d) with the per-feature range of ``data`` (default ``X``)."""
    X = torch.as_tensor(np.asarray(X) if not torch.is_tensor(X) else X).float().cpu()
    ref = X if data is None else torch.as_tensor(np.asarray(data) if not torch.is_tensor(data) else data)
    ref = ref.float().cpu().reshape(-1, *X.shape[1:])
    lo, hi = ref.min(dim=0).values, ref.max(dim=0).values
    return lo + (hi - lo) * torch.rand(tuple(X.shape), generator=generator, dtype=torch.float32)


def make_baseline(X, kind: str = "uniform", generator: torch.Generator | None = None, low: float = -1.0,
                  high: float = 1.0, data=None) -> torch.Tensor:
    """Baselines of shape ``X.shape`` for ``kind`` ∈ {"uniform" (U(low, high)), "data_range", "zeros"}."""
    if kind == "uniform":
        return random_baseline(X, low, high, generator)
    if kind == "data_range":
        return data_range_baseline(X, generator, data)
    if kind == "zeros":
        return torch.zeros(tuple(torch.as_tensor(np.asarray(X) if not torch.is_tensor(X) else X).shape))
    raise ValueError(f"unknown baseline {kind!r}; choose one of {list(BASELINES)}")


# --------------------------------------------------------------------------------------------------- IG
def _path_grid(steps: int, rule: str) -> tuple[torch.Tensor, torch.Tensor]:
    m = int(steps)
    if m < 1:
        raise ValueError("steps must be >= 1")
    if rule == "trapezoid":
        alphas = torch.arange(m + 1, dtype=torch.float64) / m
        weights = torch.full((m + 1,), 1.0 / m, dtype=torch.float64)
        weights[0] = weights[-1] = 0.5 / m
    elif rule == "right":
        alphas = torch.arange(1, m + 1, dtype=torch.float64) / m
        weights = torch.full((m,), 1.0 / m, dtype=torch.float64)
    else:
        raise ValueError(f"unknown rule {rule!r}; choose 'trapezoid' or 'right'")
    return alphas, weights


def integrated_gradients(model, X, target, baseline, steps: int = 50, batch_size: int = 8192,
                         output: str = "logit", rule: str = "trapezoid",
                         generator: torch.Generator | None = None) -> torch.Tensor:
    """Integrated gradients ``IG_d(x) = (x_d − b_d) ∫₀¹ ∂f_t(b + α(x − b))/∂x_d dα`` for every row of ``X``.

    * ``target``: class index per sample (``(n,)``) or one int for all; ``f_t`` is the target-class **logit**
      (``output="logit"``, default) or its softmax probability (``output="prob"``).
    * ``baseline``: a tensor/array broadcastable to ``X.shape`` (scalar, ``(D,)`` or ``(n, D)``), or a kind from
      :data:`BASELINES` drawn with ``generator`` via :func:`make_baseline`.
    * ``steps``: number of intervals of the trapezoid rule (``rule="right"``: right Riemann sum).
    * ``batch_size``: maximal number of interpolated points per forward/backward pass; the ``n × (steps+1)``
      points are processed as one flat, chunked index space, so memory is bounded for any ``n`` and ``steps``.

    Returns a detached float32 tensor of ``X``'s shape on the model's device. The model is put in eval mode;
    gradients are taken with respect to the inputs only.
    """
    if output not in ("logit", "prob"):
        raise ValueError(f"unknown output {output!r}; choose 'logit' or 'prob'")
    dev = model_device(model)
    X = as_x(X, dev)
    n = X.shape[0]
    if isinstance(baseline, str):
        baseline = make_baseline(X.cpu(), baseline, generator)
    B = torch.as_tensor(np.asarray(baseline) if not torch.is_tensor(baseline) else baseline, dtype=torch.float32)
    B = torch.broadcast_to(B.to(dev), X.shape)
    if isinstance(target, (int, np.integer)):
        t = torch.full((n,), int(target), dtype=torch.long, device=dev)
    else:
        t = as_y(target, dev)
        if t.numel() == 1 and n != 1:
            t = t.expand(n)
    if t.shape[0] != n:
        raise ValueError(f"target has {t.shape[0]} entries for {n} samples")
    alphas, weights = _path_grid(steps, rule)
    layers = _one_hidden_relu(model) if output == "logit" and X.dim() == 2 else None
    if layers is not None:
        with torch.no_grad():
            return _ig_one_hidden_relu(layers, X, B, t, alphas.to(dev), weights.to(dev), batch_size)
    alphas32, weights = alphas.to(dev, torch.float32), weights.to(dev)
    n_pts = len(alphas)
    diff = X - B
    acc = torch.zeros(X.shape, dtype=torch.float64, device=dev)
    total = n * n_pts
    bs = max(int(batch_size), 1)
    view = (-1,) + (1,) * (X.dim() - 1)
    with eval_mode(model):
        for start in range(0, total, bs):
            k = torch.arange(start, min(start + bs, total), device=dev)
            i, j = k // n_pts, k % n_pts
            pts = (B[i] + alphas32[j].reshape(view) * diff[i]).detach().requires_grad_(True)
            with torch.enable_grad():
                out = model(pts)
                if output == "prob":
                    out = torch.softmax(out, dim=1)
                (g,) = torch.autograd.grad(out.gather(1, t[i].unsqueeze(1)).sum(), pts)
            acc.index_add_(0, i, g.double() * weights[j].reshape(view))
    return (diff.double() * acc).float().detach()


def _one_hidden_relu(model) -> tuple[torch.nn.Linear, torch.nn.Linear] | None:
    """``(first, last)`` when ``model`` is exactly ``Linear → ReLU → Linear`` (the paper's MLP), else None."""
    if not isinstance(model, torch.nn.Sequential) or type(model).forward is not torch.nn.Sequential.forward \
            or len(model) != 3:
        return None
    first, act, last = model
    if type(first) is not torch.nn.Linear or type(act) is not torch.nn.ReLU or type(last) is not torch.nn.Linear:
        return None
    return first, last


def _ig_one_hidden_relu(layers, X, B, t, alphas, weights, batch_size) -> torch.Tensor:
    """Integrated gradients of the target logit of ``Linear → ReLU → Linear`` in closed form (issue 21).

    Along the path ``b + α(x − b)`` the hidden pre-activation is affine in α, ``h(α) = h₀ + α·Δh`` with
    ``h₀ = W₁b + c₁`` and ``Δh = W₁(x − b)``, and the input gradient of logit t at α is ``W₁ᵀ (w₂ₜ ⊙ [h(α) > 0])``.
    So the quadrature ``Σⱼ ωⱼ ∇f_t(αⱼ)`` is ``W₁ᵀ (w₂ₜ ⊙ Σⱼ ωⱼ [h(αⱼ) > 0])``: the weighted ReLU masks summed per
    sample, then one backward product per sample instead of one per path point. The same rule and points as the
    autograd path; the pre-activations are computed in float64 from (b, x − b) rather than in float32 at each
    interpolated point, so a unit whose pre-activation is within round-off of 0 at a path point can flip its mask
    and the result moves in the last bits (measured max relative difference ≈ 1e-7; tested against the autograd
    path in tests/test_eval_speed_equivalence.py)."""
    first, last = layers
    W1, c1 = first.weight.detach().double(), first.bias.detach().double()
    w2t = last.weight.detach().double()[t]  # (n, H)
    diff = X - B
    n, H = X.shape[0], W1.shape[0]
    acc = torch.empty((n, H), dtype=torch.float64, device=X.device)
    step = max(1, int(batch_size) * 8 // max(len(alphas), 1))
    for s in range(0, n, step):
        h0 = torch.addmm(c1, B[s:s + step].double(), W1.T)
        dh = diff[s:s + step].double() @ W1.T
        pre = h0.unsqueeze(1) + alphas.view(1, -1, 1) * dh.unsqueeze(1)  # (rows, points, H)
        acc[s:s + step] = torch.einsum("rph,p->rh", (pre > 0).double(), weights)
    grad = (acc * w2t) @ W1  # (n, D)
    return (diff.double() * grad).float()


# --------------------------------------------------------------------------------------------------- Table II
def draw_round_indices(n: int, n_rounds: int = ATTRIBUTION["rounds"], n_samples: int = ATTRIBUTION["samples"],
                       seed: int = 0) -> np.ndarray:
    """``(n_rounds, n_samples)`` indices into ``range(n)`` drawn with replacement (numpy ``default_rng(seed)``).

    Draw once and pass the array to :func:`ig_rounds` of both models (or give both the same ``seed``) so that CT and
    BL are evaluated on the same samples, as in the reference.
    """
    rng = np.random.default_rng(seed)
    return rng.integers(0, int(n), size=(int(n_rounds), int(n_samples)))


def standardise_attributions(g) -> np.ndarray:
    """Per-round standardisation of an average attribution vector ``g`` (reference §7.7, §11.20).

    2-D data (``len(g) == 2``): ``s_d = |g_d| / (max g − min g)`` (explodes when both attributions are similar);
    otherwise min–max: ``s_d = (g_d − min g) / (max g − min g)``. A constant ``g`` gives 0/0 = NaN (as in Julia).
    """
    g = np.asarray(g, dtype=np.float64).reshape(-1)
    rng = g.max() - g.min()
    with np.errstate(divide="ignore", invalid="ignore"):
        if g.size == 2:
            return np.abs(g) / rng
        return (g - g.min()) / rng


def _protected_index(protected, D: int) -> np.ndarray:
    p = np.asarray(protected)
    if p.dtype == bool:
        if p.size != D:
            raise ValueError(f"protected mask has {p.size} entries for {D} features")
        p = np.flatnonzero(p)
    p = p.astype(int).reshape(-1)
    if p.size == 0 or p.min() < 0 or p.max() >= D:
        raise ValueError(f"protected indices must be non-empty, 0-based and < {D}; got {p.tolist()[:10]}")
    return p


def ig_rounds(model, X, y, protected: Sequence[int] | np.ndarray, n_rounds: int = ATTRIBUTION["rounds"],
              n_samples: int = ATTRIBUTION["samples"], seed: int = 0, steps: int = ATTRIBUTION["steps"],
              indices: np.ndarray | None = None, baseline: str = "uniform", output: str = "logit",
              batch_size: int = 8192, return_indices: bool = False):
    """Mean standardised IG on the protected features, one value per round (Table II's bootstrap).

    Each round r uses the test indices ``indices[r]`` (default: :func:`draw_round_indices` with ``seed``; pass the
    same array for CT and BL), computes IG w.r.t. the true label with fresh per-sample baselines (``baseline`` kind,
    from ``torch.Generator().manual_seed(seed)`` — identical for two models given the same seed), averages the
    signed attributions over the samples into ``g``, standardises ``g`` (:func:`standardise_attributions`) and takes
    the mean over ``protected`` (0-based indices or a boolean mask of length D).

    Returns a DataFrame with columns ``round`` (int, 0-based) and ``value`` (float); with ``return_indices=True``,
    the tuple ``(frame, indices)``.
    """
    dev = model_device(model)
    X, y = as_x(X, dev), as_y(y, dev)
    D = X[0].numel()
    prot = _protected_index(protected, D)
    if indices is None:
        indices = draw_round_indices(len(X), n_rounds, n_samples, seed)
    indices = np.asarray(indices, dtype=np.int64)
    if indices.ndim == 1:
        indices = indices[None, :]
    gen = torch.Generator().manual_seed(int(seed))
    X_cpu = X.cpu()
    values = []
    for idx in indices:
        ti = torch.as_tensor(idx, device=dev)
        xb = X[ti]
        base = make_baseline(xb.cpu(), baseline, gen, data=X_cpu)
        attr = integrated_gradients(model, xb, y[ti], base, steps=steps, batch_size=batch_size, output=output)
        g = attr.reshape(len(idx), -1).double().mean(dim=0).cpu().numpy()
        values.append(float(np.mean(standardise_attributions(g)[prot])))
    frame = pd.DataFrame({"round": np.arange(len(values), dtype=int), "value": values})
    return (frame, indices) if return_indices else frame


def ig_summary(values) -> dict[str, float]:
    """``{"median", "lb_2.5", "ub_97.5"}`` of the round values (numpy linear quantiles = Julia's default).

    ``values`` may be an array/Series or the frame of :func:`ig_rounds` (its ``value`` column is used).
    """
    if isinstance(values, pd.DataFrame):
        values = values["value"]
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    return {"median": float(np.quantile(v, 0.5)), "lb_2.5": float(np.quantile(v, 0.025)),
            "ub_97.5": float(np.quantile(v, 0.975))}


# --------------------------------------------------------------------------------------------------- Fig. 4
def class_attribution_maps(model, X, y, n_classes: int, steps: int = 50, baseline: str = "uniform", seed: int = 0,
                           output: str = "logit", batch_size: int = 8192,
                           image_shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Per class c: mean IG (target = c) over all samples with label c, min–max normalised to [0, 1].

    Returns ``(K, 28, 28)`` when D = 784 (row-major reshape, as the data are stored) or ``image_shape`` is given,
    else ``(K, D)``. A class without samples gives a NaN map; a constant map gives zeros. Baselines are drawn per
    sample with ``torch.Generator().manual_seed(seed)`` (paper: random U(−1, 1), 50 steps).
    """
    dev = model_device(model)
    X, y = as_x(X, dev), as_y(y, dev)
    D = X[0].numel()
    shape = tuple(image_shape) if image_shape is not None else ((28, 28) if D == 784 else (D,))
    gen = torch.Generator().manual_seed(int(seed))
    maps = np.full((int(n_classes), D), np.nan)
    X_cpu = X.cpu()
    for c in range(int(n_classes)):
        sel = torch.nonzero(y == c).reshape(-1)
        if len(sel) == 0:
            continue
        xb = X[sel]
        base = make_baseline(xb.cpu(), baseline, gen, data=X_cpu)
        attr = integrated_gradients(model, xb, c, base, steps=steps, batch_size=batch_size, output=output)
        m = attr.reshape(len(sel), -1).double().mean(dim=0).cpu().numpy()
        rng = m.max() - m.min()
        maps[c] = (m - m.min()) / rng if rng > 0 else np.zeros_like(m)
    return maps.reshape(int(n_classes), *shape)
