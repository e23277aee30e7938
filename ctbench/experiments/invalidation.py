"""Counterfactual invalidation under retraining (Black et al., ICLR 2022, Def. 2 and App. B.4), batched.

The pieces of the protocol that do not depend on a dataset or a generator:

* :func:`retraining_plan` / :func:`retraining_members`: the base model and its retrained variants as one population
  (:func:`ctbench.training.population.train_population`): **RS** members keep the data and every setting and change
  only the seed (``base_seed · 1000 + i``, i = 1..n: "the seed incremented", without sharing models between base
  seeds); **LOO** members start from the base model's initial weights with the base's seed (so the same shuffling
  stream) and train on the training set without one point, n distinct points drawn without replacement.
* :func:`stacked_labels`: the labels of all retrained models on all counterfactuals, one stacked forward
  (:class:`ctbench.stacked.StackedMLP`) per row chunk.
* :func:`invalidation_rate`: IV(x_c) = share of the retrained models whose label of x_c differs from the base model's
  label of x_c (Def. 2; the base label, not the target, so the definition holds for any point).
* :func:`r_squared`: R² of the least-squares line of invalidation on cost (``scipy.stats.linregress``'s r², as the
  paper).
* :func:`confidence` and :func:`local_lipschitz`: the two quantities of the paper's Theorem 2 at a counterfactual —
  the base model's probability of its label there, and the largest input-gradient norm of that probability over the
  point and ``n_samples`` uniform draws in an L2 ball around it (a sampled lower bound of the local Lipschitz
  constant of σ_c, the quantity of the paper's Eq. 2).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import nn

from ..stacked import StackedMLP
from ..training.population import Member

#: RS seed of member i of base seed s: s · RS_SEED_STRIDE + i (i = 1..n)
RS_SEED_STRIDE = 1000
#: floats per chunk of a stacked evaluation (members × rows × widest layer)
CHUNK_FLOATS = 1 << 24


@dataclass(frozen=True)
class RetrainingPlan:
    """Which retrained models a base model gets: RS seeds and LOO left-out training rows."""

    base_seed: int
    rs_seeds: tuple[int, ...]
    loo_rows: tuple[int, ...]


def check_loo(n_models: int, n_train: int, setting: str = "consistency.n_models") -> None:
    """LOO needs n distinct training points: stop (before any training) when the data has too few."""
    if isinstance(n_models, bool) or not isinstance(n_models, int | np.integer) or n_models < 1:
        raise ValueError(f"{setting}: {n_models!r} must be an integer >= 1")
    if n_models > n_train:
        raise ValueError(f"{setting}: {n_models} leave-one-out models need {n_models} distinct training points, but "
                         f"the training set has {n_train}; allowed range 1..{n_train}")


def retraining_plan(base_seed: int, n_models: int, n_train: int, sources: Sequence[str] = ("rs", "loo"),
                    rng: np.random.Generator | None = None) -> RetrainingPlan:
    """RS seeds ``base_seed · 1000 + 1..n`` and n distinct LOO rows (drawn with ``default_rng([base_seed, 11])``)."""
    unknown = sorted(set(sources) - {"rs", "loo"})
    if unknown:
        raise ValueError(f"consistency.sources: unknown source(s) {unknown}; allowed: rs, loo")
    rs = tuple(base_seed * RS_SEED_STRIDE + i for i in range(1, n_models + 1)) if "rs" in sources else ()
    loo: tuple[int, ...] = ()
    if "loo" in sources:
        check_loo(n_models, n_train)
        rng = rng or np.random.default_rng([int(base_seed), 11])
        loo = tuple(int(r) for r in rng.choice(n_train, size=n_models, replace=False))
    return RetrainingPlan(int(base_seed), rs, loo)


def retraining_members(base: Member, make_rs: Callable[[int], Member], plan: RetrainingPlan,
                       n_train: int, prefix: str = "") -> list[Member]:
    """``[base, rs…, loo…]`` named ``{prefix}base``, ``{prefix}rs{seed}``, ``{prefix}loo{row}``.

    ``make_rs(seed)`` builds a member that differs from ``base`` only in its seed (weights and training stream);
    LOO members are deep copies of ``base`` (same initial weights, same seed) with ``rows`` = all rows but one.
    """
    base.name = f"{prefix}base"
    out = [base]
    for s in plan.rs_seeds:
        m = make_rs(int(s))
        if m.params.seed != int(s) or replace(m.params, seed=base.params.seed) != base.params:
            raise ValueError(f"retraining: RS member of seed {s} differs from the base in more than its seed")
        m.name = f"{prefix}rs{s}"
        out.append(m)
    everything = np.arange(n_train)
    for r in plan.loo_rows:
        m = copy.deepcopy(base)
        m.rows = np.delete(everything, int(r))
        m.name = f"{prefix}loo{r}"
        out.append(m)
    return out


def _widest(models: Sequence[nn.Module]) -> int:
    return max(max(p.shape) for p in models[0].parameters())


@torch.no_grad()
def stacked_labels(models: Sequence[nn.Module], X: torch.Tensor) -> torch.Tensor:
    """(G, n) predicted labels of G models of one architecture on the same n rows, as stacked forwards."""
    if not models:
        return torch.zeros(0, X.shape[0], dtype=torch.long)
    stack = StackedMLP.from_models([m.float() for m in models]).to(X.device)
    G = len(models)
    chunk = max(1, CHUNK_FLOATS // (G * _widest(models)))
    return torch.cat([stack.predict(X[a:a + chunk].expand(G, -1, -1)) for a in range(0, X.shape[0], chunk)], 1)


def invalidation_rate(labels: torch.Tensor, base_label: torch.Tensor) -> torch.Tensor:
    """IV per row: mean over the G retrained models of ``labels (G, n) != base_label (n,)``; NaN when G = 0."""
    if labels.shape[0] == 0:
        return torch.full(base_label.shape, float("nan"), dtype=torch.float64)
    return (labels != base_label[None, :]).double().mean(0)


def r_squared(x: Any, y: Any) -> float:
    """r² of the least-squares line of ``y`` on ``x`` (NaN with fewer than 3 points or no spread).

    The sums are exactly rounded (``math.fsum``) and the rest is elementwise, so the result is the same bits on every
    CPU and in any row order. ``np.corrcoef`` takes its sums from a BLAS dot product whose kernel OpenBLAS picks by
    CPU: the verify slice's German Credit r² moved in the 16th digit between two machines."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    dx, dy = x - math.fsum(x) / len(x), y - math.fsum(y) / len(y)
    sxx, syy, sxy = math.fsum(dx * dx), math.fsum(dy * dy), math.fsum(dx * dy)
    if sxx == 0 or syy == 0:  # a spread so small that its squares underflow
        return math.nan
    return min(sxy * sxy / (sxx * syy), 1.0)


@torch.no_grad()
def confidence(model: nn.Module, X: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
    """softmax(f(x))[label] per row."""
    return torch.softmax(model(X), 1).gather(1, label[:, None]).squeeze(1)


def local_lipschitz(model: nn.Module, X: torch.Tensor, label: torch.Tensor, radius: float, n_samples: int = 16,
                    generator: torch.Generator | None = None, chunk_rows: int = 1 << 16) -> torch.Tensor:
    """max ‖∇ₓ softmax(f(x))[label]‖₂ over x_c and ``n_samples`` uniform points of the L2 ball B(x_c, radius).

    One forward/backward over (n_samples + 1) · n rows (in chunks); the loss is a sum over rows, so each row's
    gradient is its own."""
    if not radius > 0:
        raise ValueError(f"consistency.lipschitz_radius: {radius} must be > 0")
    n, D = X.shape
    gen = generator or torch.Generator().manual_seed(0)
    S = int(n_samples)
    u = torch.randn(S, n, D, generator=gen, dtype=X.dtype)
    u = u / u.norm(dim=2, keepdim=True).clamp_min(1e-12)
    r = radius * torch.rand(S, n, 1, generator=gen, dtype=X.dtype) ** (1.0 / D)
    pts = torch.cat([X[None], X[None] + (r * u).to(X.device)]).reshape(-1, D)
    lab = label.repeat(S + 1)
    flags = [p.requires_grad for p in model.parameters()]
    for p in model.parameters():
        p.requires_grad_(False)
    try:
        norms = []
        for a in range(0, pts.shape[0], chunk_rows):
            xp = pts[a:a + chunk_rows].clone().requires_grad_(True)
            prob = torch.softmax(model(xp), 1).gather(1, lab[a:a + chunk_rows, None]).sum()
            (g,) = torch.autograd.grad(prob, xp)
            norms.append(g.norm(dim=1))
    finally:
        for p, f in zip(model.parameters(), flags, strict=True):
            p.requires_grad_(f)
    return torch.cat(norms).reshape(S + 1, n).max(0).values


__all__ = ["CHUNK_FLOATS", "RS_SEED_STRIDE", "RetrainingPlan", "check_loo", "confidence", "invalidation_rate",
           "local_lipschitz", "r_squared", "retraining_members", "retraining_plan", "stacked_labels"]
