"""REVISE: gradient search in the latent space of a VAE (reference §4.4).

The loss and the L1 cost are computed on the decoded point; after every step the decoded point is clamped to the
domain and *re-encoded stochastically* (a fresh z ~ q(z|x')), as CE.jl does. The reference does not enforce
mutability in latent space; ctbench projects the decoded point onto the mutability set (``enforce_mutability``,
on by default — the grids that use REVISE have no mutability constraints, so this changes no published number).
"""

from __future__ import annotations

import torch

from .base import GradientGenerator
from .step import to_domain
from .vae import VAE


class REVISEGenerator(GradientGenerator):
    name = "revise"
    latent = True

    def __init__(self, vae: VAE, enforce_mutability: bool = True, **kw):
        super().__init__(**kw)
        if vae is None:
            raise ValueError("revise: needs a trained VAE (ctbench.generators.vae.VAE; see `fit_vae`)")
        self.vae = vae
        self.enforce_mutability = bool(enforce_mutability)
        self._rng: torch.Generator | None = None

    def params(self):
        return {**super().params(), "vae": self.vae.config(), "enforce_mutability": self.enforce_mutability}

    def search(self, model, x, target, constraints=None, convergence=None, generator=None):
        self.vae.to(torch.as_tensor(x).device)
        for p in self.vae.parameters():
            p.requires_grad_(False)
        return super().search(model, x, target, constraints, convergence, generator)

    def encode(self, x, rng):
        return self.vae.sample(x.to(next(self.vae.parameters()).dtype), rng).to(x.dtype)

    def decode(self, s):
        return self.vae.decode(s)

    def postprocess(self, xcf, x0, cons, codes, lo, hi):
        xcf = to_domain(xcf, cons, lo, hi)
        if self.enforce_mutability:
            xcf = cons.project(xcf, x0, codes)
        return xcf
