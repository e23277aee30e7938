"""Numerical check of Proposition 3.1 (protecting immutable features) on a linear-Gaussian simulation.

The proposition (paper §3.4, proof in appendix B.2): for a linear softmax classifier f(x) = S(Θx) trained with the
contrastive-divergence penalty, on data with Gaussian class densities and a common *diagonal* covariance matrix,
protecting an immutable feature (x⁺[d] := x'[d]) lowers the classifier's sensitivity to that feature relative to
the others, provided at least one other feature is discriminative and mutable. The proof takes a factual from a
non-target class y⁻, a target y⁺ ~ p(y), and assumes the immutable feature has the lower mean in y⁻ and the mutable
feature the higher mean.

This module simulates that setting and trains the classifier in three arms per (setting, seed) on the same data,
initialisation and random draws (a paired comparison): counterfactual training (CT) without protection (``u``), CT
with protection (``p``) and, for reference, conventional training on the cross-entropy alone (``bl``).

* data: two classes, n samples each, features ``[immutable, mutable]``, class 0 = y⁻, class 1 = y⁺ of the
  proposition; x | y=k ~ N(μ_k, Σ_k) with Σ_k = diag(σ²) in the proposition's setting; a within-class
  correlation ρ and class-specific standard deviations (``sigma_pos``) give the violation study;
* model: Θ ∈ R^{2×2} and a bias, initialised at zero (the "initialisation" of the proof);
* objective (the project's "energy" objective, :class:`ctbench.training.objectives.Objective`):
  λ_clf·CE(all data) + λ_div·mean(E(x⁺) − E(x')) + λ_reg·mean(E(x⁺)² + E(x')²), E(x) = −M_θ(x)[y⁺], with the
  paper's final λ_div = 0.5 and λ_reg = 0.01;
* counterfactuals: every step, ``n_cf`` targets y⁺ ~ p(y) (uniform; the other class supplies the factual, as in
  the paper's training) and factuals moved towards y⁺ by the project's Generic (Wachter) search (Δ = −η·∇ₓCE,
  η = 0.5, rows retire once p(y⁺|x') ≥ τ = 0.75, at most T = 30 steps), the immutable feature masked in *both* CT
  arms (it is immutable); x⁺ fresh draws from y⁺;
* protection: x⁺[imm] := x'[imm] (:meth:`ctbench.constraints.Constraints.protect_positive` for a ``none``
  feature), the only difference between the two CT arms;
* optimiser: full-batch gradient descent, lr 0.1, 400 steps (the proof argues with the sign of the gradient).

The sensitivity of the classifier to feature d is the coefficient of the log-odds of y⁺ against y⁻,
w_d = Θ[y⁺, d] − Θ[y⁻, d], and the relative sensitivity of the immutable feature is |w_imm| / |w_mut|.

Everything is one batched torch program over (setting, seed, arm), float64, with closed-form gradients (checked
against autograd and the project's objective in the tests); a row's result does not depend on the other rows of
the batch. ``main(out_dir)`` runs the default grid, the violation study and a few training variants and writes
``prop31_summary.csv``, ``prop31_violations.csv``, ``prop31_paths.png`` and ``prop31_sensitivity.png`` (with PDF
twins), each atomically.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from ..io import atomic_write_text, save_figure

IMM, MUT = 0, 1          # feature indices
NEG, POS = 0, 1          # class indices: non-target y⁻, target y⁺
FEATURES = ("immutable", "mutable")
_DTYPE = torch.float64
_LOGIT_CLAMP = 40.0      # σ(±40) is 1 within 4e-18; clamping keeps exp() out of the (slow) subnormal range


# -- simulation ----------------------------------------------------------------------------------------------------
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


# -- training ------------------------------------------------------------------------------------------------------
TARGETS = ("random", "fixed")


@dataclass(frozen=True)
class TrainConfig:
    """Contrastive-divergence training of the linear softmax classifier (defaults: the paper's final λs).

    ``targets``: ``random`` draws y⁺ ~ p(y) (uniform here) for every counterfactual, with the factual from the other
    class, as the paper's training and the proof ("y⁺ ~ p(y)") do; ``fixed`` always targets y⁺ = 1 from y⁻ = 0.
    ``replace_immature``: the reference implementation's rule that a counterfactual which has not reached τ is
    replaced by x⁺ (so it contributes nothing to the divergence); off by default (Eq. 3 uses x'_T).
    """

    n_iter: int = 400          # full-batch gradient steps
    lr: float = 0.1            # ≥ 0.5 makes the counterfactual feedback on w_mut oscillate (period 2)
    lambda_clf: float = 1.0
    lambda_div: float = 0.5
    lambda_reg: float = 0.01   # energy ridge (0 = pure CE + contrastive divergence)
    n_cf: int = 32             # counterfactuals (and x⁺) per step
    step_size: float = 0.5     # η of the Generic search
    max_iter: int = 30         # T (0: x' is the factual itself, the proof's "at initialisation")
    tau: float = 0.75          # threshold convergence p(y⁺|x') ≥ τ
    lambda_cost: float = 0.0   # λ_cst of the Generic search (L1 cost)
    targets: str = "random"
    replace_immature: bool = False
    record_every: int = 10     # coefficient path resolution

    def __post_init__(self):
        if self.n_iter < 1 or self.n_cf < 1 or self.record_every < 1 or self.max_iter < 0:
            raise ValueError("TrainConfig: n_iter, n_cf, record_every must be >= 1 and max_iter >= 0")
        if self.lr <= 0 or self.step_size <= 0 or not 0.0 < self.tau <= 1.0:
            raise ValueError("TrainConfig: lr and step_size must be > 0 and tau in (0, 1]")
        if self.targets not in TARGETS:
            raise ValueError(f"TrainConfig.targets: {self.targets!r} is not one of {TARGETS}")


def _draws(n: int, seed: int, cfg: TrainConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row indices (into X, y⁻ rows first) of factuals and x⁺, and the targets, for every step: (n_iter, n_cf) each.

    Shared by both arms of a seed (paired comparison); the stream depends on the seed only.
    """
    rng = np.random.default_rng([int(seed), 1])
    shape = (cfg.n_iter, cfg.n_cf)
    i_f, i_p, t = rng.integers(0, n, shape), rng.integers(0, n, shape), rng.integers(0, 2, shape)
    if cfg.targets == "fixed":
        t = np.full(shape, POS)
    return (1 - t) * n + i_f, t * n + i_p, t


def search(w: torch.Tensor, c: torch.Tensor, x0: torch.Tensor, cfg: TrainConfig,
           target: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Generic gradient search from factuals ``x0`` (B, m, 2) towards ``target`` (B, m; default y⁺ = 1).

    For a 2-class linear softmax, p(t|x) = σ(s) with s = ±(w·x + c), w = Θ[1] − Θ[0], c = b[1] − b[0] and the sign
    + for t = 1, and ∇ₓCE(f(x), t) = −(1 − p)·(±w). The step is Δ = η·((1 − p)·(±w) − λ_cst·sign(x − x₀)), zero on
    the immutable feature, so only the mutable coordinate moves and s changes by Δ_mut·(±w_mut): the search is a
    scalar recurrence per row. A row retires once p ≥ τ; rows never interact. Returns x' and whether it is mature.
    """
    sign = torch.ones(x0.shape[:2], dtype=x0.dtype) if target is None else 2.0 * target.to(x0.dtype) - 1.0
    w_mut = sign * w[:, None, MUT]                                                    # (B, m)
    s0 = sign * (x0[..., IMM] * w[:, None, IMM] + x0[..., MUT] * w[:, None, MUT] + c[:, None])
    s = s0
    if cfg.lambda_cost:
        moved = torch.zeros_like(s)                                                   # x'_mut − x_mut
        for _ in range(cfg.max_iter):
            p = torch.sigmoid(s.clamp(-_LOGIT_CLAMP, _LOGIT_CLAMP))
            delta = cfg.step_size * ((1.0 - p) * w_mut - cfg.lambda_cost * torch.sign(moved)) * (p < cfg.tau)
            moved = moved + delta
            s = s + delta * w_mut
    else:
        # Without the cost term the step along s is η·w_mut²·(1 − p): iterate u = −s alone (1 − p = σ(u)) and
        # recover x'_mut at the end.
        a = cfg.step_size * w[:, None, MUT].square()                                  # (B, 1)
        u = -s0
        for k in range(cfg.max_iter):
            q = torch.sigmoid(u.clamp(-_LOGIT_CLAMP, _LOGIT_CLAMP))                   # 1 − p
            retired = q <= 1.0 - cfg.tau
            if k % 5 == 0 and bool(retired.all()):
                break
            u = u - (a * q).masked_fill_(retired, 0.0)
        s = -u
        safe = torch.where(w_mut == 0, torch.ones_like(w_mut), w_mut)
        moved = torch.where(w_mut == 0, torch.zeros_like(s), (s - s0) / safe)
    x = x0.clone()
    x[..., MUT] += moved
    return x, torch.sigmoid(s.clamp(-_LOGIT_CLAMP, _LOGIT_CLAMP)) >= cfg.tau


def losses(W: torch.Tensor, b: torch.Tensor, X: torch.Tensor, y: torch.Tensor, x_cf: torch.Tensor,
           x_plus: torch.Tensor, target: torch.Tensor, cfg: TrainConfig) -> tuple[torch.Tensor, dict]:
    """Per-row objective (B,) and its parts: the formula of the project's "energy" objective.

    W (B, K, D), b (B, K), X (B, N, D), y (N,), x_cf and x_plus (B, m, D), target (B, m). Energies
    E(x) = −M_θ(x)[y⁺]: div = mean(E(x⁺) − E(x')), ridge = mean(E(x⁺)² + E(x')²). (Autograd reference for
    :func:`gradients`, which training uses.)
    """
    B, N, _ = X.shape
    logits = torch.einsum("bnd,bkd->bnk", X, W) + b[:, None, :]
    clf = F.cross_entropy(logits.reshape(B * N, -1), y.repeat(B), reduction="none").view(B, N).mean(1)
    t = target[..., None]
    f_cf = (torch.einsum("bmd,bkd->bmk", x_cf, W) + b[:, None, :]).gather(-1, t).squeeze(-1)
    f_plus = (torch.einsum("bmd,bkd->bmk", x_plus, W) + b[:, None, :]).gather(-1, t).squeeze(-1)
    parts = {"clf": clf, "div": (f_cf - f_plus).mean(1), "reg": (f_plus.square() + f_cf.square()).mean(1)}
    total = cfg.lambda_clf * parts["clf"] + cfg.lambda_div * parts["div"] + cfg.lambda_reg * parts["reg"]
    return total, parts


def gradients(W: torch.Tensor, b: torch.Tensor, X: torch.Tensor, y: torch.Tensor, x_cf: torch.Tensor,
              x_plus: torch.Tensor, target: torch.Tensor, cfg: TrainConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """Closed-form gradients of :func:`losses` (2 classes, 2 features) w.r.t. W (B, 2, 2) and b (B, 2).

    ``X`` is given feature-major, (2, B, N), ``y`` float (N,). CE: with s = w·x + c, ∂/∂θ[1] = mean((σ(s) − y)·x)
    = −∂/∂θ[0]. The energy terms touch only the row of each counterfactual's target t: div ∂/∂θ[t] = (x' − x⁺)/m
    (nothing for the bias; the proof's Eq. 11), ridge ∂/∂θ[t] = 2(f(x⁺)x⁺ + f(x')x')/m and
    ∂/∂b[t] = 2(f(x⁺) + f(x'))/m.
    """
    w, c = W[:, POS] - W[:, NEG], b[:, POS] - b[:, NEG]
    s = torch.addcmul(c[:, None], X[IMM], w[:, IMM, None]).addcmul_(X[MUT], w[:, MUT, None])
    r = s.clamp_(-_LOGIT_CLAMP, _LOGIT_CLAMP).sigmoid_().sub_(y)                    # σ(s) − y, (B, N)
    N = X.shape[2]
    g_ce = torch.stack([torch.einsum("bn,bn->b", r, X[IMM]), torch.einsum("bn,bn->b", r, X[MUT])], 1) / N
    gb_ce = r.sum(1) / N
    gW = cfg.lambda_clf * torch.stack([-g_ce, g_ce], 1)  # rows [class 0, class 1]
    gb = cfg.lambda_clf * torch.stack([-gb_ce, gb_ce], 1)
    if not (cfg.lambda_div or cfg.lambda_reg):
        return gW, gb
    m = x_cf.shape[1]
    onehot = F.one_hot(target, 2).to(W.dtype)                       # (B, m, 2)
    per_row = cfg.lambda_div * (x_cf - x_plus)                      # (B, m, 2)
    if cfg.lambda_reg:
        Wt = torch.where(target[..., None] == POS, W[:, None, POS], W[:, None, NEG])   # θ[t] per row (B, m, 2)
        bt = torch.where(target == POS, b[:, None, POS], b[:, None, NEG])
        f_cf = x_cf[..., IMM] * Wt[..., IMM] + x_cf[..., MUT] * Wt[..., MUT] + bt
        f_plus = x_plus[..., IMM] * Wt[..., IMM] + x_plus[..., MUT] * Wt[..., MUT] + bt
        per_row = per_row + 2.0 * cfg.lambda_reg * (f_plus[..., None] * x_plus + f_cf[..., None] * x_cf)
        gb = gb + torch.bmm((2.0 * cfg.lambda_reg * (f_plus + f_cf))[:, None, :], onehot)[:, 0] / m
    gW = gW + torch.bmm(onehot.transpose(1, 2), per_row) / m
    return gW, gb


def _fit_batch(X: torch.Tensor, idx_f: torch.Tensor, idx_p: torch.Tensor, target: torch.Tensor,
               protect: torch.Tensor, cfg: TrainConfig) -> dict[str, torch.Tensor]:
    """Train B independent classifiers by full-batch gradient descent from Θ = 0, b = 0.

    X (B, 2n, 2) with the y⁻ rows first; idx_f, idx_p, target (n_iter, B, m) from :func:`_draws`; protect (B,).
    """
    B, N, D = X.shape
    y = torch.repeat_interleave(torch.tensor([NEG, POS]), N // 2)
    yf = y.to(_DTYPE)
    Xf = X.permute(2, 0, 1).contiguous()  # (2, B, N), feature-major for the CE pass
    W = torch.zeros(B, 2, D, dtype=_DTYPE)
    b = torch.zeros(B, 2, dtype=_DTYPE)
    imm = torch.zeros(D, dtype=torch.bool)
    imm[IMM] = True
    protect_mask = protect[:, None, None] & imm  # (B, 1, D)
    X_rows = X.reshape(B * N, D)
    offset = (torch.arange(B) * N)[None, :, None]
    idx_f, idx_p = (idx_f + offset).contiguous(), (idx_p + offset).contiguous()  # rows of X_rows
    iters, path = [0], [torch.zeros(B, D, dtype=_DTYPE)]
    for it in range(cfg.n_iter):
        t = target[it]
        x0 = X_rows.index_select(0, idx_f[it].view(-1)).view(B, -1, D)
        x_cf, mature = search(W[:, POS] - W[:, NEG], b[:, POS] - b[:, NEG], x0, cfg, t)
        x_plus = X_rows.index_select(0, idx_p[it].view(-1)).view(B, -1, D)
        if cfg.replace_immature:
            x_cf = torch.where(mature[..., None], x_cf, x_plus)
        x_plus = torch.where(protect_mask, x_cf, x_plus)  # protection: x⁺[imm] := x'[imm]
        gW, gb = gradients(W, b, Xf, yf, x_cf, x_plus, t, cfg)
        W -= cfg.lr * gW
        b -= cfg.lr * gb
        if (it + 1) % cfg.record_every == 0 or it + 1 == cfg.n_iter:
            iters.append(it + 1)
            path.append(W[:, POS] - W[:, NEG])
    s = torch.einsum("bnd,bd->bn", X, W[:, POS] - W[:, NEG]) + (b[:, POS] - b[:, NEG])[:, None]
    acc = ((s > 0).long() == y).to(_DTYPE).mean(1)
    return {"W": W, "b": b, "path": torch.stack(path, 1), "iters": torch.tensor(iters), "accuracy": acc}


def relative_sensitivity(w: np.ndarray | torch.Tensor) -> np.ndarray:
    """|w_imm| / |w_mut| for coefficient vectors w (..., D) of the log-odds of y⁺ against y⁻."""
    w = np.asarray(w, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(w[..., IMM]) / np.abs(w[..., MUT])


@dataclass
class FitResult:
    W: np.ndarray         # (2, D) class weights
    b: np.ndarray         # (2,)
    path: np.ndarray      # (R, D) w = Θ[y⁺] − Θ[y⁻] at ``iters``
    iters: np.ndarray     # (R,)
    accuracy: float
    protect: bool

    @property
    def w(self) -> np.ndarray:
        return self.W[POS] - self.W[NEG]

    @property
    def rel_sens(self) -> float:
        return float(relative_sensitivity(self.w))


def fit(data: SimData, protect: bool, cfg: TrainConfig | None = None) -> FitResult:
    """Train the linear classifier on one data set, with or without protecting the immutable feature."""
    cfg = cfg or TrainConfig()
    out = _fit_many([data], [bool(protect)], cfg)
    return FitResult(out["W"][0].numpy(), out["b"][0].numpy(), out["path"][0].numpy(), out["iters"].numpy(),
                     float(out["accuracy"][0]), bool(protect))


def baseline_config(cfg: TrainConfig) -> TrainConfig:
    """The conventionally trained reference: the same steps with the energy terms (and the search) switched off."""
    return replace(cfg, lambda_div=0.0, lambda_reg=0.0, max_iter=0)


def _fit_many(datas: Sequence[SimData], protect: Sequence[bool], cfg: TrainConfig) -> dict[str, torch.Tensor]:
    n = datas[0].n
    if any(d.n != n for d in datas):
        raise ValueError("_fit_many: all data sets of one batch need the same n")
    X = torch.as_tensor(np.stack([d.X for d in datas]), dtype=_DTYPE)
    draws = [_draws(n, d.seed, cfg) for d in datas]
    i_f, i_p, t = (torch.as_tensor(np.stack([dr[k] for dr in draws], axis=1)) for k in range(3))
    return _fit_batch(X, i_f, i_p, t, torch.as_tensor(list(protect), dtype=torch.bool), cfg)


def _fit_arms(datas: Sequence[SimData], cfg: TrainConfig, arms: Sequence[str] = ("u", "p", "bl")) -> list[dict]:
    """Fit every data set in each arm (``u`` unprotected, ``p`` protected, ``bl`` baseline); one output per arm."""
    out = {}
    ct = [a for a in arms if a in ("u", "p")]
    if ct:
        res = _fit_many([d for _ in ct for d in datas], [a == "p" for a in ct for _ in datas], cfg)
        S = len(datas)
        for j, a in enumerate(ct):
            out[a] = {k: (v[j * S:(j + 1) * S] if k != "iters" else v) for k, v in res.items()}
    if "bl" in arms:
        out["bl"] = _fit_many(datas, [False] * len(datas), baseline_config(cfg))
    return [out[a] for a in arms]


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


ARMS = ("u", "p", "bl")  # unprotected CT, protected CT, conventionally trained baseline (CE only)


@contextlib.contextmanager
def torch_threads(n: int | None):
    """Temporarily set torch's intra-op threads (``None``: leave them). The tensors here are small (~10⁴–10⁶
    elements per op), where extra threads cost more than they bring, especially on a shared machine."""
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_grid(grid: Iterable[Setting], seeds: Iterable[int], cfg: TrainConfig | None = None,
             checkpoints: Sequence[int] | None = None, baseline: bool = True,
             max_elements: int = 4_000_000, threads: int | None = 1) -> pd.DataFrame:
    """Fit both arms (and the CE-only baseline) for every (setting, seed); one row each with the sensitivities.

    Columns: the setting's parameters, ``seed``, ``iteration``; per arm a ∈ {u: unprotected, p: protected,
    bl: baseline} ``w_imm_a``, ``w_mut_a`` (w = Θ[y⁺] − Θ[y⁻]) and ``rs_a`` = |w_imm| / |w_mut|; ``ratio`` =
    rs_p / rs_u, ``lowered`` = rs_p < rs_u (the proposition's claim), ``acc_u``, ``acc_p``, ``acc_bl`` (training
    accuracy, final iteration only) and ``assumptions_hold`` (population check of the setting). With
    ``checkpoints`` (multiples of ``cfg.record_every``), one row per (setting, seed, checkpoint) read off the paths.
    All arms of a seed share data, initialisation and random draws. ``threads``: see :func:`torch_threads`.
    """
    with torch_threads(threads):
        return _run_grid(list(grid), [int(s) for s in seeds], cfg or TrainConfig(), checkpoints, baseline,
                         max_elements)


def _run_grid(grid: list[Setting], seeds: list[int], cfg: TrainConfig, checkpoints: Sequence[int] | None,
              baseline: bool, max_elements: int) -> pd.DataFrame:
    at = sorted(set(checkpoints or []) | {cfg.n_iter})
    arms = ARMS if baseline else ARMS[:2]
    jobs = [(i, s, seed) for i, s in enumerate(grid) for seed in seeds]
    rows: list[dict] = []
    for n in sorted({s.n for s in grid}):
        group = [j for j in jobs if j[1].n == n]
        chunk = max(1, max_elements // (len(arms) * 2 * n * 2))
        for start in range(0, len(group), chunk):
            part = group[start:start + chunk]
            datas = [simulate(s, seed) for _, s, seed in part]
            outs = _fit_arms(datas, cfg, arms)
            iters = outs[0]["iters"].tolist()
            missing = [a for a in at if a not in iters]
            if missing:
                raise ValueError(f"run_grid: checkpoints {missing} were not recorded (record_every="
                                 f"{cfg.record_every}, n_iter={cfg.n_iter})")
            path = [o["path"].numpy() for o in outs]
            acc = [o["accuracy"].numpy() for o in outs]
            for k, (i, s, seed) in enumerate(part):
                base = {"setting_id": i, **s.row(), "seed": seed,
                        "assumptions_hold": all(check_assumptions(s).values())}
                for step in at:
                    r = iters.index(step)
                    row = {**base, "iteration": step}
                    for j, arm in enumerate(arms):
                        w = path[j][k, r]
                        row |= {f"w_imm_{arm}": w[IMM], f"w_mut_{arm}": w[MUT],
                                f"rs_{arm}": float(relative_sensitivity(w))}
                    row["ratio"] = row["rs_p"] / row["rs_u"] if row["rs_u"] > 0 else np.nan
                    row["lowered"] = bool(row["rs_p"] < row["rs_u"])
                    for j, arm in enumerate(arms):
                        row[f"acc_{arm}"] = float(acc[j][k]) if step == cfg.n_iter else np.nan
                    rows.append(row)
    df = pd.DataFrame(rows)
    return df.sort_values(["iteration", "setting_id", "seed"], kind="stable").reset_index(drop=True)


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion k/n."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"wilson_interval: need 0 <= k <= n and n > 0, got k={k}, n={n}")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def summary(df: pd.DataFrame, by: str | Sequence[str] | None = None, level: float = 0.95) -> pd.DataFrame:
    """Share of runs where protection lowered the relative sensitivity, with a Wilson interval, per group.

    Also the median ratio rs_p / rs_u, the median relative sensitivity and |w_imm|, |w_mut| of every arm present
    and the mean training accuracies. Give one ``iteration`` per group (filter, or include it in ``by``).
    """
    keys = [by] if isinstance(by, str) else list(by or [])
    groups = df.groupby(keys, sort=True) if keys else [((), df)]
    arms = [a for a in ARMS if f"rs_{a}" in df.columns]
    rows = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        k, n = int(g["lowered"].sum()), len(g)
        lo, hi = wilson_interval(k, n, level)
        row = {**dict(zip(keys, key, strict=True)), "runs": n, "lowered": k, "share": k / n, "ci_low": lo,
               "ci_high": hi, "median_ratio": float(g["ratio"].median())}
        row |= {f"median_rs_{a}": float(g[f"rs_{a}"].median()) for a in arms}
        for feat in ("imm", "mut"):
            row |= {f"median_abs_w_{feat}_{a}": float(g[f"w_{feat}_{a}"].abs().median()) for a in arms}
        row |= {f"acc_{a}": float(g[f"acc_{a}"].mean()) for a in arms}
        rows.append(row)
    return pd.DataFrame(rows)


# -- plots ---------------------------------------------------------------------------------------------------------
_ARM_NAMES = {"u": "unprotected CT", "p": "protected CT", "bl": "baseline (CE only)"}
_COLOURS = {"u": "tab:red", "p": "tab:blue", "bl": "0.45"}


def coefficient_paths(setting: Setting, seeds: Iterable[int], cfg: TrainConfig | None = None) -> dict:
    """Coefficient paths w(t) per arm: ``{"iters": (R,), "u"|"p"|"bl": (S, R, D), "setting": setting}``."""
    cfg = cfg or TrainConfig()
    outs = _fit_arms([simulate(setting, s) for s in seeds], cfg, ARMS)
    return {"iters": outs[0]["iters"].numpy(), "setting": setting,
            **{a: o["path"].numpy() for a, o in zip(ARMS, outs, strict=True)}}


def plot_paths(paths: dict, path: str | Path) -> list[Path]:
    """Three panels over training: w_imm, w_mut and |w_imm|/|w_mut|; thin lines per seed, thick the median."""
    from matplotlib.figure import Figure  # no pyplot: no global backend state

    it = paths["iters"]
    fig = Figure(figsize=(12, 3.6))
    axes = fig.subplots(1, 3)
    for arm in ("bl", "u", "p"):
        P = paths[arm]
        series = ((it, P[..., IMM]), (it, P[..., MUT]), (it[1:], relative_sensitivity(P[:, 1:])))  # w(0) = 0
        for ax, (x, v) in zip(axes, series, strict=True):
            ax.plot(x, v.T, color=_COLOURS[arm], alpha=0.12, lw=0.6)
            ax.plot(x, np.median(v, 0), color=_COLOURS[arm], lw=2, label=_ARM_NAMES[arm])
    titles = (r"$w_{\mathrm{imm}} = \theta_{y^+,\mathrm{imm}} - \theta_{y^-,\mathrm{imm}}$",
              r"$w_{\mathrm{mut}} = \theta_{y^+,\mathrm{mut}} - \theta_{y^-,\mathrm{mut}}$",
              r"relative sensitivity $|w_{\mathrm{imm}}|\,/\,|w_{\mathrm{mut}}|$")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("gradient step")
        ax.axhline(0, color="grey", lw=0.5)
    axes[2].set_yscale("log")
    rs = np.concatenate([relative_sensitivity(paths[a][:, 1:]).ravel() for a in ARMS])
    rs = rs[np.isfinite(rs) & (rs > 0)]
    if rs.size:
        axes[2].set_ylim(np.quantile(rs, 0.01) / 2, np.quantile(rs, 0.99) * 2)
    axes[0].legend(frameon=False, fontsize=8)
    r = paths["setting"].row()
    fig.suptitle(f"Coefficient paths: gap_imm = {r['gap_imm']:g}, gap_mut = {r['gap_mut']:g}, "
                 f"σ = ({r['sigma_imm']:g}, {r['sigma_mut']:g}), n = {r['n']} per class, "
                 f"{paths['p'].shape[0]} seeds (medians bold)", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_sensitivity(df: pd.DataFrame, path: str | Path, violations: pd.DataFrame | None = None) -> list[Path]:
    """Left: rs_p against rs_u per run (log–log, diagonal = no effect); right: log(rs_p/rs_u) by setting kind."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2))
    a, b = fig.subplots(1, 2)
    for n, g in df.groupby("n"):
        a.scatter(g["rs_u"], g["rs_p"], s=5, alpha=0.4, label=f"n = {n} per class")
    finite = df[["rs_u", "rs_p"]].replace([np.inf, 0], np.nan).stack()
    if len(finite):
        lo, hi = finite.min(), finite.max()
        a.plot([lo, hi], [lo, hi], color="grey", lw=0.8)
    a.set(xscale="log", yscale="log", xlabel=r"$|w_{imm}|/|w_{mut}|$, unprotected",
          ylabel=r"$|w_{imm}|/|w_{mut}|$, protected",
          title="Assumptions hold (default grid); below the diagonal: lowered")
    a.title.set_fontsize(9)
    a.legend(frameon=False, fontsize=8)
    groups = [("default grid", df)]
    if violations is not None:
        groups += [(k, g) for k, g in violations.groupby("kind", sort=False)]
    data = [np.log(g["ratio"].replace([np.inf, 0], np.nan).dropna().to_numpy()) for _, g in groups]
    b.boxplot(data, orientation="horizontal", showfliers=False)
    b.set_yticks(range(1, len(groups) + 1), [k for k, _ in groups], fontsize=8)
    b.axvline(0, color="grey", lw=0.8)
    b.set_xlabel("log(rs_protected / rs_unprotected)   (< 0: protection lowers it)", fontsize=9)
    b.set_title("Per-run effect of protection, by setting kind", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path)


# -- entry point ---------------------------------------------------------------------------------------------------
CHECKPOINTS = (50, 100, 200)


def variants(long_iter: int = 800) -> dict[str, TrainConfig]:
    """Training variants for the sensitivity analysis (each changes one thing from the default)."""
    return {
        "default": TrainConfig(),
        "no_energy_ridge": TrainConfig(lambda_reg=0.0),
        "x_prime_is_factual_T0": TrainConfig(max_iter=0),
        "tau_0.5": TrainConfig(tau=0.5),
        "replace_immature": TrainConfig(replace_immature=True),
        f"steps_{long_iter}": TrainConfig(n_iter=long_iter),
        "fixed_target": TrainConfig(targets="fixed"),
        f"fixed_target_steps_{long_iter}": TrainConfig(targets="fixed", n_iter=long_iter),
    }


def _summary_table(df: pd.DataFrame, variant_rows: pd.DataFrame | None = None) -> pd.DataFrame:
    final = df[df["iteration"] == df["iteration"].max()]
    parts = [summary(final).assign(by="all", group="all")]
    for col in ("n", "gap_imm", "gap_mut"):
        s = summary(final, col)
        parts.append(s.assign(by=col, group=s.pop(col).map(lambda v: f"{v:g}")))
    sig = final["sigma_imm"].map("{:g}".format) + "/" + final["sigma_mut"].map("{:g}".format)
    s = summary(final.assign(sigma=sig), "sigma")
    parts.append(s.assign(by="sigma_imm/sigma_mut", group=s.pop("sigma")))
    s = summary(df, "iteration")
    parts.append(s.assign(by="iteration", group=s.pop("iteration").map(str)))
    if variant_rows is not None:
        parts.append(variant_rows)
    out = pd.concat(parts, ignore_index=True)
    return out[["by", "group"] + [c for c in out.columns if c not in ("by", "group")]]


def main(out_dir: str | Path, quick: bool = False, cfg: TrainConfig | None = None,
         seeds: Sequence[int] | None = None, threads: int | None = 1) -> dict[str, Path]:
    """Run the default grid, the violation study and the training variants; write the CSVs and both figures.

    ``prop31_summary.csv``: share lowered with Wilson 95% interval on the default grid, overall (``by = all``), per
    n, gap and σ, per training checkpoint (``by = iteration``) and per training variant on the clean gap grid
    (``by = variant``). ``prop31_violations.csv``: the same per violated assumption (``kind``). ``threads``: see
    :func:`torch_threads`.
    """
    with torch_threads(threads):
        return _main(Path(out_dir), quick, cfg or TrainConfig(), seeds)


def _main(out_dir: Path, quick: bool, cfg: TrainConfig, seeds: Sequence[int] | None) -> dict[str, Path]:
    out_dir = Path(out_dir)
    seeds = list(seeds) if seeds is not None else list(range(5 if quick else 20))
    t0 = time.perf_counter()
    df = run_grid(default_grid(quick), seeds, cfg, checkpoints=[c for c in CHECKPOINTS if c < cfg.n_iter])
    viol = run_grid(violation_grid(quick), seeds, cfg)
    clean = [s for s in violation_grid(quick) if s.kind == "clean"]
    vrows = []
    for name, vcfg in variants(200 if quick else 800).items():
        s = summary(run_grid(clean, seeds, vcfg, baseline=False))
        vrows.append(s.assign(by="variant", group=name))
    vsum = summary(viol, "kind")
    vsum["kind"] = pd.Categorical(vsum["kind"], list(VIOLATIONS), ordered=True)
    vsum = vsum.sort_values("kind").reset_index(drop=True)
    flags = {k: check_assumptions(next(s for s in violation_grid(quick) if s.kind == k)) for k in VIOLATIONS}
    vsum.insert(1, "broken_assumptions", vsum["kind"].map(
        lambda k: ";".join(a for a, ok in flags[k].items() if not ok) or "none").astype(str))
    table = _summary_table(df, pd.concat(vrows, ignore_index=True))
    files = {
        "summary": atomic_write_text(out_dir / "prop31_summary.csv", table.to_csv(index=False, float_format="%.6g")),
        "violations": atomic_write_text(out_dir / "prop31_violations.csv",
                                        vsum.to_csv(index=False, float_format="%.6g")),
    }
    rep = Setting.from_gaps(1.0, 1.0, n=200)
    files["paths"] = plot_paths(coefficient_paths(rep, seeds[:10], cfg), out_dir / "prop31_paths.png")[0]
    final = df[df["iteration"] == cfg.n_iter]
    files["sensitivity"] = plot_sensitivity(final, out_dir / "prop31_sensitivity.png", viol)[0]
    print(f"prop31: {len(final)} runs (default grid) + {len(viol)} (violations) + variants in "
          f"{time.perf_counter() - t0:.1f}s; config {asdict(cfg)}")
    return files


def _cli(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Numerical check of Proposition 3.1 (protecting immutable features)")
    ap.add_argument("out_dir", nargs="?", default="results/report/prop31")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    for name, path in main(args.out_dir, quick=args.quick).items():
        print(f"{name}: {path}")


if __name__ == "__main__":
    _cli()
