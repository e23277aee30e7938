"""The counterfactual methods of Black et al.'s Table 1, by name, each with or without SNS on top.

``make_method("min_l2+sns", sns={"radius": 0.5})`` builds Min-ℓ2 followed by SNS. Names: ``min_l1``, ``min_l2``
(:class:`~.elastic_net.ElasticNetGenerator` with the paper's β and decision rule), ``min_eps_pgd``
(:class:`~.pgd.MinEpsPGDGenerator`), ``latent_random`` (:class:`~.latent_search.LatentRandomSearch`, Pawelczyk et
al.; needs a VAE), ``prototype`` (:class:`~.prototype.PrototypeGenerator`, Van Looveren & Klaise; needs
``X_train``), and the same with ``+sns``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..constraints import Constraints
from .base import CounterfactualResult
from .elastic_net import ElasticNetGenerator
from .latent_search import LatentRandomSearch
from .pgd import MinEpsPGDGenerator
from .prototype import PrototypeGenerator
from .sns import SNSGenerator
from .vae import VAE

BASE_METHODS = ("min_l1", "min_l2", "min_eps_pgd", "latent_random", "prototype")
METHODS = (*BASE_METHODS, *(f"{m}+sns" for m in BASE_METHODS))


class WithSNS:
    """A base method followed by SNS from its valid counterfactuals (same ``search`` signature); rows the base
    method could not flip stay as the base method left them (the authors' pipeline)."""

    def __init__(self, base: Any, sns: SNSGenerator):
        self.base = base
        self.sns = sns
        self.name = f"{base.name}+sns"

    def params(self) -> dict[str, Any]:
        return {"type": self.name, "base": self.base.params(), "sns": self.sns.params()}

    def search(self, model: nn.Module, x: torch.Tensor, target: torch.Tensor, constraints: Constraints | None = None,
               convergence=None, generator: torch.Generator | None = None) -> CounterfactualResult:
        base = self.base.search(model, x, target, constraints, convergence, generator)
        return self.sns.refine(model, base, constraints, generator)


def make_method(name: str, *, sns: dict[str, Any] | SNSGenerator | None = None, vae: VAE | None = None,
                **params: Any) -> Any:
    """Build a Table 1 method; ``params`` go to the base method, ``sns`` (a dict or a generator) to SNS."""
    if name not in METHODS:
        raise ValueError(f"consistency method: unknown name {name!r}; choose one of {list(METHODS)}")
    base_name, with_sns = name.removesuffix("+sns"), name.endswith("+sns")
    if base_name == "min_l1":
        base: Any = ElasticNetGenerator(**{"decision_rule": "L1", "beta": 1.0, **params})
    elif base_name == "min_l2":
        base = ElasticNetGenerator(**{"decision_rule": "L2", "beta": 0.0, **params})
    elif base_name == "min_eps_pgd":
        base = MinEpsPGDGenerator(**params)
    elif base_name == "prototype":
        base = PrototypeGenerator(**params)
    else:
        base = LatentRandomSearch(vae, **params)
    if not with_sns:
        if sns is not None:
            raise ValueError(f"consistency method {name!r}: SNS settings given for a method without SNS")
        return base
    sns_gen = sns if isinstance(sns, SNSGenerator) else SNSGenerator(**(sns or {}))
    return WithSNS(base, sns_gen)


__all__ = ["BASE_METHODS", "METHODS", "WithSNS", "make_method"]
