"""Domain and mutability constraints shared by search, training and evaluation (reference §2, §3).

Mutability per feature is one of ``both``, ``increase``, ``decrease``, ``none``. In the search it masks the
update Δ (``increase`` keeps Δ ≥ 0, ``decrease`` keeps Δ ≤ 0, ``none`` zeroes it), so an immutable feature is
bit-identical to the factual after any number of steps. The domain box is a per-feature clamp applied after every
step; for constrained features the box is widened to contain the factual's own value, so a clamp can never move an
immutable feature or push a monotone one the wrong way (for factuals inside the box, as all training data are, this
is exactly the reference's clamp).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

MUTABILITY = ("both", "increase", "decrease", "none")
_CODE = {name: i for i, name in enumerate(MUTABILITY)}


def parse_mutability(spec: Any, n_features: int) -> list[str] | None:
    """Normalise a mutability spec to one name per feature (``None`` = everything mutable).

    Accepted forms: ``None``; one name for all features (``"increase"``); a list of names, one per feature; a list of
    0-based integer indices, which are immutable (the form of the paper's final runs, there 1-based); a mapping
    ``{index: name}`` for the listed features.
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        _check_name(spec, "mutability")
        return [spec] * n_features
    if isinstance(spec, dict):
        out = ["both"] * n_features
        for k, v in spec.items():
            idx = _check_index(k, n_features)
            _check_name(v, f"mutability[{k}]")
            out[idx] = v
        return out
    spec = list(spec)
    if all(isinstance(v, str) for v in spec):
        if len(spec) != n_features:
            raise ValueError(
                f"mutability: got {len(spec)} names for {n_features} features; give one per feature, or a list of "
                "immutable feature indices"
            )
        for i, v in enumerate(spec):
            _check_name(v, f"mutability[{i}]")
        return spec
    if all(isinstance(v, int) and not isinstance(v, bool) for v in spec):
        out = ["both"] * n_features
        for k in spec:
            out[_check_index(k, n_features)] = "none"
        return out
    raise ValueError("mutability: expected null, a name, a list of names, a list of immutable indices or a mapping")


def _check_name(name: Any, where: str) -> None:
    if name not in _CODE:
        raise ValueError(f"{where}: {name!r} is not one of {MUTABILITY}")


def _check_index(k: Any, n: int) -> int:
    try:
        idx = int(k)
    except (TypeError, ValueError):
        raise ValueError(f"mutability: feature index {k!r} is not an integer") from None
    if not 0 <= idx < n:
        raise ValueError(f"mutability: feature index {idx} out of range for {n} features (0-based)")
    return idx


@dataclass
class Constraints:
    """Per-feature constraints as tensors; build with :meth:`build`."""

    n_features: int
    lower: torch.Tensor | None = None  # (D,)
    upper: torch.Tensor | None = None  # (D,)
    mutability: list[str] | None = None
    categorical_groups: list[list[int]] = field(default_factory=list)

    @classmethod
    def build(cls, n_features: int, *, domain: Any = None, mutability: Any = None,
              categorical_groups: Sequence[Sequence[int]] | None = None) -> Constraints:
        """``domain`` is ``None``, a ``(lower, upper)`` pair of scalars or per-feature sequences."""
        lower = upper = None
        if domain is not None:
            lo, hi = domain
            lower = torch.as_tensor(lo, dtype=torch.float64).expand(n_features).clone()
            upper = torch.as_tensor(hi, dtype=torch.float64).expand(n_features).clone()
            if lower.shape != (n_features,) or upper.shape != (n_features,):
                raise ValueError(f"domain: bounds must be scalars or have {n_features} entries")
            if bool((lower > upper).any()):
                bad = int((lower > upper).nonzero()[0, 0])
                raise ValueError(f"domain: lower bound exceeds upper bound for feature {bad}")
        groups = [list(map(int, g)) for g in (categorical_groups or [])]
        for g in groups:
            for i in g:
                if not 0 <= i < n_features:
                    raise ValueError(f"categorical group {g} has index {i} out of range for {n_features} features")
        return cls(n_features, lower, upper, parse_mutability(mutability, n_features), groups)

    # -- masks ---------------------------------------------------------------------------------------------------
    def codes(self, device: torch.device | str = "cpu") -> torch.Tensor | None:
        if self.mutability is None or all(m == "both" for m in self.mutability):
            return None
        return torch.tensor([_CODE[m] for m in self.mutability], device=device)

    @property
    def has_mutability(self) -> bool:
        return self.mutability is not None and any(m != "both" for m in self.mutability)

    def immutable_indices(self) -> list[int]:
        return [i for i, m in enumerate(self.mutability or []) if m == "none"]

    def mask_update(self, delta: torch.Tensor, codes: torch.Tensor | None) -> torch.Tensor:
        """Apply the mutability rule to a proposed update Δ (reference §2.1)."""
        if codes is None:
            return delta
        zero = torch.zeros((), dtype=delta.dtype, device=delta.device)
        delta = torch.where(codes == _CODE["none"], zero, delta)
        delta = torch.where(codes == _CODE["increase"], delta.clamp(min=0), delta)
        return torch.where(codes == _CODE["decrease"], delta.clamp(max=0), delta)

    def project(self, x: torch.Tensor, x0: torch.Tensor, codes: torch.Tensor | None) -> torch.Tensor:
        """Hard projection onto the mutability set around the factual ``x0`` (for latent-space search)."""
        if codes is None:
            return x
        x = torch.where(codes == _CODE["none"], x0, x)
        x = torch.where(codes == _CODE["increase"], torch.maximum(x, x0), x)
        return torch.where(codes == _CODE["decrease"], torch.minimum(x, x0), x)

    def row_bounds(self, x0: torch.Tensor, codes: torch.Tensor | None):
        """Per-row clamp bounds: the box, widened to the factual's value on constrained features."""
        if self.lower is None:
            return None, None
        lo = self.lower.to(device=x0.device, dtype=x0.dtype)
        hi = self.upper.to(device=x0.device, dtype=x0.dtype)
        if codes is None:
            return lo, hi
        constrained = codes != _CODE["both"]
        return (torch.where(constrained, torch.minimum(lo, x0), lo),
                torch.where(constrained, torch.maximum(hi, x0), hi))

    def snap(self, x: torch.Tensor) -> torch.Tensor:
        """One-hot groups → 1 at the argmax, 0 elsewhere; single binary columns → round(clamp(v, 0, 1))."""
        if not self.categorical_groups:
            return x
        x = x.clone()
        for g in self.categorical_groups:
            if len(g) == 1:
                x[:, g[0]] = x[:, g[0]].clamp(0, 1).round()
            else:
                idx = torch.tensor(g, device=x.device)
                block = x.index_select(1, idx)
                onehot = torch.nn.functional.one_hot(block.argmax(1), len(g)).to(x.dtype)
                x[:, idx] = onehot
        return x

    def protect_positive(self, x_plus: torch.Tensor, x_cf: torch.Tensor) -> torch.Tensor:
        """Protect the target-class sample x⁺ feature by feature (reference §2.2).

        ``none`` → x'[d]; ``increase`` → max(x'[d], x⁺[d]); ``decrease`` → min(x'[d], x⁺[d]); ``both`` unchanged.
        The contrastive divergence then carries no gradient signal along an immutable feature.
        """
        codes = self.codes(x_plus.device)
        if codes is None:
            return x_plus
        out = torch.where(codes == _CODE["none"], x_cf, x_plus)
        out = torch.where(codes == _CODE["increase"], torch.maximum(x_cf, x_plus), out)
        return torch.where(codes == _CODE["decrease"], torch.minimum(x_cf, x_plus), out)

    def to_dict(self) -> dict[str, Any]:
        return {
            "domain": None if self.lower is None else [self.lower.tolist(), self.upper.tolist()],
            "mutability": self.mutability,
            "categorical_groups": self.categorical_groups,
        }


def infer_domain(X: Any, n_sigma: float = 2.0) -> tuple[list[float], list[float]]:
    """Per-feature box ``[min(μ − nσ, min x), max(μ + nσ, max x)]`` with the Bessel-corrected σ (reference §3)."""
    X = torch.as_tensor(X, dtype=torch.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError("infer_domain needs a 2-D array with at least two rows")
    mu, sd = X.mean(0), X.std(0, unbiased=True)
    lo = torch.minimum(mu - n_sigma * sd, X.min(0).values)
    hi = torch.maximum(mu + n_sigma * sd, X.max(0).values)
    return lo.tolist(), hi.tolist()
