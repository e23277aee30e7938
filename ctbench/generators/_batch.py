"""Helpers shared by the consistency study's searches (SNS, elastic-net, Min-ε PGD, latent random search).

They are not gradient-descent-on-CE searches, so they do not run :class:`~.base.GradientGenerator`'s loop; they
share its ``search`` signature and return the same :class:`~.base.CounterfactualResult`.
"""

from __future__ import annotations

import torch
from torch import nn

from ..constraints import Constraints
from .base import CounterfactualResult, check_batch  # noqa: F401  (re-exported for the searches)


def bounds_containing(cons: Constraints, x0: torch.Tensor, codes):
    """Per-row clamp bounds that contain every row of ``x0``: a clamp never moves a point away from its start, so a
    projection onto a ball around the start stays inside the ball after clamping."""
    lo, hi = cons.row_bounds(x0, codes)
    if lo is None:
        return None, None
    return torch.minimum(lo, x0), torch.maximum(hi, x0)


def default_rng(generator: torch.Generator | None, seed: int) -> torch.Generator:
    """The caller's generator, or a fresh one seeded with ``seed`` (never the global RNG)."""
    if generator is not None:
        return generator
    g = torch.Generator()
    g.manual_seed(int(seed))
    return g


@torch.no_grad()
def predict(model: nn.Module, x: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(predicted class, p(target | x)) per row."""
    logits = model(x)
    return logits.argmax(1), torch.softmax(logits, 1).gather(1, target[:, None]).squeeze(1)


def make_result(model: nn.Module, factual: torch.Tensor, target: torch.Tensor, cf: torch.Tensor,
                steps: torch.Tensor, initially_valid: torch.Tensor) -> CounterfactualResult:
    """A result whose ``mature`` flag is validity (argmax f(x') = target); these searches have no path of nascent
    points, so ``nascent`` is the counterfactual itself."""
    pred, prob = predict(model, cf, target)
    return CounterfactualResult(factual, target, cf, cf.clone(), pred == target, steps.long(), prob,
                                initially_valid)


def project_l2(x: torch.Tensor, x0: torch.Tensor, radius) -> torch.Tensor:
    """x0 + (x − x0)·min(1, r/‖x − x0‖₂) per row; ``radius`` is a float or a (B, 1) tensor."""
    d = x - x0
    n = d.norm(dim=1, keepdim=True)
    r = torch.as_tensor(radius, dtype=x.dtype, device=x.device)
    return x0 + d * torch.where(n > r, r / n.clamp_min(torch.finfo(n.dtype).tiny), torch.ones_like(n))


def unit_rows(g: torch.Tensor) -> torch.Tensor:
    """g/‖g‖₂ per row; a zero row stays zero."""
    n = g.norm(dim=1, keepdim=True)
    return torch.where(n > 0, g / n.clamp_min(torch.finfo(n.dtype).tiny), torch.zeros_like(g))
