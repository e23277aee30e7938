"""Predictive performance and adversarial robustness (reference §7.6, §11 item 19; paper Fig. 5).

* :func:`accuracy` and :func:`macro_f1` score the ``argmax`` predictions on the whole (test) set.
* :func:`fgsm` and :func:`pgd` are the two L∞ attacks of the reference's ``adversarial.jl``: both ascend the mean
  cross-entropy with the **true** labels, neither clamps to the data domain unless asked (``clamp=(lo, hi)``), and
  PGD uses a random start and a step size that is fixed (0.01) for every ε.
* :func:`robustness_curve` evaluates adversarial accuracy over an ε grid (default ``numpy.linspace(0, 0.1, 10)``,
  Julia's ``range(0, 0.1, length=10)``) in batches, so MNIST-size test sets fit in memory.

Models map ``(n, D)`` float32 inputs to raw logits ``(n, K)``. All functions put the model in eval mode for the
duration of the call (restoring its previous mode afterwards) and differentiate with respect to the inputs only
(``torch.autograd.grad``; parameter ``.grad`` fields are never touched).

Batching note: the attacks use the gradient of the *summed* cross-entropy. For a model without cross-sample coupling
(true in eval mode) this is n × the gradient of the mean, so its sign — all FGSM and PGD need — is the reference's
``sign(∇ₓ CE_mean)`` while not depending on how the test set is split into batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import contextmanager

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["accuracy", "macro_f1", "predict", "fgsm", "pgd", "robustness_curve", "DEFAULT_EPS_GRID"]

DEFAULT_EPS_GRID = np.linspace(0.0, 0.1, 10)  # Julia range(0, 0.1, length=10)

Clamp = tuple[float | torch.Tensor, float | torch.Tensor] | None


# --------------------------------------------------------------------------------------------------- helpers
def model_device(model: nn.Module | object) -> torch.device:
    try:
        return next(model.parameters()).device  # type: ignore[union-attr]
    except (AttributeError, StopIteration):
        return torch.device("cpu")


def as_x(X, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(np.asarray(X) if not torch.is_tensor(X) else X, dtype=torch.float32).to(device)


def as_y(y, device: torch.device) -> torch.Tensor:
    y = torch.as_tensor(np.asarray(y) if not torch.is_tensor(y) else y)
    return y.reshape(-1).long().to(device)


@contextmanager
def eval_mode(model):
    """Temporarily put ``model`` in eval mode (no-op for plain callables)."""
    was_training = getattr(model, "training", None)
    if hasattr(model, "eval"):
        model.eval()
    try:
        yield model
    finally:
        if was_training and hasattr(model, "train"):
            model.train(True)


def _batches(n: int, batch_size: int | None) -> Iterable[slice]:
    bs = n if not batch_size or batch_size <= 0 else int(batch_size)
    for start in range(0, n, max(bs, 1)):
        yield slice(start, min(start + bs, n))


def _bounds(clamp: Clamp, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    if clamp is None:
        return None
    lo, hi = clamp
    lo = torch.as_tensor(lo, dtype=like.dtype, device=like.device)
    hi = torch.as_tensor(hi, dtype=like.dtype, device=like.device)
    return lo, hi


def _clamp(x: torch.Tensor, bounds: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
    if bounds is None:
        return x
    return torch.maximum(torch.minimum(x, bounds[1]), bounds[0])


def _ce_grad_sign(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``sign(∇ₓ Σ_i CE(model(x_i), y_i))`` — same sign as the gradient of the mean CE."""
    x = x.detach().requires_grad_(True)
    with torch.enable_grad():
        loss = F.cross_entropy(model(x), y, reduction="sum")
        (grad,) = torch.autograd.grad(loss, x)
    return grad.sign()


# --------------------------------------------------------------------------------------------------- metrics
@torch.no_grad()
def predict(model, X, batch_size: int | None = 8192) -> torch.Tensor:
    """Argmax class predictions ``(n,)`` (long, on the model's device)."""
    dev = model_device(model)
    X = as_x(X, dev)
    if len(X) == 0:
        return torch.empty(0, dtype=torch.long, device=dev)
    with eval_mode(model):
        return torch.cat([model(X[s]).argmax(dim=1) for s in _batches(len(X), batch_size)])


def accuracy(model, X, y, batch_size: int | None = 8192) -> float:
    """Fraction of samples whose argmax prediction equals the label."""
    pred = predict(model, X, batch_size)
    y = as_y(y, pred.device)
    return float((pred == y).float().mean()) if len(y) else float("nan")


def _macro_f1_from_labels(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int | None = None) -> float:
    """Macro F1 over the classes in the labels or the predictions (restricted to ``[0, n_classes)``): per class
    ``2·TP / (2·TP + FP + FN)``, then the mean. Written out (not ``sklearn.metrics.f1_score``) because importing
    ``sklearn.metrics`` costs ≈ 2 CPU-s in each of the ≈ 225 paper jobs that compute F1 (issue 21); equal bit for bit
    to scikit-learn's ``f1_score(average="macro", zero_division=nan)``, which ``tests/test_library_equivalence.py``
    keeps as the reference."""
    y_true = np.asarray(y_true).reshape(-1)
    y_pred = np.asarray(y_pred).reshape(-1)
    labels = np.union1d(y_true, y_pred)
    classes = labels
    if n_classes is not None:
        classes = classes[(classes >= 0) & (classes < n_classes)] if len(classes) else classes
    if len(classes) == 0:
        return float("nan")
    # counts per label of the sorted label list (every entry of y_true and y_pred is in it)
    ti, pi = np.searchsorted(labels, y_true), np.searchsorted(labels, y_pred)
    n_all = len(labels)
    hit = ti == pi
    tp_all = np.bincount(ti[hit], minlength=n_all)
    true_all = np.bincount(ti, minlength=n_all)
    pred_all = np.bincount(pi, minlength=n_all)
    keep = np.searchsorted(labels, classes)
    tp, fn, fp = tp_all[keep], (true_all - tp_all)[keep], (pred_all - tp_all)[keep]
    scores = 2.0 * tp / (2.0 * tp + fp + fn)
    return float(np.mean(scores))


def macro_f1(model, X, y, n_classes: int | None = None, batch_size: int | None = 8192) -> float:
    """Multiclass macro-averaged F1 of the argmax predictions (StatisticalMeasures ``multiclass_f1score``).

    Per class ``F1_c = 2·TP / (2·TP + FP + FN)`` (the harmonic mean of precision and recall); the macro score is the
    unweighted mean over the classes that occur in the labels **or** the predictions. A class absent from both has
    an undefined (0/0) score and is skipped, as StatisticalMeasures does; a class that occurs in only one of them
    scores 0. ``n_classes`` is accepted for API symmetry and only restricts the considered labels to ``[0, K)``.
    """
    pred = predict(model, X, batch_size).cpu().numpy()
    return _macro_f1_from_labels(as_y(y, torch.device("cpu")).numpy(), pred, n_classes)


# --------------------------------------------------------------------------------------------------- attacks
def fgsm(model, X, y, eps: float, clamp: Clamp = None) -> torch.Tensor:
    """Fast gradient sign method: ``x + ε·sign(∇ₓ CE_mean(model(X), y))`` with the TRUE labels ``y``.

    No clamping to the data domain by default (reference §11.19); ``clamp=(lo, hi)`` (scalars or per-feature
    tensors) clamps the result. Returns a detached tensor on the model's device.
    """
    dev = model_device(model)
    X, y = as_x(X, dev), as_y(y, dev)
    with eval_mode(model):
        x_adv = X + float(eps) * _ce_grad_sign(model, X, y)
    return _clamp(x_adv, _bounds(clamp, X)).detach()


def pgd(model, X, y, eps: float, step: float = 0.01, n_steps: int = 40, random_start: bool = True,
        generator: torch.Generator | None = None, clamp: Clamp = None) -> torch.Tensor:
    """Projected gradient descent (ascent on CE) in the L∞ ball of radius ``eps`` around ``X``.

    Start at ``x₀ + U(−ε, ε)`` per coordinate (``random_start``), then ``n_steps`` times
    ``x ← Π_{‖·−x₀‖∞ ≤ ε}(x + step·sign ∇ₓ CE(model(x), y))`` with the TRUE labels. The step size is the same for
    every ε (reference: 0.01, 40 steps). ``clamp=(lo, hi)`` additionally clamps every iterate (and the start) to the
    data domain; the default ``None`` follows the reference (no clamp). The uniform start is drawn on the CPU from
    ``generator`` (global RNG when ``None``) as ``ε·(2u − 1)``, ``u ~ U(0, 1)``, so that one seed gives the same
    draws on every device. ``eps = 0`` returns ``X`` unchanged.
    """
    dev = model_device(model)
    X0, y = as_x(X, dev), as_y(y, dev)
    eps = float(eps)
    bounds = _bounds(clamp, X0)
    lo, hi = X0 - eps, X0 + eps
    if random_start:
        u = torch.rand(X0.shape, generator=generator, dtype=torch.float32).to(dev)
        x = X0 + eps * (2.0 * u - 1.0)
    else:
        x = X0.clone()
    x = _clamp(torch.maximum(torch.minimum(x, hi), lo), bounds)
    with eval_mode(model):
        for _ in range(int(n_steps)):
            x = x + step * _ce_grad_sign(model, x, y)
            x = _clamp(torch.maximum(torch.minimum(x, hi), lo), bounds)
    return x.detach()


# --------------------------------------------------------------------------------------------------- curves
def robustness_curve(model, X, y, eps_grid: Sequence[float] | np.ndarray | None = None,
                     attacks: Sequence[str] = ("fgsm", "pgd"), seed: int = 0, batch_size: int | None = 2048,
                     step: float = 0.01, n_steps: int = 40, random_start: bool = True,
                     clamp: Clamp = None) -> pd.DataFrame:
    """Adversarial accuracy of ``model`` on ``(X, y)`` for every attack and ε.

    Returns a DataFrame with one row per (attack, ε) and columns ``attack`` (str), ``eps`` (float) and
    ``accuracy`` (float, the fraction of adversarial inputs still classified as their true label). At ε = 0 both
    attacks return the clean inputs, so that row equals :func:`accuracy`. The test set is processed in batches of
    ``batch_size``; the FGSM gradient sign is computed once per batch and reused for all ε. PGD random starts come
    from one ``torch.Generator`` per ε seeded with ``seed`` (common random numbers across ε, reproducible and
    independent of the global RNG); results therefore depend on ``batch_size`` only through the order of the
    random-start draws, i.e. not at all for ``random_start=False``.
    """
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
    with eval_mode(model):
        for s in _batches(n, batch_size):
            xb, yb = X[s], y[s]
            if "fgsm" in attacks:
                sign = _ce_grad_sign(model, xb, yb)
                with torch.no_grad():
                    for i, eps in enumerate(eps_grid):
                        x_adv = _clamp(xb + float(eps) * sign, bounds)
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
