"""Min-ε PGD (Black et al. 2022, App. B.3): L2 PGD with a growing norm bound until the label flips, batched.

For a row with largest bound ε_max (the paper: the median L2 norm of the training points; a float or one value per
row), the bounds ε_k = ε_max·k/n_levels, k = 1..n_levels (the paper: 10) are tried in order. At each bound, L2 PGD
as foolbox's ``L2PGD`` runs it, towards the target class: start at x (or, with ``random_start``, at a uniform point
of the ball), then ``steps`` times x' ← x' − α·g/‖g‖₂ with g = ∇ CE(f(x'), t), projection onto B₂(x, ε_k) and the
box clamp; the last iterate is the attempt. A row is done at the first bound whose attempt has argmax f = t; rows
still unflipped go on to the next bound, so every row has its own ε. Step size α = 2·ε_k/steps (the paper's text;
the authors' code passes that value to foolbox as a *relative* step, i.e. α = 2·ε_k²/steps — see
``step_rule="code"``). Mutability masks g (and the random start), so immutable features stay bit-identical.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..constraints import Constraints
from ._batch import bounds_containing, check_batch, default_rng, make_result, predict, project_l2, unit_rows
from .base import CounterfactualResult, frozen_parameters

STEP_RULES = ("paper", "code")


def median_norm(X: Any) -> float:
    """The paper's largest bound: the median L2 norm of the training points."""
    return float(np.median(np.linalg.norm(np.asarray(X, dtype=np.float64), axis=1)))


class MinEpsPGDGenerator:
    """Batched Min-ε PGD; ``epsilon`` on the result is not stored: ε used = ε_max·steps/(n_levels·steps_per_level)."""

    name = "min_eps_pgd"

    def __init__(self, max_epsilon: float = 1.0, n_levels: int = 10, steps: int = 40, random_start: bool = True,
                 step_rule: str = "paper", seed: int = 0):
        if not float(max_epsilon) > 0:
            raise ValueError(f"min_eps_pgd.max_epsilon: {max_epsilon} must be > 0")
        if int(n_levels) < 1 or int(steps) < 1:
            raise ValueError(f"min_eps_pgd: n_levels ({n_levels}) and steps ({steps}) must be >= 1")
        if step_rule not in STEP_RULES:
            raise ValueError(f"min_eps_pgd.step_rule: {step_rule!r} is not one of {STEP_RULES}")
        self.max_epsilon = float(max_epsilon)
        self.n_levels = int(n_levels)
        self.steps = int(steps)
        self.random_start = bool(random_start)
        self.step_rule = step_rule
        self.seed = int(seed)

    def params(self) -> dict[str, Any]:
        return {"type": self.name, "max_epsilon": self.max_epsilon, "n_levels": self.n_levels, "steps": self.steps,
                "random_start": self.random_start, "step_rule": self.step_rule, "seed": self.seed}

    def search(self, model: nn.Module, x: torch.Tensor, target: torch.Tensor, constraints: Constraints | None = None,
               convergence=None, generator: torch.Generator | None = None,
               max_epsilon: torch.Tensor | float | None = None) -> CounterfactualResult:
        """Counterfactuals for ``x`` towards ``target``; ``max_epsilon`` (float or (B,)) overrides the bound per row.

        ``steps`` of the result = PGD iterations spent on the row (levels tried × steps), 0 if the factual already
        has the target label (it is returned unchanged). A row that never flips returns its last attempt (the
        largest ball), with ``mature`` False. ``convergence`` is accepted for the common signature and unused.
        """
        x, target, cons = check_batch(x, target, constraints)
        B = x.shape[0]
        eps_max = torch.as_tensor(self.max_epsilon if max_epsilon is None else max_epsilon, dtype=x.dtype,
                                  device=x.device).expand(B).clone()
        if bool((eps_max <= 0).any()):
            raise ValueError("min_eps_pgd.max_epsilon: every bound must be > 0")
        rng = default_rng(generator, self.seed)
        codes = cons.codes(x.device)
        lo, hi = bounds_containing(cons, x, codes)
        with frozen_parameters(model):
            start_ok = predict(model, x, target)[0] == target
            cf = x.clone()
            spent = torch.zeros(B, dtype=torch.long, device=x.device)
            active = (~start_ok).nonzero().squeeze(1)
            for k in range(1, self.n_levels + 1):
                if active.numel() == 0:
                    break
                eps = (eps_max[active] * k / self.n_levels)[:, None]
                rows_lo = None if lo is None else lo[active]
                rows_hi = None if hi is None else hi[active]
                att = self._pgd(model, x[active], target[active], eps, cons, codes, rows_lo, rows_hi, rng)
                cf[active] = att
                spent[active] += self.steps
                active = active[predict(model, att, target[active])[0] != target[active]]
            return make_result(model, x, target, cf, spent, start_ok)

    def _pgd(self, model, x0, target, eps, cons, codes, lo, hi, rng):
        alpha = 2 * eps / self.steps if self.step_rule == "paper" else 2 * eps.square() / self.steps
        xc = x0.clone()
        if self.random_start:
            xc = self._clamp(x0 + cons.mask_update(self._uniform_ball(x0, eps, rng), codes), lo, hi)
        for _ in range(self.steps):
            xc = xc.detach().requires_grad_(True)
            loss = F.cross_entropy(model(xc), target, reduction="sum")
            (g,) = torch.autograd.grad(loss, xc)
            step = unit_rows(cons.mask_update(-g, codes))  # the mask acts on the move, which is along −g
            xc = self._clamp(project_l2(xc.detach() + alpha * step, x0, eps), lo, hi)
        return xc.detach()

    @staticmethod
    def _uniform_ball(x0, eps, rng):
        """Uniform points of the L2 balls of radii ``eps`` (B, 1): Gaussian direction × radius·U^(1/D)."""
        B, D = x0.shape
        z = torch.randn((B, D), generator=rng, dtype=x0.dtype, device=rng.device).to(x0.device)
        u = torch.rand((B, 1), generator=rng, dtype=x0.dtype, device=rng.device).to(x0.device)
        return unit_rows(z) * eps * u.pow(1.0 / D)

    @staticmethod
    def _clamp(x, lo, hi):
        return x if lo is None else torch.clamp(x, lo, hi)


__all__ = ["MinEpsPGDGenerator", "STEP_RULES", "median_norm"]
