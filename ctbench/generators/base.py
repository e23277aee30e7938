"""The batched gradient search that every generator shares (reference §4.1).

A whole batch of factuals and targets is one tensor program. Rows that reach the decision threshold are retired
and the search continues on the remaining rows only, so a row's path never depends on the other rows of the batch:
the loss is a *sum* over rows, and a row's gradient is that of its own term. The step itself (when a row stops, its
nascent example, the L1 cost, the update, the domain) is :mod:`.step`'s, shared with the closed-form MLP search
(:mod:`.mlp_search`) and the population search (:mod:`.population`); this module adds the batching by dropping
finished rows and the gradient by autograd:

1. g = ∇ₛ [CE(f(decode(s)), y⁺) + penalties]          (one autograd call for the batch)
2. Δ = −η·g, NaN → 0, mutability mask on Δ              (feature-space search only)
3. s ← s + Δ; x' = decode(s); snap categoricals; clamp to the domain box; project (latent search); s = encode(x')
4. nascent example ← x' if ‖x' − x‖∞ ≤ ε                (last path point inside the ball; the path starts at x)
5. stop the row if softmax(f(x'))[y⁺] ≥ τ (threshold convergence) or after T steps

Subclasses define the penalties (Generic, ECCo) or a latent space (REVISE); SNS-style searches can override
:meth:`GradientGenerator.direction` and :meth:`GradientGenerator.postprocess`. For a plain MLP or linear model in
feature space, the same search runs without autograd (:mod:`.mlp_search`) when the penalty's gradient is known in
closed form (:meth:`GradientGenerator.target_logit_grad`, defined by the same class as ``penalty``). For LeNet-5
on the CPU under such a penalty, the loop keeps autograd for dL/dlogits only and takes the forward and the input
gradient from :mod:`.lenet_grad` (the same bits, without the graph and the finished rows' backward).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..constraints import Constraints
from .lenet_grad import LeNetLayers, lenet_forward, lenet_layers
from .mlp_grad import mlp_layers
from .result import CounterfactualResult
from .row_chunks import current_workers, search_row_chunks
from .step import StepRule, move, to_domain


def check_batch(x, target, constraints: Constraints | None):
    """Validated ``(x, target, constraints)``: x (B, D) detached, target (B,) long, constraints for D features."""
    x = torch.as_tensor(x)
    if x.ndim != 2:
        raise ValueError(f"search expects points of shape (B, D) (one row per factual), got {tuple(x.shape)}")
    x = x.detach()
    target = torch.as_tensor(target, device=x.device).long().reshape(-1)
    if target.shape[0] != x.shape[0]:
        raise ValueError(f"{target.shape[0]} targets for {x.shape[0]} points")
    cons = constraints or Constraints(x.shape[1])
    if cons.n_features != x.shape[1]:
        raise ValueError(f"constraints are for {cons.n_features} features, points have {x.shape[1]}")
    return x, target, cons


@dataclass(frozen=True)
class Convergence:
    """When a search stops: ``threshold`` (p(y⁺|x') ≥ τ, at most T steps) or ``max_iter`` (exactly T steps)."""

    kind: str = "threshold"
    tau: float = 0.75
    max_iter: int = 30

    def __post_init__(self):
        if self.kind not in ("threshold", "max_iter"):
            raise ValueError(f"convergence.kind: {self.kind!r} is not one of ('threshold', 'max_iter')")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"convergence.tau: {self.tau} must lie in (0, 1]")
        if int(self.max_iter) < 0:
            raise ValueError(f"convergence.max_iter: {self.max_iter} must be >= 0")


def empty_result(x: torch.Tensor, target: torch.Tensor) -> CounterfactualResult:
    """The result of a search over zero factuals (``x`` of shape (0, D))."""
    none = torch.zeros(0, dtype=torch.bool, device=x.device)
    return CounterfactualResult(x, target, x.clone(), x.clone(), none, torch.zeros(0, dtype=torch.long,
                                device=x.device), torch.zeros(0, dtype=x.dtype, device=x.device), none.clone())


@contextlib.contextmanager
def frozen_parameters(model: nn.Module):
    """Temporarily stop tracking parameter gradients (the search differentiates w.r.t. inputs only)."""
    flags = [p.requires_grad for p in model.parameters()]
    try:
        for p in model.parameters():
            p.requires_grad_(False)
        yield
    finally:
        for p, f in zip(model.parameters(), flags, strict=True):
            p.requires_grad_(f)


class GradientGenerator:
    """Base class: gradient descent on ``CE(f(x'), y⁺) + penalty`` with per-row convergence."""

    name = "gradient"
    latent = False  # True: the state lives in another space and ``decode`` maps it to features
    closed_form = True  # False: always differentiate with autograd (the closed-form path gives the same results)

    def __init__(self, step_size: float = 0.1, lambda_cost: float = 0.0, nascent_epsilon: float = 0.3,
                 nascent_inclusive: bool = True, maturity: str = "threshold"):
        if step_size <= 0:
            raise ValueError(f"{self.name}: step_size must be > 0, got {step_size}")
        if maturity not in ("threshold", "threshold_or_exhausted"):
            raise ValueError(f"{self.name}: maturity {maturity!r} not in ('threshold', 'threshold_or_exhausted')")
        self.step_size = float(step_size)
        self.lambda_cost = float(lambda_cost)
        self.nascent_epsilon = float(nascent_epsilon)
        self.nascent_inclusive = bool(nascent_inclusive)
        self.maturity = maturity

    # -- hooks ---------------------------------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        return {"type": self.name, "step_size": self.step_size, "lambda_cost": self.lambda_cost,
                "nascent_epsilon": self.nascent_epsilon, "nascent_inclusive": self.nascent_inclusive,
                "maturity": self.maturity}

    def penalty(self, x_cf: torch.Tensor, logits: torch.Tensor, x0: torch.Tensor, target: torch.Tensor,
                t: int, T: int) -> torch.Tensor:
        """Per-row penalty added to the cross-entropy; the base class has the L1 cost λ_cst‖x' − x‖₁.

        In feature space the L1 gradient λ_cst·sign(x' − x) is added in closed form instead inside the search
        loop; it is the same gradient without an autograd pass through ``abs``.
        """
        if self.lambda_cost == 0.0 or not self.latent:
            return torch.zeros(x_cf.shape[0], dtype=x_cf.dtype, device=x_cf.device)
        return self.lambda_cost * (x_cf - x0).abs().sum(1)

    def target_logit_grad(self, target_logit: torch.Tensor, t: int, T: int) -> torch.Tensor | None:
        """∂penalty/∂f(x')[y⁺] per row (``None``: 0), for feature-space penalties that depend on x' only through
        the target logit besides the L1 cost. A subclass overriding :meth:`penalty` without it uses autograd.
        """
        return None

    def replaces(self, method: str) -> bool:
        """Whether this generator's class overrides :class:`GradientGenerator`'s ``method`` (the closed-form MLP
        search, :mod:`.mlp_search`, takes its fast path only for the defaults)."""
        return getattr(type(self), method) is not getattr(GradientGenerator, method)

    def encode(self, x: torch.Tensor, rng: torch.Generator | None) -> torch.Tensor:
        return x

    def decode(self, s: torch.Tensor) -> torch.Tensor:
        return s

    def direction(self, grad: torch.Tensor) -> torch.Tensor:
        """The update Δ for a gradient (plain gradient descent, as Flux ``Descent``); may reuse ``grad``.

        Subclasses that override it (e.g. normalised steps for SNS) take the general path of the loop.
        """
        return grad.mul_(-self.step_size)  # StepRule.descent

    # -- the search ----------------------------------------------------------------------------------------------
    def search(self, model: nn.Module, x: torch.Tensor, target: torch.Tensor,
               constraints: Constraints | None = None, convergence: Convergence | None = None,
               generator: torch.Generator | None = None, workers: int | None = None) -> CounterfactualResult:
        """Search counterfactuals for a batch of factuals ``x`` (B, D) and target classes ``target`` (B,).

        ``workers`` > 1 splits the rows into that many contiguous chunks searched at once on as many threads,
        each at one intra-op thread (:mod:`.row_chunks`; None: the enclosing :func:`.row_chunks.row_workers`,
        else 1). For LeNet's search by hand every row's bits are then those of the one-thread search of the whole
        batch, whatever the number of workers (tested); other paths run at one intra-op thread too but are not
        promised bitwise against an unsplit search.
        """
        conv = convergence or Convergence()
        x, target, cons = check_batch(x, target, constraints)
        if x.shape[0] == 0:  # nothing to search: an empty result at once (the step loop needs a row to finish)
            return empty_result(x, target)
        with frozen_parameters(model):
            layers = self._closed_form_layers(model)
            if layers is not None:
                from .mlp_search import search_mlp

                def one(xs, ts):
                    return search_mlp(self, model, layers, xs, ts, cons, conv)
            elif self.latent:  # the latent encoding draws from ``generator``: one chunk keeps the draws in order
                workers = 1

                def one(xs, ts):
                    return self._search(model, xs, ts, cons, conv, generator, fused=False)
            else:
                lenet = lenet_layers(model) if self._penalty_through_logits() else None

                def one(xs, ts):
                    return self._search(model, xs, ts, cons, conv, generator, fused=True, lenet=lenet)

            return search_row_chunks(one, x, target, current_workers() if workers is None else workers)

    def _penalty_through_logits(self) -> bool:
        """Whether the penalty depends on x' only through the logits (in feature space; the L1 cost is added in
        closed form): the class that defines ``penalty`` also defines ``target_logit_grad``."""
        if self.latent or not self.closed_form:
            return False
        owner = {name: next(c for c in type(self).__mro__ if name in vars(c)) for name in
                 ("penalty", "target_logit_grad")}
        return owner["penalty"] is owner["target_logit_grad"]

    def _closed_form_layers(self, model: nn.Module):
        return mlp_layers(model) if self._penalty_through_logits() else None

    def _search(self, model, x, target, cons, conv, rng, fused, lenet: LeNetLayers | None = None):
        B = x.shape[0]
        rule = StepRule.of(self, conv)
        codes = cons.codes(x.device)
        lo, hi = cons.row_bounds(x, codes)
        per_row_bounds = lo is not None and lo.ndim == 2
        plain_descent = type(self).direction is GradientGenerator.direction and codes is None and not self.latent

        out_cf = x.clone()
        out_nascent = x.clone()
        out_steps = torch.zeros(B, dtype=torch.long, device=x.device)
        out_prob = torch.zeros(B, dtype=x.dtype, device=x.device)
        out_mature = torch.zeros(B, dtype=torch.bool, device=x.device)
        initially_valid = torch.zeros(B, dtype=torch.bool, device=x.device)

        idx = torch.arange(B, device=x.device)  # original row of each active row
        x0, y = x, target
        xcf = x.clone()        # current point in feature space
        nascent = x.clone()    # last path point inside the ε-ball (the path starts at the factual)
        state = self.encode(xcf, rng)

        t = 0
        while True:
            # Forward pass at the current point: its probabilities decide convergence (the point reached by the
            # last step), and for feature-space search the same pass gives the gradient of the next step.
            if lenet is not None:  # LeNet: the same forward without a graph; the input gradient by hand below
                cur = state
                fwd = lenet_forward(lenet, cur)
                logits = fwd.logits.requires_grad_(True)
                p = torch.softmax(logits.detach(), 1).gather(1, y[:, None]).squeeze(1)
            elif fused:
                state = state.detach().requires_grad_(True)
                cur = state
                logits = model(cur)
                p = torch.softmax(logits.detach(), 1).gather(1, y[:, None]).squeeze(1)
            else:
                with torch.no_grad():
                    p = torch.softmax(model(xcf), 1).gather(1, y[:, None]).squeeze(1)
            # The current point joins the path: keep it as nascent example if it lies in the ball. ``diff`` is
            # reused below for the closed-form L1 gradient.
            diff = xcf.detach() - x0
            if t > 0:
                rows_in = rule.in_ball(diff).nonzero().squeeze(1)
                if rows_in.numel():
                    nascent[rows_in] = xcf.detach()[rows_in]
            passed = rule.passed(p)
            if t == 0 and rule.threshold:
                initially_valid[idx] = passed
            finish = rule.finished(passed, t)
            keep = None
            if bool(finish.any()):
                rows = idx[finish]
                out_cf[rows] = xcf.detach()[finish]
                out_nascent[rows] = nascent[finish]
                out_steps[rows] = t
                out_prob[rows] = p[finish]
                out_mature[rows] = rule.mature(passed)[finish]
                keep = ~finish
                if not bool(keep.any()):
                    break

            if not fused:
                state = state.detach().requires_grad_(True)
                cur = self.decode(state)
                logits = model(cur)
            loss = F.cross_entropy(logits, y, reduction="none") + self.penalty(cur, logits, x0, y, t, rule.max_iter)
            if keep is not None:
                loss = loss[keep]
            if lenet is not None:  # dL/dlogits by autograd (a graph of the loss alone), then ∇ₓ of the kept rows
                (g_logits,) = torch.autograd.grad(loss.sum(), logits)
                grad = fwd.input_grad(g_logits, keep)
                del fwd
            else:
                (grad,) = torch.autograd.grad(loss.sum(), state)
                grad = grad if keep is None else grad[keep]
            state = state.detach()
            if keep is not None:  # retire finished rows before the update
                state, x0, y, idx, nascent, diff = (v[keep] for v in (state, x0, y, idx, nascent, diff))
                if per_row_bounds:
                    lo, hi = lo[keep], hi[keep]
            if rule.lam != 0.0 and not self.latent:
                # closed-form gradient of λ_cst‖x' − x‖₁ (sign(0) = 0, as Zygote's gradient of |·| at 0)
                grad = rule.add_cost(grad, diff.sign_())
            finite = bool(torch.isfinite(loss).all())  # a finite loss has a finite gradient; else NaN → 0
            if plain_descent and finite:
                state = rule.fused_move(state, grad)  # Δ = −η·g fused into the update
            else:
                delta = rule.finite_delta(self.direction(grad), finite)
                state = state + delta if self.latent else move(state, delta, cons, codes)
            xcf = self.postprocess(self.decode(state), x0, cons, codes, lo, hi)
            state = self.encode(xcf, rng) if self.latent else xcf
            t += 1

        return CounterfactualResult(x, target, out_cf, out_nascent, out_mature, out_steps, out_prob,
                                    initially_valid)

    def postprocess(self, xcf: torch.Tensor, x0: torch.Tensor, cons: Constraints, codes, lo, hi) -> torch.Tensor:
        """Snap categorical groups and clamp to the domain (feature-space search; masks already keep mutability)."""
        return to_domain(xcf, cons, lo, hi)
