"""The catalogue of the fidelity study: each place where the authors' code and the paper disagree, its two values,
what must be retrained when it flips, and the datasets it is measured on (:mod:`ctbench.experiments.fidelity` runs
them).

What "paper" means per switch: the text's value where the paper states one (``ce_step_size`` 0.25,
``domain_n_sigma`` 3, ``mmd_length_scale`` 0.5, ``adult_substring_groups`` off); for
``synthetic_mutability_zero_reg_adv`` the default is already the final table's λ's (the published Cost column was
made with them, issue 11), so the alternative is the code's run records (λ_reg = λ_adv = 0); for
``redraw_per_lambda`` the alternative is one draw reused for all λ's; for ``adversarial_label`` the paper and the
final code agree (true label), so the alternative is the 2025 preprints' predicted label; for ``ip_star_per_run`` (a
protocol option of this reproduction) the alternative is IP* pooled over runs, the literal reading of the reference
code (``EvalProtocol.ip_star_per_run``). The columns ``reference_setting``/``paper_setting`` name the two values of
every row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..facts import DATASETS, PAPER_DATASETS, SYNTHETIC
from ..fidelity import PRESETS

#: the paper's datasets without MNIST (a switch measured on every tabular and synthetic dataset)
_NOT_VISION = tuple(d for d in PAPER_DATASETS if DATASETS[d].family != "vision")

__all__ = ["SWITCHES", "SwitchSpec", "default_plan"]


@dataclass(frozen=True)
class SwitchSpec:
    """One discrepancy: its two values and what has to be redone when it flips."""

    name: str
    #: ``fidelity`` (a field of :class:`ctbench.fidelity.Fidelity`) or ``protocol`` (of ``EvalProtocol``)
    kind: str
    reference: Any
    paper: Any
    #: models to retrain under the paper value: ``none`` (evaluation only), ``ct`` (CT only) or ``all``
    retrain: str
    #: the experiment whose models and evaluation are used: ``single`` or ``mutability``
    experiment: str
    #: default datasets (the plan of :func:`default_plan`)
    datasets: tuple[str, ...]
    #: item of reference/ct_reference.md
    source: str
    description: str
    #: the metrics of Table 1 this switch is about (the discrepancies chapter compares these; the effect table has all)
    metrics: tuple[str, ...] = ("IP", "IP*", "Cost")

    def values(self) -> dict[str, Any]:
        return {"reference": self.reference, "paper": self.paper}


def _presets(name: str) -> tuple[Any, Any]:
    """The switch's values in the ``reference`` and ``paper`` presets of :mod:`ctbench.fidelity` (not typed twice)."""
    return getattr(PRESETS["reference"], name), getattr(PRESETS["paper"], name)


SWITCHES: dict[str, SwitchSpec] = {s.name: s for s in (
    SwitchSpec("ce_step_size", "fidelity", *_presets("ce_step_size"), "ct", "single", ("lin_sep", "moons"), "§11.1",
               "step size of the counterfactual search, in training and at evaluation", ("IP", "IP*")),
    SwitchSpec("domain_n_sigma", "fidelity", *_presets("domain_n_sigma"), "all", "single", ("lin_sep", "moons"),
               "§11.2", "domain box μ ± nσ (widened to the observed range), in training and at evaluation",
               ("IP", "IP*")),
    SwitchSpec("blob_centers", "fidelity", *_presets("blob_centers"), "all", "single", ("lin_sep", "over"),
               "§6.1", "centres of the LS and OL blobs: the ones the reference's Xoshiro(42) draws vs symmetric "
               "centres calibrated to the paper's accuracies", ("IP", "IP*")),
    SwitchSpec("mmd_length_scale", "fidelity", *_presets("mmd_length_scale"), "none", "single",
               SYNTHETIC, "§11.15", "Gaussian-kernel length-scale of the IP* MMD", ("IP*",)),
    SwitchSpec("adversarial_label", "fidelity", "true", "predicted", "ct", "single",
               _NOT_VISION, "§11.4",
               "label of the adversarial (nascent) example; paper = final code = true, alternative = the 2025 "
               "preprints' predicted label", ("IP", "IP*")),
    SwitchSpec("synthetic_mutability_zero_reg_adv", "fidelity", False, True, "ct", "mutability",
               ("lin_sep", "circles", "over"), "§11.3",
               "synthetic mutability runs trained with the final table's λ_reg, λ_adv (default) vs λ_reg = λ_adv = 0 "
               "(the code's run records)", ("Cost",)),
    SwitchSpec("redraw_per_lambda", "fidelity", True, False, "none", "single", ("lin_sep", "moons"), "§7.1",
               "one draw of label pairs and individuals per test-time λ_egy (the authors' one evaluation per λ) vs "
               "one draw reused for all five λ's"),
    SwitchSpec("adult_substring_groups", "fidelity", *_presets("adult_substring_groups"), "none", "single",
               ("adult",), "§11.12",
               "Adult one-hot groups by substring match (education_num swallowed) vs the true groups; used to snap "
               "categorical groups at evaluation", ("IP",)),
    SwitchSpec("ip_star_per_run", "protocol", True, False, "none", "single", ("lin_sep", "circles"),
               "§7.3, §11.15", "IP* groups per evaluation run (this reproduction's default) vs pooled over runs "
               "(the literal reading of the reference code)", ("IP*",)),
)}


def default_plan() -> list[tuple[str, str]]:
    """``(switch, dataset)`` pairs of the study: synthetic data for most switches, Adult for the grouping switch."""
    return [(name, ds) for name, spec in SWITCHES.items() for ds in spec.datasets]
