"""Training objectives (reference §1.5–1.6): vanilla (BL), full (CT), energy-only (CD), adversarial-only (AR).

On one mini-batch with its group of counterfactual tuples (x', x_AE, y⁺, x⁺, y_AE), with f the logits:

* clf  = mean CE(f(X_b), Y_b)
* div  = mean_j f(x'_j)[y⁺_j] − f(x⁺_j)[y⁺_j]          (contrastive divergence of energies E = −f[y])
* reg  = mean_j f(x⁺_j)[y⁺_j]² + f(x'_j)[y⁺_j]²         (energy ridge)
* adv  = mean_j CE(f(x_AE,j), y_AE,j)                   (nascent counterfactuals as adversarial examples)

Total = λ_clf·clf + λ_div·div + λ_reg·reg + λ_adv·adv over the parts the objective uses. All parts are computed
(and logged) whenever counterfactuals exist, as the reference does; the ablations just drop terms from the total.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

OBJECTIVE_PARTS = {
    "vanilla": ("clf",),
    "full": ("clf", "div", "reg", "adv"),
    "energy": ("clf", "div", "reg"),
    "adversarial": ("clf", "adv"),
}
ALIASES = {"bl": "vanilla", "ct": "full", "cd": "energy", "ar": "adversarial"}


@dataclass
class CounterfactualGroup:
    """The counterfactual tuples assigned to one mini-batch (constants w.r.t. the model parameters)."""

    x_cf: torch.Tensor     # (m, D) mature counterfactual, or x⁺ for immature ones
    x_ae: torch.Tensor     # (m, D) nascent counterfactual
    target: torch.Tensor   # (m,) y⁺
    x_plus: torch.Tensor   # (m, D) target-class sample, protected under mutability
    y_ae: torch.Tensor     # (m,) label for the adversarial loss

    def __len__(self) -> int:
        return self.x_cf.shape[0]


@dataclass(frozen=True)
class Objective:
    name: str = "full"
    lambda_clf: float = 1.0
    lambda_div: float = 0.5
    lambda_reg: float = 0.1
    lambda_adv: float = 0.25

    def __post_init__(self):
        name = ALIASES.get(self.name.lower(), self.name.lower())
        if name not in OBJECTIVE_PARTS:
            raise ValueError(f"objective.name: unknown objective {self.name!r}; choose one of "
                             f"{sorted(OBJECTIVE_PARTS)} (or {sorted(ALIASES)})")
        object.__setattr__(self, "name", name)

    @property
    def parts(self) -> tuple[str, ...]:
        return OBJECTIVE_PARTS[self.name]

    @property
    def needs_counterfactuals(self) -> bool:
        return self.name != "vanilla"

    def lambdas(self) -> dict[str, float]:
        return {"clf": self.lambda_clf, "div": self.lambda_div, "reg": self.lambda_reg, "adv": self.lambda_adv}

    def to_dict(self) -> dict:
        return asdict(self)

    def __call__(self, model: nn.Module, xb: torch.Tensor, yb: torch.Tensor,
                 group: CounterfactualGroup | None,
                 counts: tuple[int, int] | None = None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Return the total loss and its parts (unweighted) for one mini-batch.

        ``counts`` = (n, m), the rows and tuples of the whole mini-batch when ``xb`` and ``group`` are one row chunk
        of it: each part is then the chunk's sum over the whole batch's count, so that the chunks' losses (and their
        gradients) add up to the batch's (:mod:`.grad_chunks`)."""
        n, m = counts if counts is not None else (xb.shape[0], 0 if group is None else len(group))

        def mean(v: torch.Tensor, count: int) -> torch.Tensor:  # the batch mean, or this chunk's share of it
            return v.mean() if counts is None else v.sum() / count

        def ce(logits: torch.Tensor, y: torch.Tensor, count: int) -> torch.Tensor:
            if counts is None:
                return F.cross_entropy(logits, y)
            return F.cross_entropy(logits, y, reduction="sum") / count

        if group is None or m == 0 or not self.needs_counterfactuals:
            clf = ce(model(xb), yb, n)
            return self.lambda_clf * clf, {"clf": clf}
        nb, mc = xb.shape[0], len(group)
        # One forward pass for the batch and all three kinds of counterfactual points.
        logits = model(torch.cat([xb, group.x_cf, group.x_plus, group.x_ae]))
        lb, lcf, lplus, lae = logits.split([nb, mc, mc, mc])
        t = group.target[:, None]
        f_cf, f_plus = lcf.gather(1, t).squeeze(1), lplus.gather(1, t).squeeze(1)
        parts = {
            "clf": ce(lb, yb, n),
            "div": mean(f_cf - f_plus, m),
            "reg": mean(f_plus.square() + f_cf.square(), m),
            "adv": ce(lae, group.y_ae, m),
        }
        lam = self.lambdas()
        total = sum(lam[k] * parts[k] for k in self.parts)
        return total, parts
