"""The closed-form arm of the Proposition 3.1 check: the two-class, two-feature linear softmax classifier trained
by full-batch gradient descent with closed-form gradients of the project's "energy" objective.

* model: Θ ∈ R^{2×2} and a bias, initialised at zero (the "initialisation" of the proof);
* objective (:class:`ctbench.training.objectives.Objective`, ``energy``): λ_clf·CE(all data) + λ_div·mean(E(x⁺) −
  E(x')) + λ_reg·mean(E(x⁺)² + E(x')²), E(x) = −M_θ(x)[y⁺], with the paper's final λ_div = 0.5, λ_reg = 0.01;
* counterfactuals: every step, ``n_cf`` targets y⁺ ~ p(y) (the other class supplies the factual) moved by the
  project's Generic search (Δ = −η·∇ₓCE, η = 0.5, retired at p(y⁺|x') ≥ τ = 0.75, at most T = 30 steps), the
  immutable feature masked in *both* CT arms; x⁺ fresh draws from y⁺;
* protection: x⁺[imm] := x'[imm] (what :meth:`ctbench.constraints.Constraints.protect_positive` does for a
  ``none`` feature), the only difference between the two CT arms.

It follows the proof's own setting (zero start, full-batch steps, a search that always runs to its end) and is
exact and cheap; :mod:`.trainer_arm` runs the same question through ctbench's own trainer. Gradients and search
are checked against autograd, ``Objective`` and ``GenericGenerator`` in the tests; a row's result does not depend
on the other rows of the batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from .simulation import IMM, MUT, NEG, POS, Setting, SimData, simulate

_DTYPE = torch.float64
_LOGIT_CLAMP = 40.0      # σ(±40) is 1 within 4e-18; clamping keeps exp() out of the (slow) subnormal range
ARMS = ("u", "p", "bl")  # unprotected CT, protected CT, conventionally trained baseline (CE only)


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


def fit_arms(datas: Sequence[SimData], cfg: TrainConfig, arms: Sequence[str] = ("u", "p", "bl")) -> list[dict]:
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



def coefficient_paths(setting: Setting, seeds: Iterable[int], cfg: TrainConfig | None = None) -> dict:
    """Coefficient paths w(t) per arm: ``{"iters": (R,), "u"|"p"|"bl": (S, R, D), "setting": setting}``."""
    cfg = cfg or TrainConfig()
    outs = fit_arms([simulate(setting, s) for s in seeds], cfg, ARMS)
    return {"iters": outs[0]["iters"].numpy(), "setting": setting,
            **{a: o["path"].numpy() for a, o in zip(ARMS, outs, strict=True)}}

