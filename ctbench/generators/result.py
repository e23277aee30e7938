"""What every counterfactual search returns (one row per factual): its own module so that the searches,
:mod:`.base` and the closed-form MLP search (:mod:`.mlp_search`) share it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch


@dataclass
class CounterfactualResult:
    """Everything a search returns, one row per factual."""

    factual: torch.Tensor          # (B, D)
    target: torch.Tensor           # (B,) long
    counterfactual: torch.Tensor   # (B, D) final x'
    nascent: torch.Tensor          # (B, D) last path point within the L∞ ε-ball of the factual
    mature: torch.Tensor           # (B,) bool
    steps: torch.Tensor            # (B,) long, number of updates taken
    prob_target: torch.Tensor      # (B,) p(y⁺ | x') at the end
    initially_valid: torch.Tensor  # (B,) bool: the factual already met the threshold; no step was taken

    def __len__(self) -> int:
        return self.factual.shape[0]

    def to(self, device) -> CounterfactualResult:
        return CounterfactualResult(**{f.name: getattr(self, f.name).to(device) for f in fields(self)})

    def select(self, index) -> CounterfactualResult:
        return CounterfactualResult(**{f.name: getattr(self, f.name)[index] for f in fields(self)})
