"""The trainer arm of the Proposition 3.1 check: the same question through ctbench's own training code.

Every (setting, seed) is trained three times by :func:`ctbench.training.population.train_population`, the code
path of the paper runs (mini-batch Adam, one batched counterfactual search per epoch, targets among the classes
other than the predicted one, immature counterfactuals replaced by x⁺, ``Constraints.protect_positive``):

* ``p``, protected CT: the immutable features masked in the search and protected (x⁺[d] := x'[d]), exactly what a
  paper run with ``mutability`` does;
* ``u``, unprotected CT: the same search mask, but ``protect_positive`` switched off (:class:`NoProtection`), the
  only difference;
* ``bl``, the baseline: the ``vanilla`` objective (cross-entropy only).

All three start from the same weights (a :class:`~ctbench.models.LinearModel` seeded by the run's seed) and use the
same random stream. The data sets of one (K, D) share one population (each member trains on its own rows).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ...constraints import Constraints
from ...generators.base import Convergence
from ...generators.ecco import ECCoGenerator
from ...generators.generic import GenericGenerator
from ...models import LinearModel
from ...training import Objective
from ...training.population import Member, train_population
from ...training.trainer import TrainParams
from .general import GeneralSetting, relative_sensitivity, sensitivities, simulate_general


class NoProtection(Constraints):
    """The project's constraints with x⁺ left alone: the search still masks the immutable features, only
    ``protect_positive`` is switched off (the unprotected arm)."""

    def protect_positive(self, x_plus: torch.Tensor, x_cf: torch.Tensor) -> torch.Tensor:
        return x_plus


@dataclass(frozen=True)
class TrainerArmConfig:
    """The paper's final CT recipe (appendix "Final hyperparameters": ``full`` objective, λ_div 0.5, λ_reg 0.01,
    λ_adv 0.25, ECCo, τ = 0.5, T = 30, batch 30) on a linear model; the learning rate is 10× the paper's and the
    epochs fewer so that the small models reach their optimum in a few hundred steps (cheap enough for every
    profile)."""

    epochs: int = 40
    batch_size: int = 30
    lr: float = 0.01
    objective: str = "full"
    lambda_div: float = 0.5
    lambda_reg: float = 0.01
    lambda_adv: float = 0.25
    generator: str = "ecco"
    tau: float = 0.5
    max_iter: int = 30

    def __post_init__(self):
        if self.generator not in ("ecco", "generic"):
            raise ValueError(f"TrainerArmConfig.generator: {self.generator!r} is not 'ecco' or 'generic'")
        if self.epochs < 1 or self.lr <= 0:
            raise ValueError("TrainerArmConfig: epochs must be >= 1 and lr > 0")

    def make_generator(self):
        if self.generator == "ecco":
            return ECCoGenerator(lambda_cost=0.001, lambda_energy=5.0)
        return GenericGenerator(step_size=0.1)


def default_settings(quick: bool = False) -> list[GeneralSetting]:
    """The checks (the proviso holds: K ∈ {2, 3} × D ∈ {2, 4}) and the negative controls (it fails: the other
    feature not discriminative; the other discriminative feature immutable, beside a mutable noise feature)."""
    n = 100 if quick else 200
    return [
        GeneralSetting("K2_D2", 2, 2, n=n),
        GeneralSetting("K3_D2", 3, 2, n=n),
        GeneralSetting("K2_D4", 2, 4, n_disc_mutable=2, n=n),
        GeneralSetting("K3_D4", 3, 4, n_disc_mutable=2, n=n),
        GeneralSetting("nc_K2_D2_mutable_not_discriminative", 2, 2, gap_mut=0.0, n=n),
        GeneralSetting("nc_K2_D3_discriminative_immutable", 2, 3, n_disc_mutable=0, n_disc_immutable=1, n=n),
    ]


def _member(setting: GeneralSetting, seed: int, arm: str, rows: np.ndarray, cfg: TrainerArmConfig) -> Member:
    model = LinearModel(setting.n_features, setting.n_classes, generator=torch.Generator().manual_seed(int(seed)))
    params = TrainParams(epochs=cfg.epochs, batch_size=cfg.batch_size, nce=None, lr=cfg.lr, seed=int(seed),
                         majority_margin=None)
    if arm == "bl":
        return Member(model, Objective("vanilla"), params, None, name=f"{setting.name}/{seed}/bl", rows=rows)
    obj = Objective(cfg.objective, lambda_div=cfg.lambda_div, lambda_reg=cfg.lambda_reg, lambda_adv=cfg.lambda_adv)
    return Member(model, obj, params, cfg.make_generator(), Convergence("threshold", cfg.tau, cfg.max_iter),
                  name=f"{setting.name}/{seed}/{arm}", rows=rows)


def run_trainer_arm(settings: Iterable[GeneralSetting], seeds: Sequence[int],
                    cfg: TrainerArmConfig | None = None) -> pd.DataFrame:
    """One row per (setting, seed): per arm a the sensitivity to the immutable feature ``sens_imm_a``, the root
    mean square sensitivity to the others ``sens_rest_a``, ``rs_a`` their ratio and ``acc_a`` (training accuracy);
    ``mature_u``, ``mature_p`` the mean share of counterfactuals that reached τ (immature ones are replaced by x⁺
    and carry no divergence); ``lowered`` = rs_p < rs_u, ``lowered_bl`` = rs_p < rs_bl, ``failed`` (a member did
    not finish; its run is dropped from the shares). Settings with the same (K, D, immutable features) train as
    one population per constraints object."""
    cfg = cfg or TrainerArmConfig()
    settings, seeds = list(settings), [int(s) for s in seeds]
    groups: dict[tuple, list[GeneralSetting]] = {}
    for s in settings:
        groups.setdefault((s.n_classes, s.n_features, tuple(s.immutable)), []).append(s)
    rows = []
    for (K, D, imm), group in groups.items():
        datas = [(s, seed, *simulate_general(s, seed)) for s in group for seed in seeds]
        X = np.concatenate([d[2] for d in datas])
        y = np.concatenate([d[3] for d in datas])
        starts = np.cumsum([0] + [len(d[3]) for d in datas])
        idx = [np.arange(starts[i], starts[i + 1]) for i in range(len(datas))]
        theta = {}
        for arms, cons in ((("p",), Constraints.build(D, mutability=list(imm))),
                           (("u", "bl"), NoProtection.build(D, mutability=list(imm)))):
            members = [_member(s, seed, a, idx[i], cfg) for a in arms for i, (s, seed, _, _) in enumerate(datas)]
            res = train_population(members, X, y, constraints=cons, n_classes=K, log_accuracy=False)
            for j, a in enumerate(arms):
                theta[a] = res[j * len(datas):(j + 1) * len(datas)]
        for i, (s, seed, Xi, yi) in enumerate(datas):
            row = {**s.row(), "seed": seed, "epochs": cfg.epochs, "lr": cfg.lr, "failed": False}
            for a in ("u", "p", "bl"):
                r = theta[a][i]
                if not r.ok:
                    row["failed"] = True
                    row |= {f"{c}_{a}": np.nan for c in ("sens_imm", "sens_rest", "rs", "acc", "mature")}
                    continue
                W = r.model[0].weight.detach().double().numpy()
                b = r.model[0].bias.detach().double().numpy()
                imm_s, rest_s = relative_sensitivity(sensitivities(W))
                if a != "bl":
                    row[f"mature_{a}"] = float(r.log["share_mature"].mean())
                row |= {f"sens_imm_{a}": float(imm_s), f"sens_rest_{a}": float(rest_s),
                        f"rs_{a}": float(imm_s / rest_s) if rest_s > 0 else np.inf,
                        f"acc_{a}": float(((Xi @ W.T + b).argmax(1) == yi).mean())}
            row["lowered"] = bool(row["rs_p"] < row["rs_u"])
            row["lowered_bl"] = bool(row["rs_p"] < row["rs_bl"])
            rows.append(row)
    return pd.DataFrame(rows)


def timed_trainer_arm(settings, seeds, cfg=None) -> tuple[pd.DataFrame, float]:
    """:func:`run_trainer_arm` and its CPU seconds (process time)."""
    t0 = time.process_time()
    df = run_trainer_arm(settings, seeds, cfg)
    return df, time.process_time() - t0
