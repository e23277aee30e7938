"""Prototype-guided counterfactuals (Van Looveren & Klaise 2019) as Black et al. (2022, App. B.3) ran them.

They used alibi's ``CFProto`` with k-d trees (k = 20) instead of an autoencoder, θ = 100 and 100 iterations, the
other settings alibi's defaults (β = 0.1, κ = 0, c starting at 10 with 10 binary-search rounds, learning rate 1e-2).
The objective is the elastic-net one plus a prototype term,

    c·max(max_{j≠t} p_j(x') − p_t(x') + κ, 0) + ‖x' − x‖₂² + β‖x' − x‖₁ + θ‖x' − proto_t(x)‖₂²,

minimised by the same FISTA/shrinkage/binary search as :mod:`.elastic_net` (alibi differentiates the whole loss,
so no gradient is zeroed; the answer is the valid iterate with the smallest β·L1 + L2²). proto_t(x) is the k-th
nearest training point, in L2, among those the model assigns to the target class t (what alibi's k-d tree query
returns; here an exact batched nearest-neighbour search).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..constraints import Constraints
from .base import CounterfactualResult
from .elastic_net import ElasticNetGenerator


class PrototypeGenerator(ElasticNetGenerator):
    name = "prototype"

    def __init__(self, X_train: Any = None, k: int = 20, theta: float = 100.0, beta: float = 0.1,
                 confidence: float = 0.0, learning_rate: float = 1e-2, max_iter: int = 100,
                 binary_search_steps: int = 10, initial_const: float = 10.0):
        super().__init__("EN", beta=beta, confidence=confidence, learning_rate=learning_rate, max_iter=max_iter,
                         binary_search_steps=binary_search_steps, initial_const=initial_const,
                         art_zero_gradient=False)
        if X_train is None or len(X_train) == 0:
            raise ValueError("prototype: needs the training points (X_train) to find class prototypes")
        if int(k) < 1 or float(theta) < 0:
            raise ValueError(f"prototype: k ({k}) must be >= 1 and theta ({theta}) >= 0")
        self.X_train = torch.as_tensor(X_train)
        self.k = int(k)
        self.theta = float(theta)
        self._proto: torch.Tensor | None = None

    def params(self) -> dict[str, Any]:
        return {**super().params(), "type": self.name, "k": self.k, "theta": self.theta,
                "n_train": int(self.X_train.shape[0])}

    @torch.no_grad()
    def prototypes(self, model: nn.Module, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Per row, the k-th nearest training point that the model puts in the row's target class."""
        pool_all = self.X_train.to(device=x.device, dtype=x.dtype)
        pred = model(pool_all).argmax(1)
        proto = torch.empty_like(x)
        for c in target.unique().tolist():
            rows = target == c
            pool = pool_all[pred == c]
            if pool.shape[0] == 0:
                raise ValueError(f"prototype: the model assigns no training point to class {c}")
            kk = min(self.k, pool.shape[0])
            idx = torch.cdist(x[rows], pool).topk(kk, dim=1, largest=False).indices[:, -1]
            proto[rows] = pool[idx]
        return proto

    def search(self, model: nn.Module, x: torch.Tensor, target: torch.Tensor, constraints: Constraints | None = None,
               convergence=None, generator: torch.Generator | None = None) -> CounterfactualResult:
        x_t = torch.as_tensor(x).detach()
        self._proto = self.prototypes(model, x_t, torch.as_tensor(target, device=x_t.device).long().reshape(-1))
        try:
            return super().search(model, x_t, target, constraints, convergence, generator)
        finally:
            self._proto = None

    def _grad(self, model, y, x0, target, c):
        g = super()._grad(model, y, x0, target, c)
        return g if self.theta == 0 else g + (2 * self.theta) * (y.detach() - self._proto)


__all__ = ["PrototypeGenerator"]
