"""ECCo generator: Generic plus a model-based energy penalty with a step-dependent multiplier (reference §4.3)."""

from __future__ import annotations

from .base import GradientGenerator


def energy_multiplier(t: int, T: int, decay: float = 0.9) -> float:
    """φ(t) = a·(b + t + 1)^(−decay), b = round(T/25) (half to even, as Julia), a = b/10.

    For T ≤ 12, b = 0 and the energy term vanishes (the T = 5 point of the generator grid).
    """
    b = round(T / 25)  # Python's round is half-to-even, like Julia's default
    a = b / 10
    if a == 0:
        return 0.0
    return a * (b + t + 1) ** (-decay)


class ECCoGenerator(GradientGenerator):
    """Per-row objective: CE + λ_cst‖x' − x‖₁ + λ_egy·φ(t)·(E + 1e-3·E²) with E = −f(x')[y⁺] (raw logit)."""

    name = "ecco"

    def __init__(self, lambda_energy: float = 5.0, energy_reg: float = 1e-3, decay: float = 0.9, **kw):
        super().__init__(**kw)
        self.lambda_energy = float(lambda_energy)
        self.energy_reg = float(energy_reg)
        self.decay = float(decay)

    def params(self):
        return {**super().params(), "lambda_energy": self.lambda_energy, "energy_reg": self.energy_reg,
                "decay": self.decay}

    def penalty(self, x_cf, logits, x0, target, t, T):
        pen = super().penalty(x_cf, logits, x0, target, t, T)
        phi = energy_multiplier(t, T, self.decay)
        if phi == 0.0 or self.lambda_energy == 0.0:
            return pen
        energy = -logits.gather(1, target[:, None]).squeeze(1)
        return pen + (self.lambda_energy * phi) * (energy + self.energy_reg * energy.square())

    def target_logit_grad(self, target_logit, t, T):
        """∂/∂z of k·(E + c·E²) with E = −z: k·(2c·z − 1), k = λ_egy·φ(t)."""
        k = self.lambda_energy * energy_multiplier(t, T, self.decay)
        if k == 0.0:
            return None
        return target_logit.mul(2.0 * self.energy_reg * k).sub_(k)


__all__ = ["ECCoGenerator", "energy_multiplier"]
