"""Latent random search (Pawelczyk et al. 2020, as Black et al. 2022 ran it, App. B.3), batched over rows.

z₀ = the encoder *mean* of x (a deterministic code: Black et al. were told to use the mean of a VAE, and so trained
a plain autoencoder; ctbench uses its REVISE VAE's mean head). If the decoded z₀ already has the target label it is
the answer. Otherwise ``n_samples`` codes z₀ + r·u are drawn (u a uniform direction, r ~ U(0, radius); the paper:
1,280 samples, radius 1.0, seed 2021), decoded, projected onto the mutability set around x and clamped to the
domain; of those with argmax f = t the one closest to x in L2 is the answer. Up to ``rounds`` rounds are drawn for
rows still without one; a row that never finds one returns the decoded z₀ (not valid). The authors' code divides
all directions by one norm of the whole sample matrix (so every step is tiny); ctbench normalises each direction.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..constraints import Constraints
from ._batch import bounds_containing, check_batch, default_rng, make_result, predict, unit_rows
from .base import CounterfactualResult, frozen_parameters
from .vae import VAE


class LatentRandomSearch:
    name = "latent_random"

    def __init__(self, vae: VAE, n_samples: int = 1280, radius: float = 1.0, rounds: int = 1, seed: int = 2021,
                 chunk_points: int = 1 << 18):
        if vae is None:
            raise ValueError("latent_random: needs a trained VAE (ctbench.generators.vae.VAE; see `fit_vae`)")
        if int(n_samples) < 1 or int(rounds) < 1:
            raise ValueError(f"latent_random: n_samples ({n_samples}) and rounds ({rounds}) must be >= 1")
        if not float(radius) > 0:
            raise ValueError(f"latent_random.radius: {radius} must be > 0")
        self.vae = vae
        self.n_samples = int(n_samples)
        self.radius = float(radius)
        self.rounds = int(rounds)
        self.seed = int(seed)
        self.chunk_points = int(chunk_points)

    def params(self) -> dict[str, Any]:
        return {"type": self.name, "vae": self.vae.config(), "n_samples": self.n_samples, "radius": self.radius,
                "rounds": self.rounds, "seed": self.seed}

    def search(self, model: nn.Module, x: torch.Tensor, target: torch.Tensor, constraints: Constraints | None = None,
               convergence=None, generator: torch.Generator | None = None) -> CounterfactualResult:
        """``steps`` of the result = the round that found the answer (0: the decoded code itself, or none)."""
        x, target, cons = check_batch(x, target, constraints)
        rng = default_rng(generator, self.seed)
        codes = cons.codes(x.device)
        lo, hi = bounds_containing(cons, x, codes)
        dt = next(self.vae.parameters()).dtype
        self.vae.to(x.device)
        with frozen_parameters(model), frozen_parameters(self.vae), torch.no_grad():
            z0 = self.vae.encode_params(x.to(dt))[0]
            cf = self._feasible(self.vae.decode(z0).to(x.dtype), x, cons, codes, lo, hi)
            steps = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
            todo = (predict(model, cf, target)[0] != target).nonzero().squeeze(1)
            per_chunk = max(1, self.chunk_points // self.n_samples)
            for r in range(1, self.rounds + 1):
                found_any = []
                for part in todo.split(per_chunk):
                    best, ok = self._sample(model, z0[part], x[part], target[part], cons, codes,
                                            None if lo is None else lo[part], None if hi is None else hi[part], rng)
                    cf[part[ok]] = best[ok]
                    steps[part[ok]] = r
                    found_any.append(part[ok])
                if found_any:
                    done = torch.cat(found_any)
                    todo = todo[~torch.isin(todo, done)]
                if todo.numel() == 0:
                    break
            start_ok = predict(model, x, target)[0] == target
            return make_result(model, x, target, cf, steps, start_ok)

    def _sample(self, model, z0, x, target, cons, codes, lo, hi, rng):
        b, L = z0.shape
        N, D = self.n_samples, x.shape[1]
        u = unit_rows(torch.randn((b * N, L), generator=rng, dtype=z0.dtype, device=rng.device)).to(z0.device)
        r = torch.rand((b * N, 1), generator=rng, dtype=z0.dtype, device=rng.device).to(z0.device) * self.radius
        z = z0.repeat_interleave(N, 0) + r * u
        xs_rep = x.repeat_interleave(N, 0)
        rep = lambda t: None if t is None or t.ndim == 1 else t.repeat_interleave(N, 0)  # noqa: E731
        cand = self._feasible(self.vae.decode(z).to(x.dtype), xs_rep, cons, codes, rep(lo), rep(hi))
        valid = (model(cand).argmax(1) == target.repeat_interleave(N)).reshape(b, N)
        dist = (cand - xs_rep).norm(dim=1).reshape(b, N).masked_fill(~valid, float("inf"))
        pick = dist.argmin(1)
        best = cand.reshape(b, N, D)[torch.arange(b, device=x.device), pick]
        return best, valid.any(1)

    @staticmethod
    def _feasible(xd, x0, cons, codes, lo, hi):
        xd = cons.project(xd, x0, codes)
        return xd if lo is None else torch.clamp(xd, lo, hi)


__all__ = ["LatentRandomSearch"]
