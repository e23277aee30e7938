"""Classifiers of the paper: MLP, linear and LeNet, all returning raw logits (reference §5).

Binary tasks are 2-logit softmax problems, never a single sigmoid output. Initialisation follows Flux's defaults
(Glorot/Xavier-uniform weights, zero biases) and draws from an explicit ``torch.Generator`` so that the same seed
gives the same weights regardless of what else used the global RNG.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn


def _init_(module: nn.Module, generator: torch.Generator | None) -> None:
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight, generator=generator)
            nn.init.zeros_(m.bias)


class MLP(nn.Sequential):
    """D → (hidden, ReLU) × layers → K logits; the paper's model is one hidden layer of 32 units.

    ``hidden`` may also be a list of widths, one per hidden layer (e.g. ``[128, 64, 16]``, the German Credit model
    of Black et al. 2022); ``layers`` must then be left at 1 or equal its length."""

    def __init__(self, n_features: int, n_classes: int, hidden: int | Sequence[int] = 32, layers: int = 1,
                 generator: torch.Generator | None = None):
        if layers < 1:
            raise ValueError("MLP needs layers >= 1 (use LinearModel for none)")
        if isinstance(hidden, int):
            widths = [int(hidden)] * layers
        else:
            widths = [int(h) for h in hidden]
            if not widths or layers not in (1, len(widths)):
                raise ValueError(f"MLP: hidden {list(hidden)} needs at least one width and layers = 1 or "
                                 f"{len(widths)}, got layers = {layers}")
        if min(widths) < 1:
            raise ValueError(f"MLP: hidden widths must be >= 1, got {widths}")
        mods: list[nn.Module] = []
        width = n_features
        for h in widths:
            mods += [nn.Linear(width, h), nn.ReLU()]
            width = h
        mods.append(nn.Linear(width, n_classes))
        super().__init__(*mods)
        _init_(self, generator)


class LinearModel(nn.Sequential):
    """D → K logits (the Fig. 1 model)."""

    def __init__(self, n_features: int, n_classes: int, generator: torch.Generator | None = None):
        super().__init__(nn.Linear(n_features, n_classes))
        _init_(self, generator)


class LeNet(nn.Module):
    """LeNet-5 for flat 784-pixel inputs (reshaped to 1×28×28, row-major)."""

    def __init__(self, n_features: int = 784, n_classes: int = 10, generator: torch.Generator | None = None):
        super().__init__()
        if n_features != 784:
            raise ValueError(f"LeNet expects 784 = 28×28 features, got {n_features}")
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(7 * 7 * 16, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, n_classes),
        )
        _init_(self, generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x.reshape(-1, 1, 28, 28)))


MODEL_TYPES = {"mlp": MLP, "linear": LinearModel, "lenet": LeNet}


def check_model_spec(spec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(type, the other keys) of a model config block; unknown types or keys raise ``ValueError``."""
    spec = dict(spec)
    kind = spec.pop("type", "mlp")
    if kind not in MODEL_TYPES:
        raise ValueError(f"model.type: unknown model {kind!r}; choose one of {sorted(MODEL_TYPES)}")
    allowed = {"mlp": {"hidden", "layers"}, "linear": set(), "lenet": set()}[kind]
    unknown = set(spec) - allowed
    if unknown:
        raise ValueError(f"model: unknown key(s) {sorted(unknown)} for type {kind!r}; allowed: {sorted(allowed)}")
    return kind, spec


def build_model(spec: dict[str, Any], n_features: int, n_classes: int, seed: int | None = None) -> nn.Module:
    """Build a model from a config block such as ``{"type": "mlp", "hidden": 32, "layers": 1}``."""
    kind, spec = check_model_spec(spec)
    gen = None
    if seed is not None:
        gen = torch.Generator().manual_seed(int(seed))
    return MODEL_TYPES[kind](n_features, n_classes, generator=gen, **spec)
