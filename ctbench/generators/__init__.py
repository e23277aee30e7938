"""Counterfactual generators: one batched gradient search, several objectives (Generic, ECCo, REVISE); and the
consistency study's methods (SNS, Min-ℓ1/ℓ2 elastic net, Min-ε PGD, latent random search, prototype-guided; see
``.consistency``)."""

from __future__ import annotations

from typing import Any

from ..fidelity import Fidelity, resolve_fidelity
from .base import Convergence, CounterfactualResult, GradientGenerator
from .consistency_methods import METHODS as CONSISTENCY_METHODS
from .consistency_methods import WithSNS, make_method
from .ecco import ECCoGenerator, energy_multiplier
from .elastic_net import ElasticNetGenerator
from .generic import GenericGenerator
from .latent_search import LatentRandomSearch
from .pgd import MinEpsPGDGenerator
from .prototype import PrototypeGenerator
from .revise import REVISEGenerator
from .sns import SNSGenerator
from .vae import VAE

GENERATORS: dict[str, type[GradientGenerator]] = {
    "generic": GenericGenerator,
    "wachter": GenericGenerator,
    "ecco": ECCoGenerator,
    "revise": REVISEGenerator,
}
_KEYS = {"type", "step_size", "lambda_cost", "lambda_energy", "energy_reg", "decay", "enforce_mutability"}


def check_generator_spec(spec: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """(type, the other keys) of a generator config block; unknown types or keys raise ``ValueError``."""
    spec = dict(spec or {})
    kind = str(spec.pop("type", "ecco")).lower()
    if kind not in GENERATORS:
        raise ValueError(f"generator.type: unknown generator {kind!r}; choose one of {sorted(GENERATORS)}")
    unknown = set(spec) - _KEYS
    if unknown:
        raise ValueError(f"generator: unknown key(s) {sorted(unknown)}; allowed: {sorted(_KEYS - {'type'})}")
    return kind, spec


def make_generator(spec: dict[str, Any] | None = None, fidelity: Fidelity | str = "reference",
                   vae: VAE | None = None) -> GradientGenerator:
    """Build a generator from a config block; step size, nascent ε and maturity default to the fidelity mode."""
    kind, spec = check_generator_spec(spec)
    fid = resolve_fidelity(fidelity)
    if spec.get("step_size") is None:
        spec["step_size"] = fid.ce_step_size
    if kind != "ecco":
        for k in ("lambda_energy", "energy_reg", "decay"):
            spec.pop(k, None)  # Generic and REVISE ignore the energy parameters (as in the reference grids)
    if kind != "revise":
        spec.pop("enforce_mutability", None)
    common = dict(nascent_epsilon=fid.nascent_epsilon, nascent_inclusive=fid.nascent_inclusive,
                  maturity=fid.maturity)
    if kind == "revise":
        return REVISEGenerator(vae=vae, **common, **spec)
    return GENERATORS[kind](**common, **spec)


__all__ = [
    "CONSISTENCY_METHODS", "Convergence", "CounterfactualResult", "ECCoGenerator", "ElasticNetGenerator", "GENERATORS",
    "GenericGenerator", "GradientGenerator", "LatentRandomSearch", "MinEpsPGDGenerator", "PrototypeGenerator",
    "REVISEGenerator", "SNSGenerator", "VAE", "WithSNS", "check_generator_spec", "energy_multiplier", "make_generator",
    "make_method",
]
