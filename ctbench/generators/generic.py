"""Generic (Wachter et al.) generator: cross-entropy towards the target plus λ_cst·‖x' − x‖₁ (reference §4.2)."""

from __future__ import annotations

from .base import GradientGenerator


class GenericGenerator(GradientGenerator):
    """The paper's "Wachter" generator; the L1 cost is the base class's penalty."""

    name = "generic"
