"""Stable Neighbor Search (Black et al., ICLR 2022, Def. 5), batched over rows.

Given starting counterfactuals x₀ already in class c, SNS looks for

    x_c = argmax_{x' ∈ B₂(x₀, δ)}  ∫₀¹ σ_c(t·x') dt     such that  argmax f(x_c) = c,

a point whose class score stays high along the straight path from the zero baseline: a confident point in a flat
neighbourhood, which the paper shows is more stable under retraining. The integral is a right Riemann sum over
``grid_points`` points t = i/R, i = 1..R (the paper: 10; the authors' code: 20). One step, for all rows at once:

1. g = ∇ₓ Σ_rows Σ_i σ_c(t_i·x')  (σ_c = softmax probability of c; one forward/backward over an (R·B, D) batch),
   with the mutability mask applied to g (immutable features get no gradient);
2. x' ← x' + η·g/(‖g‖₂ + ε) (a row with g = 0 stays put; ε = ``norm_eps``, below);
3. x' ← x₀ + (x' − x₀)·min(1, δ/‖x' − x₀‖₂)  (projection onto the L2 ball around the start);
4. x' ← clamp(x', lo, hi) with the data-range box widened to contain x₀ (so the clamp keeps x' in the ball);
5. if argmax f(x') = c, x' becomes the row's answer (the answer is the last such iterate; the start if none).

The loss is a sum over rows and the step is normalised per row, so a row's path does not depend on the batch (the
authors' code averages over the batch, which the per-row normalisation cancels). The search starts at x₀ plus
Gaussian noise of std ``noise_std`` (authors' code: 1e-3), masked by mutability and drawn from a seeded generator.
The step's normaliser ``norm_eps`` is the authors' code's (``l2_norm`` adds ``tf.keras.backend.epsilon()``, 1e-7,
to the norm), under either fidelity: the paper does not state the step's form. Where the class probability saturates
along the whole path, ‖g‖ falls far below 1e-7 and the authors' step shrinks with it (SNS stalls); ``norm_eps=0``
takes a full step of η whatever the gradient's size (``benchmarks/black2022_causes/sns_step.py`` measures the two).
Defaults (``fidelity="reference"``) are the authors' code: δ = 0.3, η = 1e-3, 100 steps, 20 grid points.
``fidelity="paper"`` follows Appendix B.3: 200 steps, 10 grid points, η = 2δ/200 (δ: 0.8 × the largest Min-ε PGD
ball, passed by the caller).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from ..constraints import Constraints
from ._batch import bounds_containing, check_batch, default_rng, make_result, predict, project_l2, unit_rows
from .base import CounterfactualResult, frozen_parameters

#: ε of the step x' + η·g/(‖g‖ + ε): the authors' code's (Keras' epsilon), the default under both fidelities
AUTHORS_NORM_EPS = 1e-7
#: Settings of the two fidelity modes (δ is given by the caller in both; the reference default is 0.3).
SNS_PRESETS = {
    "reference": {"grid_points": 20, "max_steps": 100, "step_size": 1e-3},
    "paper": {"grid_points": 10, "max_steps": 200, "step_size": None},  # None: 2δ / max_steps
}


def riemann_grid(grid_points: int, dtype=torch.float32, device=None) -> torch.Tensor:
    """t_i = i/R for i = 1..R (right Riemann sum; the baseline t = 0 is left out, as in the authors' code)."""
    return torch.arange(1, grid_points + 1, dtype=dtype, device=device) / grid_points


@torch.no_grad()
def integrated_score(model: nn.Module, x: torch.Tensor, target: torch.Tensor, grid_points: int = 20) -> torch.Tensor:
    """(1/R) Σ_i softmax(f(t_i·x))[c] per row: the Riemann estimate of ∫₀¹ σ_c(t·x) dt that SNS ascends
    (an evaluation helper, without gradients; the search builds the same sum inside its autograd pass)."""
    x = torch.as_tensor(x)
    ts = riemann_grid(grid_points, x.dtype, x.device)
    path = ts[:, None, None] * x[None]
    probs = torch.softmax(model(path.reshape(-1, x.shape[1])), 1).reshape(grid_points, x.shape[0], -1)
    return probs.gather(2, target.reshape(1, -1, 1).expand(grid_points, -1, 1)).squeeze(2).mean(0)


class SNSGenerator:
    """Batched SNS; :meth:`refine` puts it on top of any base method's result."""

    name = "sns"

    def __init__(self, radius: float = 0.3, step_size: float | None = None, max_steps: int | None = None,
                 grid_points: int | None = None, noise_std: float = 1e-3, fidelity: str = "reference",
                 seed: int = 0, norm_eps: float = AUTHORS_NORM_EPS):
        if fidelity not in SNS_PRESETS:
            raise ValueError(f"sns.fidelity: {fidelity!r} is not one of {sorted(SNS_PRESETS)}")
        radius = float(radius)
        if not radius > 0:
            raise ValueError(f"sns.radius: {radius} must be > 0 (the L2 ball around the start)")
        preset = SNS_PRESETS[fidelity]
        max_steps = int(preset["max_steps"] if max_steps is None else max_steps)
        grid_points = int(preset["grid_points"] if grid_points is None else grid_points)
        if step_size is None:
            step_size = preset["step_size"] if preset["step_size"] is not None else 2 * radius / max(max_steps, 1)
        if max_steps < 0:
            raise ValueError(f"sns.max_steps: {max_steps} must be >= 0")
        if grid_points < 1:
            raise ValueError(f"sns.grid_points: {grid_points} must be >= 1")
        if not float(step_size) > 0:
            raise ValueError(f"sns.step_size: {step_size} must be > 0")
        if float(noise_std) < 0:
            raise ValueError(f"sns.noise_std: {noise_std} must be >= 0")
        if isinstance(norm_eps, bool) or not isinstance(norm_eps, int | float) or not 0 <= float(norm_eps) < math.inf:
            raise ValueError(f"sns.norm_eps: {norm_eps!r} must be a finite number >= 0 (the authors' code: 1e-7; 0: a "
                             "unit step whatever the gradient's size; inf would freeze every search)")
        self.radius = radius
        self.step_size = float(step_size)
        self.max_steps = max_steps
        self.grid_points = grid_points
        self.noise_std = float(noise_std)
        self.fidelity = fidelity
        self.seed = int(seed)
        self.norm_eps = float(norm_eps)

    def params(self) -> dict[str, Any]:
        return {"type": self.name, "radius": self.radius, "step_size": self.step_size, "max_steps": self.max_steps,
                "grid_points": self.grid_points, "noise_std": self.noise_std, "fidelity": self.fidelity,
                "seed": self.seed, "norm_eps": self.norm_eps}

    # -- entry points --------------------------------------------------------------------------------------------
    def search(self, model: nn.Module, x: torch.Tensor, target: torch.Tensor, constraints: Constraints | None = None,
               convergence=None, generator: torch.Generator | None = None) -> CounterfactualResult:
        """SNS from the points ``x`` (the starts, reported as ``factual``) keeping class ``target``.

        ``convergence`` is accepted for the common signature and ignored: SNS always runs ``max_steps`` steps.
        ``steps`` is the step at which the returned iterate was reached (0: the start was kept).
        """
        x, target, cons = check_batch(x, target, constraints)
        with frozen_parameters(model):
            cf, steps = self._run(model, x, target, cons, default_rng(generator, self.seed))
            return make_result(model, x, target, cf, steps, predict(model, x, target)[0] == target)

    def refine(self, model: nn.Module, base: CounterfactualResult, constraints: Constraints | None = None,
               generator: torch.Generator | None = None, only_valid: bool = True) -> CounterfactualResult:
        """SNS on top of a base method: starts at ``base.counterfactual``, keeps ``base.target``; the result has the
        base's factuals (so costs are measured from the factual) and its ``initially_valid`` flags.

        ``only_valid`` (default, as the authors' pipeline, which passes only valid counterfactuals to SNS): rows
        whose base counterfactual lacks the target label are returned unchanged (steps 0), so SNS never turns a
        failed search into a valid one; ``False`` searches from every row.
        """
        x, target, cons = check_batch(base.counterfactual, base.target, constraints)
        with frozen_parameters(model):
            cf, steps = x.clone(), torch.zeros_like(target)
            rows = (predict(model, x, target)[0] == target) if only_valid else torch.ones_like(target, dtype=bool)
            idx = rows.nonzero().squeeze(1)
            if idx.numel():
                cf[idx], steps[idx] = self._run(model, x[idx], target[idx], cons, default_rng(generator, self.seed))
            return make_result(model, base.factual, target, cf, steps, base.initially_valid)

    # -- the search ----------------------------------------------------------------------------------------------
    def _run(self, model, x0, target, cons, rng):
        B, D = x0.shape
        R, T = self.grid_points, self.max_steps
        codes = cons.codes(x0.device)
        lo, hi = bounds_containing(cons, x0, codes)
        ts = riemann_grid(R, x0.dtype, x0.device)[:, None, None]
        tgt = target.reshape(1, B, 1).expand(R, B, 1)

        best = x0.clone()
        best_step = torch.zeros(B, dtype=torch.long, device=x0.device)
        xc = x0.clone()
        if self.noise_std > 0 and B:
            noise = torch.randn(x0.shape, generator=rng, dtype=x0.dtype, device=rng.device).to(x0.device)
            xc = self._clamp(x0 + cons.mask_update(noise.mul_(self.noise_std), codes), lo, hi)
        for step in range(T + 1):
            last = step == T
            if last:  # only the prediction at the final iterate is needed
                with torch.no_grad():
                    pred_now = model(xc).argmax(1)
            else:
                xc = xc.detach().requires_grad_(True)
                logits = model((ts * xc[None]).reshape(R * B, D))
                probs = torch.softmax(logits, 1).reshape(R, B, -1)
                (grad,) = torch.autograd.grad(probs.gather(2, tgt).sum(), xc)
                pred_now = logits.detach().reshape(R, B, -1)[-1].argmax(1)  # t = 1 is the iterate itself
                xc = xc.detach()
            if step > 0:  # the noisy start is not a candidate; the answer starts as x₀
                keep = pred_now == target
                best = torch.where(keep[:, None], xc, best)
                best_step = torch.where(keep, torch.full_like(best_step, step), best_step)
            if last:
                break
            grad = cons.mask_update(grad, codes)
            xc = self._clamp(project_l2(xc + self.step_size * self._direction(grad), x0, self.radius), lo, hi)
        return best, best_step

    def _direction(self, grad: torch.Tensor) -> torch.Tensor:
        """g/(‖g‖ + ε) per row, as the authors' ``unit_vector`` (ε > 0); g/‖g‖ for ε = 0 (a zero row stays 0)."""
        if self.norm_eps == 0:
            return unit_rows(grad)
        return grad / (grad.norm(dim=1, keepdim=True) + self.norm_eps)

    @staticmethod
    def _clamp(x, lo, hi):
        return x if lo is None else torch.clamp(x, lo, hi)


__all__ = ["AUTHORS_NORM_EPS", "SNSGenerator", "SNS_PRESETS", "integrated_score", "riemann_grid"]
