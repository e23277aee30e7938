"""One step of the gradient counterfactual search (reference §4.1) for a set of rows, separate from how rows are
batched.

As ReLax separates a generator's step from its batching strategy (``vmap`` or a loop), the per-row rules live here
once and the three drivers only decide which rows are in a tensor and how they are laid out:

* :meth:`.base.GradientGenerator.search` — one model, finished rows dropped from the tensors (autograd gradient);
* :mod:`.mlp_search` — one plain MLP, rows in cache-sized chunks, finished rows frozen then compacted (closed-form
  gradient);
* :mod:`.population` — G stacked models, (G, n, D) rows with per-member settings, finished rows masked.

A row's step, given its point x', its factual x and the gradient g of CE(f(x'), y⁺) + penalty at x':

1. stop?   ``passed = p(y⁺|x') ≥ τ``; the row finishes at step t if ``passed`` (threshold convergence) or t ≥ T;
   it is *mature* if ``passed``, or always where the convergence or the maturity switch is lenient;
2. ball:   x' is the row's nascent example if ‖x' − x‖∞ ≤ ε (``< ε`` with ``nascent_inclusive`` off);
3. cost:   g ← g + λ_cst·sign(x' − x) (the closed-form gradient of the L1 cost; sign(0) = 0);
4. move:   Δ = −η·g, NaN → 0 (only where the loss was not finite), mutability mask on Δ, x' ← x' + Δ;
5. domain: snap categorical groups, clamp to the row's box.

Every rule is elementwise per row, so a row's path never depends on the other rows. The fields of
:class:`StepRule` are scalars for one generator or tensors that broadcast over the rows (one value per member).

Rounding: the drivers keep their own fused forms of step 4 where nothing is masked (``x' + (−η)·g`` in one
``add`` or ``addmm``, see :meth:`StepRule.fused_move` and :mod:`.mlp_search`), which round once where Δ = −η·g then
x' + Δ rounds twice; each driver's arithmetic is unchanged by sharing these rules (bitwise, checked against the
code before the step was shared), and the drivers agree with each other to float round-off
(``tests/test_population.py``, ``tests/test_mlp_grad.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..constraints import Constraints


@dataclass(frozen=True)
class StepRule:
    """The per-row rules of one search step; scalars (one generator) or tensors broadcasting over rows."""

    eta: Any            # step size η
    lam: Any            # L1 cost λ_cst
    eps: Any            # nascent ball radius ε (L∞)
    inclusive: bool     # the ball is closed (‖·‖∞ ≤ ε, the code) or open (< ε, the paper)
    tau: Any            # threshold τ on p(y⁺|x')
    max_iter: Any       # T
    threshold: Any      # threshold convergence (else exactly T steps)
    lenient: Any        # every finished row is mature (max_iter convergence, or maturity 'threshold_or_exhausted')

    @classmethod
    def of(cls, gen, conv) -> StepRule:
        """The rule of a :class:`~.base.GradientGenerator` under a :class:`~.base.Convergence`."""
        threshold = conv.kind == "threshold"
        return cls(eta=gen.step_size, lam=gen.lambda_cost, eps=gen.nascent_epsilon,
                   inclusive=gen.nascent_inclusive, tau=conv.tau, max_iter=int(conv.max_iter), threshold=threshold,
                   lenient=not threshold or gen.maturity != "threshold")

    # -- 1. stop -------------------------------------------------------------------------------------------------
    def passed(self, p: torch.Tensor) -> torch.Tensor:
        return p >= self.tau

    def finished(self, passed: torch.Tensor, t: int) -> torch.Tensor:
        """Rows that stop at step t: passed (threshold convergence) or t ≥ T. With scalar settings no tensor op is
        spent (it runs every step; ``passed`` itself may be returned)."""
        if isinstance(self.threshold, bool) and not isinstance(self.max_iter, torch.Tensor):
            if t >= self.max_iter:
                return torch.ones_like(passed)
            return passed if self.threshold else torch.zeros_like(passed)
        return (passed & self.threshold) | (t >= self.max_iter)

    def mature(self, passed: torch.Tensor) -> torch.Tensor:
        """Finished rows that count as mature: those that passed, or all of them where the rule is lenient."""
        if isinstance(self.lenient, bool):
            return torch.ones_like(passed) if self.lenient else passed
        return passed | self.lenient

    # -- 2. ball -------------------------------------------------------------------------------------------------
    def in_ball(self, diff: torch.Tensor) -> torch.Tensor:
        """‖x' − x‖∞ ≤ ε per row (last axis) from ``diff`` = x' − x, as max(max, −min): two reads, no ``abs`` pass
        (the same comparison bit for bit). ``diff`` is not modified."""
        dist = torch.maximum(diff.amax(-1), diff.amin(-1).neg_())
        return (dist <= self.eps) if self.inclusive else (dist < self.eps)

    # -- 3. cost -------------------------------------------------------------------------------------------------
    def add_cost(self, grad: torch.Tensor, sign: torch.Tensor) -> torch.Tensor:
        """g + λ_cst·sign(x' − x), in place in ``grad`` (one rounding: λ·sign is exact)."""
        if isinstance(self.lam, torch.Tensor):
            return grad.addcmul_(self.lam, sign)
        return grad.add_(sign, alpha=self.lam)

    # -- 4. move -------------------------------------------------------------------------------------------------
    def descent(self, grad: torch.Tensor) -> torch.Tensor:
        """Δ = −η·g, in place in ``grad`` (plain gradient descent, as Flux ``Descent``)."""
        return grad.mul_(-self.eta)

    @staticmethod
    def finite_delta(delta: torch.Tensor, finite: bool | None, inplace: bool = False) -> torch.Tensor:
        """NaN → 0 in Δ (±inf kept), unless the loss was known ``finite`` (``None``: always apply)."""
        if finite:
            return delta
        if inplace:
            return torch.nan_to_num_(delta, nan=0.0, posinf=float("inf"), neginf=float("-inf"))
        return torch.nan_to_num(delta, nan=0.0, posinf=float("inf"), neginf=float("-inf"))

    def fused_move(self, x: torch.Tensor, grad: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """x' + (−η)·g in one ``add`` (no mask, finite loss): Δ fused into the update."""
        return torch.add(x, grad, alpha=-self.eta, out=out)


def move(x: torch.Tensor, delta: torch.Tensor, cons: Constraints, codes, inplace: bool = False) -> torch.Tensor:
    """x' + Δ with the mutability mask on Δ (in place in ``x`` if ``inplace``)."""
    delta = cons.mask_update(delta, codes)
    return x.add_(delta) if inplace else x + delta


def to_domain(x: torch.Tensor, cons: Constraints, lo, hi, inplace: bool = False) -> torch.Tensor:
    """Snap categorical groups to one-hot, then clamp to the row bounds ``lo``/``hi`` (``None``: no box). Rows on
    the last axis; leading axes (members) are flattened for the snap."""
    if cons.categorical_groups:
        x = cons.snap(x.reshape(-1, x.shape[-1])).view(x.shape)
    if lo is not None:
        x = x.clamp_(lo, hi) if inplace else torch.clamp(x, lo, hi)
    return x


__all__ = ["StepRule", "move", "to_domain"]
