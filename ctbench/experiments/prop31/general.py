"""K-class, D-feature linear-Gaussian settings for the trainer arm, and the sensitivity of a K-class linear model.

Features are laid out as ``[target immutable, further immutable ..., discriminative mutable ..., noise ...]``.
Class k has mean t_k·gap_imm on every immutable feature and −t_k·gap_mut on every discriminative mutable one, with
t_k evenly spaced in [−½, ½] (so for K = 2 the proof's ordering: immutable lower, mutable higher in class 0); noise
features have mean 0. Covariance is the identity (Gaussian, common, diagonal: the proposition's assumptions hold).
The proviso "at least one other feature is discriminative and mutable" holds when ``n_disc_mutable >= 1`` and
``gap_mut > 0``; settings where it fails are the negative controls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GeneralSetting:
    """One setting of the trainer arm; ``n`` samples per class. The target immutable feature is feature 0."""

    name: str
    n_classes: int = 2
    n_features: int = 2
    gap_imm: float = 1.0
    gap_mut: float = 1.0
    n_disc_mutable: int = 1
    n_disc_immutable: int = 0   # further discriminative features that are immutable (protected as well)
    n: int = 200

    def __post_init__(self):
        if self.n_classes < 2 or self.n < 4:
            raise ValueError(f"{self.name}: need n_classes >= 2 and n >= 4 per class")
        if self.n_disc_mutable < 0 or self.n_disc_immutable < 0:
            raise ValueError(f"{self.name}: feature counts must be >= 0")
        if 1 + self.n_disc_immutable + self.n_disc_mutable > self.n_features:
            raise ValueError(f"{self.name}: {self.n_features} features cannot hold 1 + {self.n_disc_immutable} "
                             f"immutable and {self.n_disc_mutable} discriminative mutable features")
        if self.gap_imm <= 0 or self.gap_mut < 0:
            raise ValueError(f"{self.name}: need gap_imm > 0 and gap_mut >= 0")

    @property
    def immutable(self) -> list[int]:
        """Indices of the immutable features (masked in the search of both CT arms, protected in one)."""
        return list(range(1 + self.n_disc_immutable))

    @property
    def proviso(self) -> bool:
        """Proposition 3.1's proviso: another feature is both discriminative and mutable."""
        return self.n_disc_mutable >= 1 and self.gap_mut > 0

    @property
    def role(self) -> str:
        return "check" if self.proviso else "negative_control"

    def means(self) -> np.ndarray:
        K, D = self.n_classes, self.n_features
        t = np.linspace(-0.5, 0.5, K)
        mu = np.zeros((K, D))
        n_imm = 1 + self.n_disc_immutable
        mu[:, :n_imm] = t[:, None] * self.gap_imm
        mu[:, n_imm:n_imm + self.n_disc_mutable] = -t[:, None] * self.gap_mut
        return mu

    def row(self) -> dict:
        return {"setting": self.name, "K": self.n_classes, "D": self.n_features, "n": self.n,
                "gap_imm": self.gap_imm, "gap_mut": self.gap_mut, "n_disc_mutable": self.n_disc_mutable,
                "n_disc_immutable": self.n_disc_immutable, "proviso": self.proviso, "role": self.role}


def simulate_general(setting: GeneralSetting, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points per class from N(μ_k, I), class 0 first; the stream depends on ``seed`` only."""
    rng = np.random.default_rng([int(seed), 2])
    K, D, n = setting.n_classes, setting.n_features, setting.n
    X = (setting.means()[:, None, :] + rng.standard_normal((K, n, D))).reshape(K * n, D)
    return X, np.repeat(np.arange(K), n)


def sensitivities(theta: np.ndarray) -> np.ndarray:
    """Per feature, the root mean square over class pairs k < m of θ_k,d − θ_m,d: the coefficient of x_d in the
    log-odds between two classes (softmax logits are identified only up to a common shift, these are not). For
    K = 2 it is |w_d| with w = θ₁ − θ₀. ``theta`` (..., K, D) → (..., D)."""
    theta = np.asarray(theta, dtype=np.float64)
    K = theta.shape[-2]
    k, m = np.triu_indices(K, 1)
    diff = theta[..., k, :] - theta[..., m, :]
    return np.sqrt((diff**2).mean(-2))


def relative_sensitivity(sens: np.ndarray, feature: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(sensitivity to ``feature``, root mean square sensitivity to the remaining features) and their ratio is the
    relative sensitivity; for D = 2 the ratio is |w_imm| / |w_mut|. ``sens`` (..., D)."""
    sens = np.asarray(sens, dtype=np.float64)
    rest = np.delete(sens, feature, axis=-1)
    return sens[..., feature], np.sqrt((rest**2).mean(-1))
