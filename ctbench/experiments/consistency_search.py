"""Counterfactuals of the consistency study for one base model, and their invalidation under retraining.

:func:`search_methods` runs every requested method of Black et al.'s Table 1 (``ctbench.generators.make_method``
names) or the CT paper's own generator (``ecco``: the model's training generator and convergence rule), each base
method once: a ``+sns`` method refines its base method's result with SNS (``SNSGenerator.refine``: only the valid
counterfactuals move, as the authors' pipeline) instead of searching again.

:func:`evaluate` stacks the counterfactuals of all methods into one batch and evaluates the base model (label,
validity, confidence, local Lipschitz estimate) and every retrained model (one stacked forward per source) on it:
one row per (method, factual) with the invalidation rate under each source.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..constraints import Constraints
from ..generators import CONSISTENCY_METHODS, CounterfactualResult, SNSGenerator, make_method
from ..generators.sns import AUTHORS_NORM_EPS
from .invalidation import confidence, invalidation_rate, local_lipschitz, stacked_labels

#: methods of the study: Black et al.'s (± SNS) and the CT paper's ECCo generator (± SNS)
METHODS = (*CONSISTENCY_METHODS, "ecco", "ecco+sns")
#: values of ``consistency.search_box``; the methods a ``scalar`` box applies to (the authors' code passes one
#: ``clamp=[X_train.min(), X_train.max()]`` to these two; Min-ℓ1/ℓ2 have their own box, ``elastic_net_box``)
SEARCH_BOXES = ("feature", "scalar")
SCALAR_BOX_METHODS = ("min_eps_pgd", "sns")
FRAME_COLUMNS = ["dataset", "seed", "model", "method", "sns", "row", "target", "valid", "cost_l1", "cost_l2",
                 "confidence", "lipschitz", "iv_rs", "iv_loo", "n_rs", "n_loo"]


@dataclass
class SearchContext:
    """Per-dataset settings of the base methods (App. B.3, Table 2) and of SNS."""

    pgd_max_eps: float
    sns_radius: float
    sns_fidelity: str = "paper"
    l1_step: float = 0.05
    l2_step: float = 0.01
    latent_radius: float = 1.0
    X_train: Any = None
    vae: Any = None
    ecco: Any = None            # (generator, convergence) of a CT-paper model, for "ecco"
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: box of Min-ℓ1/ℓ2 (fidelity switch ``elastic_net_box``): ``feature`` or ``art`` (stock ART's [0, 1] clamp)
    elastic_net_box: str = "art"
    #: Min-ε PGD's step rule (``MinEpsPGDGenerator.step_rule``): ``paper`` (2·ε/steps) or ``code`` (2·ε²/steps)
    pgd_step_rule: str = "paper"
    #: Min-ε PGD's and SNS's box (``consistency.search_box``): ``feature`` (each feature's own range, as ``cons``
    #: has it) or ``scalar`` (one range for every feature, ``X_train``'s overall min and max: the authors' code)
    search_box: str = "feature"
    #: ε of SNS's step x' + η·g/(‖g‖ + ε) (``consistency.sns.norm_eps``; the authors' code: 1e-7)
    sns_norm_eps: float = AUTHORS_NORM_EPS

    def constraints_for(self, name: str, cons: Constraints) -> Constraints:
        """``cons`` for method ``name`` (a base method or ``sns``): under ``search_box="scalar"`` Min-ε PGD and SNS
        clamp to ``[X_train.min(), X_train.max()]`` for every feature, as the authors' code does (their PGD's
        foolbox bounds and their SNS clamp), keeping ``cons``'s mutability; every other method keeps ``cons``."""
        if self.search_box == "feature" or name not in SCALAR_BOX_METHODS:
            return cons
        if self.X_train is None:
            raise ValueError("search_box 'scalar' needs the training data (SearchContext.X_train)")
        X = np.asarray(self.X_train)
        lo, hi = float(X.min()), float(X.max())
        return replace(cons, lower=torch.full((cons.n_features,), lo, dtype=torch.float64),
                       upper=torch.full((cons.n_features,), hi, dtype=torch.float64))

    def base_generator(self, name: str):
        if name == "ecco":
            if self.ecco is None:
                raise ValueError("consistency method 'ecco' needs a CT-paper model (the `ct` part of the study)")
            return self.ecco
        box = self.elastic_net_box
        kw: dict[str, Any] = {"min_l1": {"learning_rate": self.l1_step, "box": box},
                              "min_l2": {"learning_rate": self.l2_step, "box": box},
                              "min_eps_pgd": {"max_epsilon": self.pgd_max_eps, "seed": self.seed,
                                              "step_rule": self.pgd_step_rule},
                              "latent_random": {"radius": self.latent_radius},
                              "prototype": {"X_train": self.X_train}}[name]
        return make_method(name, vae=self.vae, **kw), None


def check_methods(methods: list[str], allowed: tuple[str, ...] = METHODS,
                  setting: str = "consistency.methods") -> None:
    if not isinstance(methods, list | tuple) or not methods:
        raise ValueError(f"{setting}: must be a non-empty list of methods; allowed: {list(allowed)}")
    unknown = [m for m in methods if m not in allowed]
    if unknown:
        raise ValueError(f"{setting}: unknown method(s) {unknown}; allowed: {list(allowed)}")
    if len(set(methods)) != len(methods):
        raise ValueError(f"{setting}: a method is listed twice: {methods}")


def search_methods(model: nn.Module, x: torch.Tensor, target: torch.Tensor, cons: Constraints, methods: list[str],
                   ctx: SearchContext) -> tuple[dict[str, CounterfactualResult], dict[str, float]]:
    """``{method: result}`` for the requested methods and the CPU seconds of each search (SNS: the refinement)."""
    check_methods(methods)
    results: dict[str, CounterfactualResult] = {}
    seconds: dict[str, float] = {}
    bases = list(dict.fromkeys(m.removesuffix("+sns") for m in methods))
    for b in bases:
        gen, conv = ctx.base_generator(b)
        t = time.process_time()
        results[b] = gen.search(model, x, target, ctx.constraints_for(b, cons), conv,
                                torch.Generator().manual_seed(ctx.seed))
        seconds[b] = time.process_time() - t
    sns = SNSGenerator(radius=ctx.sns_radius, fidelity=ctx.sns_fidelity, seed=ctx.seed, norm_eps=ctx.sns_norm_eps)
    for m in methods:
        if m.endswith("+sns"):
            t = time.process_time()
            results[m] = sns.refine(model, results[m.removesuffix("+sns")], ctx.constraints_for("sns", cons),
                                    torch.Generator().manual_seed(ctx.seed))
            seconds[m] = time.process_time() - t
    return {m: results[m] for m in methods}, seconds


def evaluate(base: nn.Module, retrained: dict[str, list[nn.Module]], results: dict[str, CounterfactualResult],
             rows: np.ndarray, *, lipschitz_radius: float, lipschitz_samples: int = 16, seed: int = 0,
             labels: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per (method, factual): validity, L1/L2 cost, confidence, local Lipschitz estimate, and the
    invalidation rate under each source of ``retrained`` (``{"rs": models, "loo": models}``).

    All methods' counterfactuals form one batch; each source is one stacked forward of all its models."""
    methods = list(results)
    cf = torch.cat([results[m].counterfactual for m in methods]).float()
    xf = torch.cat([results[m].factual for m in methods]).float()
    target = torch.cat([results[m].target for m in methods])
    with torch.no_grad():
        base_label = base(cf).argmax(1)
    gen = torch.Generator().manual_seed(int(seed))
    out = {
        "method": np.repeat(methods, len(rows)), "sns": np.repeat([m.endswith("+sns") for m in methods], len(rows)),
        "row": np.tile(rows, len(methods)), "target": target.numpy(), "valid": (base_label == target).numpy(),
        "cost_l1": (cf - xf).abs().sum(1).numpy(), "cost_l2": (cf - xf).norm(dim=1).numpy(),
        "confidence": confidence(base, cf, base_label).numpy(),
        "lipschitz": local_lipschitz(base, cf, base_label, lipschitz_radius, lipschitz_samples, gen).numpy(),
    }
    for source in ("rs", "loo"):
        models = retrained.get(source, [])
        out[f"iv_{source}"] = invalidation_rate(stacked_labels(models, cf), base_label).numpy()
        out[f"n_{source}"] = np.full(len(cf), len(models))
    df = pd.DataFrame(out)
    for k, v in (labels or {}).items():
        df.insert(0, k, v)
    return df[[c for c in FRAME_COLUMNS if c in df.columns]]


__all__ = ["FRAME_COLUMNS", "METHODS", "SearchContext", "check_methods", "evaluate", "search_methods"]
