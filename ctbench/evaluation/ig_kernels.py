"""Integrated gradients of ``Linear → ReLU → Linear`` without the (samples × path points × hidden units) masks
(issue 21, evaluation stage; tested in ``tests/test_ig_kernels.py``).

:func:`ctbench.evaluation.integrated_gradients.integrated_gradients` already has the closed form: along the path the
hidden pre-activation is ``h₀ + α·Δh``, so the quadrature is ``W₁ᵀ (w₂ₜ ⊙ Σⱼ ωⱼ [h₀ + αⱼΔh > 0])``. It evaluates the
mask at every path point, a (rows × points × H) float64 tensor, and that tensor's passes were most of an attribution
job. But ``fl(h₀ + fl(αⱼ·Δh))`` is monotone in αⱼ (rounding is monotone), so each unit's mask is a run of ones at
the end of the path (Δh ≥ 0) or at its start (Δh < 0): it is fixed by where the run starts, found by a binary search
over the points with the same float64 expression (⌈log₂(points + 1)⌉ evaluations instead of points). Its weighted
sum is read from a table of every such run, summed by the same ``einsum`` as the mask tensor was. Same numbers as
the masks' closed form on the paper's models (bit for bit on the tested rounds and random MLPs; the table's sums go
through the same kernel, which sums each row of masks on its own).

Reached from ``ctbench attribution`` only (:func:`closed_form_ig` swaps it in for ``integrated_gradients`` for one
job), so the figure stage, which draws class maps with the same module, keeps its code fingerprint.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np
import torch

from . import integrated_gradients as ig
from .robustness import as_x, as_y, model_device

__all__ = ["closed_form_ig", "integrated_gradients", "mask_weight_sums", "path_grid", "run_table"]

#: the general implementation, kept before :func:`closed_form_ig` swaps this module's in
_GENERAL = ig.integrated_gradients


def path_grid(steps: int, rule: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The path points and weights of ``integrated_gradients`` (trapezoid: ``steps + 1`` points, ends ½; right
    Riemann: ``steps`` points)."""
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


def run_table(weights: torch.Tensor) -> torch.Tensor:
    """Weighted sums of every run of ones, by the ``einsum`` of the mask closed form: entry ``a`` (0 … P) the run
    from point ``a`` to the end, entry ``P + 1 + a`` the run of the first ``a`` points."""
    p = weights.numel()
    masks = torch.zeros((2 * (p + 1), p, 1), dtype=torch.float64, device=weights.device)
    for a in range(p + 1):
        masks[a, a:] = 1.0
        masks[p + 1 + a, :a] = 1.0
    return torch.einsum("rph,p->rh", masks, weights).reshape(-1)


def mask_weight_sums(h0: torch.Tensor, dh: torch.Tensor, alphas: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """``Σⱼ ωⱼ [h₀ + αⱼ·Δh > 0]`` per entry of ``h0``/``dh`` (float64, same shape), from ``run_table``."""
    p = alphas.numel()
    neg = dh < 0  # the mask is a run at the start of the path; else at its end (Δh = 0: all or none)
    lo = torch.zeros(h0.shape, dtype=torch.long, device=h0.device)
    hi = torch.full(h0.shape, p, dtype=torch.long, device=h0.device)
    # the first point where the mask leaves its start value, in [0, P]: a binary search on a monotone predicate
    for _ in range(math.ceil(math.log2(p + 1))):
        active = lo < hi
        mid = torch.div(lo + hi, 2, rounding_mode="floor")
        flip = ((h0 + alphas[mid.clamp(max=p - 1)] * dh > 0) != neg) & active
        hi = torch.where(flip, mid, hi)
        lo = torch.where(active & ~flip, mid + 1, lo)
    return table[torch.where(neg, p + 1 + lo, lo)]


def _one_hidden_relu(model):
    if not isinstance(model, torch.nn.Sequential) or type(model).forward is not torch.nn.Sequential.forward \
            or len(model) != 3:
        return None
    first, act, last = model
    if type(first) is not torch.nn.Linear or type(act) is not torch.nn.ReLU or type(last) is not torch.nn.Linear:
        return None
    return first, last


def integrated_gradients(model, X, target, baseline, steps: int = 50, batch_size: int = 8192,
                         output: str = "logit", rule: str = "trapezoid",
                         generator: torch.Generator | None = None) -> torch.Tensor:
    """:func:`ctbench.evaluation.integrated_gradients.integrated_gradients` (same arguments and result); the target
    logit of a ``Linear → ReLU → Linear`` model on 2-D inputs with a given baseline by :func:`mask_weight_sums`,
    anything else by the original."""
    layers = _one_hidden_relu(model)
    dev = model_device(model)
    if layers is None or output != "logit" or isinstance(baseline, str) or as_x(X, dev).dim() != 2:
        return _GENERAL(model, X, target, baseline, steps=steps, batch_size=batch_size, output=output, rule=rule,
                        generator=generator)
    X = as_x(X, dev)
    n = X.shape[0]
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
    alphas, weights = (v.to(dev) for v in path_grid(steps, rule))
    first, last = layers
    with torch.no_grad():
        W1, c1 = first.weight.detach().double(), first.bias.detach().double()
        w2t = last.weight.detach().double()[t]
        diff = (X - B).double()  # converted once (the mask closed form converts it twice: the same values)
        table = run_table(weights)
        acc = torch.empty((n, W1.shape[0]), dtype=torch.float64, device=dev)
        step = max(1, int(batch_size) * 8 // max(len(alphas), 1))  # the chunks of the mask closed form
        for s in range(0, n, step):
            h0 = torch.addmm(c1, B[s:s + step].double(), W1.T)
            dh = diff[s:s + step] @ W1.T
            acc[s:s + step] = mask_weight_sums(h0, dh, alphas, table)
        grad = (acc * w2t) @ W1
        return (diff * grad).float()


@contextmanager
def closed_form_ig():
    """For one ``ctbench attribution`` job: ``integrated_gradients.integrated_gradients`` (what ``ig_rounds``
    calls) is this module's; restored on exit."""
    original = ig.integrated_gradients
    ig.integrated_gradients = integrated_gradients
    try:
        yield
    finally:
        ig.integrated_gradients = original
