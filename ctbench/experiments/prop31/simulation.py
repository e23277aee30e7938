"""The linear-Gaussian simulation of Proposition 3.1 with two classes and two features ``[immutable, mutable]``,
the proposition's assumptions (checked one by one, on a setting or on data) and the grids of settings.

Class 0 is y⁻ (the factuals' class in the proof), class 1 is y⁺; the proof's ordering puts the immutable feature
lower and the mutable one higher in y⁻. :mod:`.general` holds the K-class, D-feature settings of the trainer arm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

IMM, MUT = 0, 1          # feature indices
NEG, POS = 0, 1          # class indices: non-target y⁻, target y⁺
FEATURES = ("immutable", "mutable")


@dataclass(frozen=True)
class Setting:
    """Population parameters of the two-class, two-feature Gaussian simulation (features ``[imm, mut]``).

    ``sigma`` are the per-feature standard deviations, common to both classes; ``sigma_pos`` (if given) replaces
    them for the target class y⁺ (unequal class variances); ``rho`` is the within-class correlation of the two
    features. ``n`` is the sample size *per class*. ``kind`` labels the setting in reports.
    """

    mu_neg: tuple[float, float] = (-0.5, 0.5)
    mu_pos: tuple[float, float] = (0.5, -0.5)
    sigma: tuple[float, float] = (1.0, 1.0)
    sigma_pos: tuple[float, float] | None = None
    rho: float = 0.0
    n: int = 200
    kind: str = "clean"

    def __post_init__(self):
        for name in ("mu_neg", "mu_pos", "sigma"):
            object.__setattr__(self, name, tuple(float(v) for v in getattr(self, name)))
        if self.sigma_pos is not None:
            object.__setattr__(self, "sigma_pos", tuple(float(v) for v in self.sigma_pos))
        for name in ("mu_neg", "mu_pos", "sigma", "sigma_pos"):
            v = getattr(self, name)
            if v is not None and len(v) != 2:
                raise ValueError(f"Setting.{name}: expected 2 values (immutable, mutable), got {v}")
        if min(self.sigma) <= 0 or (self.sigma_pos is not None and min(self.sigma_pos) <= 0):
            raise ValueError("Setting: standard deviations must be > 0")
        if not -1.0 < self.rho < 1.0:
            raise ValueError(f"Setting.rho: {self.rho} must lie in (-1, 1)")
        if int(self.n) < 4:
            raise ValueError(f"Setting.n: {self.n} must be >= 4 per class")
        object.__setattr__(self, "n", int(self.n))

    @classmethod
    def from_gaps(cls, gap_imm: float, gap_mut: float, sigma: Sequence[float] = (1.0, 1.0), n: int = 200,
                  **kw) -> Setting:
        """Means centred at zero: the immutable feature is ``gap_imm`` higher in y⁺, the mutable ``gap_mut`` lower."""
        return cls(mu_neg=(-gap_imm / 2, gap_mut / 2), mu_pos=(gap_imm / 2, -gap_mut / 2), sigma=tuple(sigma),
                   n=n, **kw)

    def class_sigma(self, k: int) -> np.ndarray:
        return np.asarray(self.sigma_pos if (k == POS and self.sigma_pos is not None) else self.sigma)

    def mean(self, k: int) -> np.ndarray:
        return np.asarray(self.mu_pos if k == POS else self.mu_neg)

    def cov(self, k: int) -> np.ndarray:
        s = self.class_sigma(k)
        c = np.diag(s**2)
        c[IMM, MUT] = c[MUT, IMM] = self.rho * s[IMM] * s[MUT]
        return c

    def row(self) -> dict:
        sp = self.sigma_pos or self.sigma
        return {"kind": self.kind, "n": self.n,
                "mu_neg_imm": self.mu_neg[IMM], "mu_neg_mut": self.mu_neg[MUT],
                "mu_pos_imm": self.mu_pos[IMM], "mu_pos_mut": self.mu_pos[MUT],
                "gap_imm": self.mu_pos[IMM] - self.mu_neg[IMM], "gap_mut": self.mu_neg[MUT] - self.mu_pos[MUT],
                "sigma_imm": self.sigma[IMM], "sigma_mut": self.sigma[MUT],
                "sigma_pos_imm": sp[IMM], "sigma_pos_mut": sp[MUT], "rho": self.rho}


@dataclass
class SimData:
    """One simulated data set: rows ``[:n]`` are class y⁻ (label 0), rows ``[n:]`` class y⁺ (label 1)."""

    X: np.ndarray        # (2n, 2) float64, columns [immutable, mutable]
    y: np.ndarray        # (2n,) int64
    setting: Setting
    seed: int

    @property
    def n(self) -> int:
        return self.X.shape[0] // 2


def simulate(setting: Setting, seed: int) -> SimData:
    """Draw n samples per class from N(μ_k, Σ_k); the stream depends on ``seed`` only (common random numbers)."""
    rng = np.random.default_rng([int(seed), 0])
    z = rng.standard_normal((2, setting.n, 2))
    parts = [setting.mean(k) + z[k] @ np.linalg.cholesky(setting.cov(k)).T for k in (NEG, POS)]
    X = np.concatenate(parts).astype(np.float64)
    y = np.repeat(np.array([NEG, POS], dtype=np.int64), setting.n)
    return SimData(X, y, setting, int(seed))


# -- assumptions ---------------------------------------------------------------------------------------------------
ASSUMPTIONS = ("gaussian", "independent", "equal_class_variances", "mean_ordering", "discriminative_mutable")


def check_assumptions(obj: Setting | SimData | tuple[np.ndarray, np.ndarray], *, corr_tol: float = 0.1,
                      var_ratio_tol: float = 1.5, z: float = 3.0, t_crit: float = 3.0, min_effect: float = 0.1,
                      jb_crit: float = 13.8) -> dict[str, bool]:
    """Check the assumptions of Proposition 3.1, each flag on its own.

    * ``gaussian``: Gaussian class densities (a :class:`Setting` always is; for data, the Jarque–Bera statistic of
      every feature in every class is below ``jb_crit``, the 99.9% point of χ²₂);
    * ``independent``: diagonal covariance, i.e. no within-class correlation (data: |r| ≤ max(corr_tol, z/√(n−3))
      in each class, so only a correlation that is both noticeable and significant fails);
    * ``equal_class_variances``: Σ_{y⁻} = Σ_{y⁺}, the *common* covariance of the proposition (variances may differ
      across features); data: |log(s²₊/s²₋)| ≤ max(log var_ratio_tol, z·√(2/(n₋−1) + 2/(n₊−1))) per feature;
    * ``mean_ordering``: μ_{y⁻,imm} < μ_{y⁺,imm} and μ_{y⁻,mut} > μ_{y⁺,mut} (sample means for data);
    * ``discriminative_mutable``: the mutable feature separates the classes (population: standardised mean gap
      ≥ ``min_effect``; data: Welch |t| ≥ ``t_crit``).
    """
    if isinstance(obj, Setting):
        s = obj
        pooled = math.sqrt((s.class_sigma(NEG)[MUT] ** 2 + s.class_sigma(POS)[MUT] ** 2) / 2)
        return {
            "gaussian": True,
            "independent": s.rho == 0.0,
            "equal_class_variances": bool(np.allclose(s.class_sigma(NEG), s.class_sigma(POS))),
            "mean_ordering": s.mu_neg[IMM] < s.mu_pos[IMM] and s.mu_neg[MUT] > s.mu_pos[MUT],
            "discriminative_mutable": abs(s.mu_neg[MUT] - s.mu_pos[MUT]) / pooled >= min_effect,
        }
    X, y = (obj.X, obj.y) if isinstance(obj, SimData) else (np.asarray(obj[0]), np.asarray(obj[1]))
    A, B = np.asarray(X[y == NEG], dtype=np.float64), np.asarray(X[y == POS], dtype=np.float64)
    if A.shape[0] < 4 or B.shape[0] < 4 or X.shape[1] != 2:
        raise ValueError("check_assumptions needs two features and at least 4 samples in each class")

    def jarque_bera(v: np.ndarray) -> float:
        c = v - v.mean()
        m2 = (c**2).mean()
        skew, kurt = (c**3).mean() / m2**1.5, (c**4).mean() / m2**2 - 3.0
        return len(v) / 6.0 * (skew**2 + kurt**2 / 4.0)

    def corr_ok(C: np.ndarray) -> bool:
        r = np.corrcoef(C[:, IMM], C[:, MUT])[0, 1]
        return bool(abs(r) <= max(corr_tol, z / math.sqrt(C.shape[0] - 3)))

    va, vb = A.var(0, ddof=1), B.var(0, ddof=1)
    var_tol = max(math.log(var_ratio_tol), z * math.sqrt(2 / (A.shape[0] - 1) + 2 / (B.shape[0] - 1)))
    ma, mb = A.mean(0), B.mean(0)
    t_mut = (ma[MUT] - mb[MUT]) / math.sqrt(va[MUT] / A.shape[0] + vb[MUT] / B.shape[0])
    return {
        "gaussian": all(jarque_bera(C[:, d]) < jb_crit for C in (A, B) for d in (IMM, MUT)),
        "independent": corr_ok(A) and corr_ok(B),
        "equal_class_variances": bool(np.all(np.abs(np.log(vb / va)) <= var_tol)),
        "mean_ordering": bool(ma[IMM] < mb[IMM] and ma[MUT] > mb[MUT]),
        "discriminative_mutable": bool(abs(t_mut) >= t_crit),
    }



# -- grid ----------------------------------------------------------------------------------------------------------
def default_grid(quick: bool = False) -> list[Setting]:
    """Settings where the proposition's assumptions hold: gaps × per-feature σ (diagonal, common) × n."""
    gaps = (0.5, 2.0) if quick else (0.5, 1.0, 2.0)
    sigmas = ((1.0, 1.0),) if quick else ((1.0, 1.0), (0.5, 1.0), (1.0, 0.5))
    ns = (50, 200) if quick else (50, 200, 1000)
    return [Setting.from_gaps(gi, gm, sigma=s, n=n) for n in ns for s in sigmas for gi in gaps for gm in gaps]


VIOLATIONS = {
    "clean": {},
    "correlated_rho+0.8": {"rho": 0.8},
    "correlated_rho-0.8": {"rho": -0.8},
    "unequal_class_variances": {"sigma_pos": (2.0, 2.0)},
    "correlated+unequal": {"rho": 0.8, "sigma_pos": (2.0, 2.0)},
    "imm_ordering_flipped": {"flip_imm": True},
    "mutable_not_discriminative": {"gap_mut": 0.0},
}


def violation_grid(quick: bool = False, n: int = 200) -> list[Setting]:
    """The same gap grid with one assumption broken per ``kind`` (``clean`` is the reference)."""
    gaps = (1.0,) if quick else (0.5, 1.0, 2.0)
    out = []
    for kind, spec in VIOLATIONS.items():
        spec = dict(spec)
        flip = spec.pop("flip_imm", False)
        gm_fixed = spec.pop("gap_mut", None)
        for gi in gaps:
            for gm in ((gm_fixed,) if gm_fixed is not None else gaps):
                s = Setting.from_gaps(-gi if flip else gi, gm, n=n, kind=kind, **spec)
                if not any(s == o for o in out):
                    out.append(s)
    return out

