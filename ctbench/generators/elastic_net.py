"""Min-L1 / Min-L2 counterfactuals: the elastic-net attack (EAD, Chen et al. 2018) as ART runs it, batched.

Black et al. (2022, App. B.3) build their "Min-Cost ℓ1/ℓ2" baselines with ART's ``ElasticNet``: β = 1 and decision
rule L1 for Min-ℓ1, β = 0 and decision rule L2 for Min-ℓ2, confidence κ = 0.5, on a model whose outputs are
softmax probabilities. Per row and per binary-search round, with the constant c of that row:

    minimise  c·max(max_{j≠t} p_j(x') − p_t(x') + κ, 0) + ‖x' − x‖₂² + β‖x' − x‖₁       (targeted form)

by FISTA: g = ∇ of the first two terms at the slack point y; x_{k+1} = S_β(y − η_k·g) where S_β is ART's
shrinkage (changes smaller than β snap back to x, the rest shrink by β, then a clamp); y = x_{k+1} +
k/(k+3)·(x_{k+1} − x_k); η_k = η·(1 − k/K)^0.5. Of all iterates with argmax f = t, the one with the smallest L1
(or squared L2, or β·L1 + L2²) distance is the answer; a row that never flips keeps x. After each round c is
halved towards the last success or multiplied by 10 (ART's binary search, per row).

ART zeroes the *whole* gradient, distance term included, where the hinge is inactive
(``art_zero_gradient=True``, the authors' setting); ``False`` keeps 2(x' − x) there, as in Chen et al.

The box (``box``, the fidelity switch ``elastic_net_box``): ART's ``_shrinkage_threshold`` clamps every shrunk
coordinate to [0, 1] (``np.minimum(z − β, 1.0)``, ``np.maximum(z + β, 0.0)``; coordinates that snap back to x are
not clamped) whatever the classifier's ``clip_values`` say, and ``generate`` clips the final answers to
``clip_values`` only at the end (ART 1.20.1, as in earlier versions). ``box="art"`` does exactly that, with
``clip_values`` one scalar range, the smallest and largest bound of the domain (the authors' classifier: the
data's overall min and max); validity is that of the clipped answer. ``box="feature"`` clamps to each feature's own
domain in every step instead (no [0, 1]); on min-max scaled data the two agree, on z-scored data (German Credit,
Seizure) they do not. Mutability (not in ART) is a projection after every step, so immutable features stay
bit-identical. Rows run together; every quantity (c, bounds, best point) is per row, so a row's answer does not
depend on the batch. ``tests/test_peer.py`` runs ART's ``ElasticNet`` beside it under both boxes.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..constraints import Constraints
from ._batch import bounds_containing, check_batch, make_result, predict
from .base import CounterfactualResult, frozen_parameters

DECISION_RULES = ("L1", "L2", "EN")
BOXES = ("feature", "art")  # the values of the fidelity switch ``elastic_net_box``
_C_MAX = 1e9  # ART: while the upper bound is above this, an unsuccessful round multiplies c by 10


def shrinkage(z: torch.Tensor, x0: torch.Tensor, beta: float, lo, hi) -> torch.Tensor:
    """ART's ``_shrinkage_threshold``: x0 where |z − x0| ≤ β, else z ∓ β clamped to the box (ART: ``lo`` = 0,
    ``hi`` = 1; the coordinates that snap back to x0 are not clamped)."""
    d = z - x0
    up = z - beta if lo is None else torch.minimum(z - beta, hi)
    down = z + beta if lo is None else torch.maximum(z + beta, lo)
    return torch.where(d > beta, up, torch.where(d < -beta, down, x0))


class ElasticNetGenerator:
    """Batched EAD; ``decision_rule`` "L1" with β = 1 is Min-ℓ1, "L2" with β = 0 is Min-ℓ2 (the paper's settings)."""

    name = "elastic_net"

    def __init__(self, decision_rule: str = "L2", beta: float | None = None, confidence: float = 0.5,
                 learning_rate: float = 0.01, max_iter: int = 100, binary_search_steps: int = 9,
                 initial_const: float = 1e-3, art_zero_gradient: bool = True, box: str = "feature"):
        if decision_rule not in DECISION_RULES:
            raise ValueError(f"elastic_net.decision_rule: {decision_rule!r} is not one of {DECISION_RULES}")
        beta = (1.0 if decision_rule == "L1" else 0.0) if beta is None else float(beta)
        checks = {"beta": (beta, 0.0, ">= 0"), "confidence": (confidence, 0.0, ">= 0"),
                  "max_iter": (max_iter, 1, ">= 1"), "binary_search_steps": (binary_search_steps, 1, ">= 1")}
        for key, (value, low, text) in checks.items():
            if value < low:
                raise ValueError(f"elastic_net.{key}: {value} must be {text}")
        for key, value in (("learning_rate", learning_rate), ("initial_const", initial_const)):
            if not value > 0:
                raise ValueError(f"elastic_net.{key}: {value} must be > 0")
        if box not in BOXES:
            raise ValueError(f"elastic_net.box: {box!r} is not one of {BOXES}")
        self.decision_rule = decision_rule
        self.beta = beta
        self.confidence = float(confidence)
        self.learning_rate = float(learning_rate)
        self.max_iter = int(max_iter)
        self.binary_search_steps = int(binary_search_steps)
        self.initial_const = float(initial_const)
        self.art_zero_gradient = bool(art_zero_gradient)
        self.box = box

    def params(self) -> dict[str, Any]:
        return {"type": self.name, "decision_rule": self.decision_rule, "beta": self.beta,
                "confidence": self.confidence, "learning_rate": self.learning_rate, "max_iter": self.max_iter,
                "binary_search_steps": self.binary_search_steps, "initial_const": self.initial_const,
                "art_zero_gradient": self.art_zero_gradient, "box": self.box}

    def search(self, model: nn.Module, x: torch.Tensor, target: torch.Tensor, constraints: Constraints | None = None,
               convergence=None, generator: torch.Generator | None = None) -> CounterfactualResult:
        """Counterfactuals for factuals ``x`` towards ``target``. ``convergence`` and ``generator`` are accepted for
        the common signature and unused (EAD is deterministic and runs its fixed schedule). Rows whose factual
        already has the target label are returned unchanged; ``steps`` counts iterations up to the answer."""
        x, target, cons = check_batch(x, target, constraints)
        with frozen_parameters(model):
            start_ok = predict(model, x, target)[0] == target
            cf, steps = self._run(model, x, target, cons)
            cf = torch.where(start_ok[:, None], x, cf)
            steps = torch.where(start_ok, torch.zeros_like(steps), steps)
            return make_result(model, x, target, cf, steps, start_ok)

    def distance(self, d: torch.Tensor) -> torch.Tensor:
        l1, l2 = d.abs().sum(1), d.square().sum(1)
        return {"L1": l1, "L2": l2, "EN": self.beta * l1 + l2}[self.decision_rule]

    def _grad(self, model, y, x0, target, c):
        y = y.detach().requires_grad_(True)
        probs = torch.softmax(model(y), 1)
        p_t = probs.gather(1, target[:, None]).squeeze(1)
        p_other = probs.scatter(1, target[:, None], float("-inf")).amax(1)
        margin = p_other - p_t + self.confidence
        loss = (c * margin.clamp_min(0)).sum() + (y - x0).square().sum()
        (g,) = torch.autograd.grad(loss, y)
        if self.art_zero_gradient:
            g = torch.where((margin.detach() < 0)[:, None], torch.zeros_like(g), g)
        return g

    def _run(self, model, x0, target, cons):
        B = x0.shape[0]
        codes = cons.codes(x0.device)
        lo, hi = bounds_containing(cons, x0, codes)
        dt, dev = x0.dtype, x0.device
        clip = None
        if self.box == "art":  # [0, 1] in every shrinkage step; ``clip_values`` (one scalar range) at the end
            if lo is not None:
                clip = (lo.amin(), hi.amax())
            lo, hi = torch.zeros((), dtype=dt, device=dev), torch.ones((), dtype=dt, device=dev)
        c = torch.full((B,), self.initial_const, dtype=dt, device=dev)
        c_lo = torch.zeros(B, dtype=dt, device=dev)
        c_hi = torch.full((B,), 1e10, dtype=dt, device=dev)
        best, best_dist = x0.clone(), torch.full((B,), float("inf"), dtype=dt, device=dev)
        best_step = torch.zeros(B, dtype=torch.long, device=dev)
        K = self.max_iter
        for round_ in range(self.binary_search_steps):
            xa, ya = x0.clone(), x0.clone()
            found = torch.zeros(B, dtype=torch.bool, device=dev)
            for k in range(K):
                lr = self.learning_rate * (1.0 - k / K) ** 0.5
                g = self._grad(model, ya, x0, target, c)
                xn = cons.project(shrinkage(ya - lr * g, x0, self.beta, lo, hi), x0, codes)
                ya = xn + (k / (k + 3.0)) * (xn - xa)
                xa = xn
                ok = predict(model, xa, target)[0] == target
                dist = self.distance(xa - x0)
                better = ok & (dist < best_dist)
                best = torch.where(better[:, None], xa, best)
                best_dist = torch.where(better, dist, best_dist)
                best_step = torch.where(better, torch.full_like(best_step, round_ * K + k + 1), best_step)
                found |= ok
            # ART's per-row binary search on c
            c_hi = torch.where(found, torch.minimum(c_hi, c), c_hi)
            c_lo = torch.where(found, c_lo, torch.maximum(c_lo, c))
            mid = (c_lo + c_hi) / 2
            c = torch.where(c_hi < _C_MAX, mid, torch.where(found, c, c * 10))
        if clip is not None:
            best = cons.project(best.clamp(*clip), x0, codes)
        return best, best_step


__all__ = ["DECISION_RULES", "ElasticNetGenerator", "shrinkage"]
