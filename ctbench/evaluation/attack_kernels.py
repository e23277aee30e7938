"""The robustness curve of :func:`ctbench.evaluation.robustness.robustness_curve`, with the same accuracies bit for
bit but fewer passes over memory (issue 21, evaluation stage; tested in ``tests/test_attack_kernels.py``).

* PGD's projection runs in place in one buffer per batch (``x + step·sign``, the ε-ball's min/max and the optional
  domain clamp are the same element-wise operations on the same values, written into ``out=`` buffers): the eager
  code allocated four fresh (batch × D) tensors a step, whose page faults cost more than the arithmetic (MNIST:
  ≈ 4.6 → 2.1 ms a step of 2,048 × 784 at one thread).
* PGD at ε = 0 is not iterated: the ball is the point, so every iterate is the (clamped) input; its random start,
  drawn from that ε's own generator, is used by nothing else.
* The model's parameters do not require gradients during the curve (restored after): the input gradient is the
  same product, without the autograd bookkeeping for the weights (≈ 8% of an MNIST step).

Reached from ``ctbench robustness`` only (:mod:`ctbench.experiments.robustness`), so the stages that use
``robustness`` for accuracy and F1 keep their code fingerprint; the two can merge when those stages are rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from .robustness import DEFAULT_EPS_GRID, as_x, as_y, eval_mode, model_device

__all__ = ["pgd", "robustness_curve"]


def _grad_sign(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``sign(∇ₓ Σ_i CE(model(x_i), y_i))``, as ``robustness`` takes it."""
    x = x.detach().requires_grad_(True)
    with torch.enable_grad():
        loss = F.cross_entropy(model(x), y, reduction="sum")
        (grad,) = torch.autograd.grad(loss, x)
    return grad.sign()


@contextmanager
def _frozen(model):
    """The model's parameters without ``requires_grad`` for the block; each parameter's flag restored after."""
    params = [p for p in model.parameters() if p.requires_grad] if hasattr(model, "parameters") else []
    for p in params:
        p.requires_grad_(False)
    try:
        yield model
    finally:
        for p in params:
            p.requires_grad_(True)


def _bounds(clamp, like: torch.Tensor):
    if clamp is None:
        return None
    return tuple(torch.as_tensor(v, dtype=like.dtype, device=like.device) for v in clamp)


def _project(x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, bounds) -> torch.Tensor:
    """``x`` into the ε-ball (then the domain), in place: ``robustness``'s min/max in the same order."""
    torch.minimum(x, hi, out=x)
    torch.maximum(x, lo, out=x)
    if bounds is not None:
        torch.minimum(x, bounds[1], out=x)
        torch.maximum(x, bounds[0], out=x)
    return x


def pgd(model, X, y, eps: float, step: float = 0.01, n_steps: int = 40, random_start: bool = True,
        generator: torch.Generator | None = None, clamp=None) -> torch.Tensor:
    """:func:`ctbench.evaluation.robustness.pgd` with the iterate updated in place (the same values), and ε = 0
    answered without iterating (and without drawing the random start)."""
    dev = model_device(model)
    X0, y = as_x(X, dev), as_y(y, dev)
    eps = float(eps)
    bounds = _bounds(clamp, X0)
    if eps == 0.0:
        x = X0.clone()
        if bounds is not None:
            torch.minimum(x, bounds[1], out=x)
            torch.maximum(x, bounds[0], out=x)
        return x
    lo, hi = X0 - eps, X0 + eps
    if random_start:
        u = torch.rand(X0.shape, generator=generator, dtype=torch.float32).to(dev)
        x = X0 + eps * (2.0 * u - 1.0)
    else:
        x = X0.clone()
    _project(x, lo, hi, bounds)
    buf = torch.empty_like(x)
    with eval_mode(model):
        for _ in range(int(n_steps)):
            torch.mul(_grad_sign(model, x, y), step, out=buf)
            torch.add(x, buf, out=x)
            _project(x, lo, hi, bounds)
    return x.detach()


def robustness_curve(model, X, y, eps_grid: Sequence[float] | np.ndarray | None = None,
                     attacks: Sequence[str] = ("fgsm", "pgd"), seed: int = 0, batch_size: int | None = 2048,
                     step: float = 0.01, n_steps: int = 40, random_start: bool = True, clamp=None) -> pd.DataFrame:
    """:func:`ctbench.evaluation.robustness.robustness_curve` (same arguments, same frame, the same accuracies)."""
    eps_grid = DEFAULT_EPS_GRID if eps_grid is None else np.asarray(eps_grid, dtype=float).reshape(-1)
    attacks = tuple(attacks)
    unknown = set(attacks) - {"fgsm", "pgd"}
    if unknown:
        raise ValueError(f"unknown attack(s) {sorted(unknown)}; choose from ['fgsm', 'pgd']")
    dev = model_device(model)
    X, y = as_x(X, dev), as_y(y, dev)
    n = len(X)
    correct = {(a, i): 0 for a in attacks for i in range(len(eps_grid))}
    gens = {i: torch.Generator().manual_seed(int(seed)) for i in range(len(eps_grid))}
    bounds = _bounds(clamp, X)
    bs = n if not batch_size or batch_size <= 0 else int(batch_size)
    with eval_mode(model), _frozen(model):
        for start in range(0, n, max(bs, 1)):
            xb, yb = X[start:start + bs], y[start:start + bs]
            if "fgsm" in attacks:
                sign = _grad_sign(model, xb, yb)
                x_adv = torch.empty_like(xb)
                with torch.no_grad():
                    for i, eps in enumerate(eps_grid):
                        torch.mul(sign, float(eps), out=x_adv)
                        torch.add(xb, x_adv, out=x_adv)
                        if bounds is not None:
                            torch.minimum(x_adv, bounds[1], out=x_adv)
                            torch.maximum(x_adv, bounds[0], out=x_adv)
                        correct["fgsm", i] += int((model(x_adv).argmax(1) == yb).sum())
            if "pgd" in attacks:
                for i, eps in enumerate(eps_grid):
                    x_adv = pgd(model, xb, yb, float(eps), step=step, n_steps=n_steps, random_start=random_start,
                                generator=gens[i], clamp=clamp)
                    with torch.no_grad():
                        correct["pgd", i] += int((model(x_adv).argmax(1) == yb).sum())
    rows = [{"attack": a, "eps": float(eps), "accuracy": correct[a, i] / n if n else float("nan")}
            for a in attacks for i, eps in enumerate(eps_grid)]
    return pd.DataFrame(rows, columns=["attack", "eps", "accuracy"])
