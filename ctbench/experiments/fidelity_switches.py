"""The catalogue of the fidelity study: each place where the authors' code and the paper disagree, its two values,
what must be retrained when it flips, and the datasets it is measured on (:mod:`ctbench.experiments.fidelity` runs
them), gathered from the one place each switch's facts live: its field's ``metadata["study"]`` on
:class:`ctbench.fidelity.Fidelity` (or ``EvalProtocol``), a :class:`ctbench.fidelity.Study`.

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

from dataclasses import dataclass, fields
from typing import Any

from ..evaluation.settings import EvalProtocol
from ..fidelity import PRESETS, Fidelity

__all__ = ["SWITCHES", "SwitchSpec", "default_plan"]


@dataclass(frozen=True)
class SwitchSpec:
    """One discrepancy: its two values and what has to be redone when it flips (the study entry on the switch's
    field, :class:`ctbench.fidelity.Study`, with the values resolved)."""

    name: str
    #: ``fidelity`` (a field of :class:`ctbench.fidelity.Fidelity`) or ``protocol`` (of ``EvalProtocol``)
    kind: str
    reference: Any
    paper: Any
    retrain: str
    experiment: str
    datasets: tuple[str, ...]
    source: str
    description: str
    metrics: tuple[str, ...] = ("IP", "IP*", "Cost")

    def values(self) -> dict[str, Any]:
        return {"reference": self.reference, "paper": self.paper}


def _switches() -> dict[str, SwitchSpec]:
    """Every field of :class:`~ctbench.fidelity.Fidelity` and of ``EvalProtocol`` with a study entry, in the study's
    order: reference value = the default, paper value = the entry's ``alternative`` or the ``paper`` preset's."""
    found = []
    for kind, cls, reference, paper in (("fidelity", Fidelity, PRESETS["reference"], PRESETS["paper"]),
                                        ("protocol", EvalProtocol, EvalProtocol(), None)):
        for f in fields(cls):
            study = f.metadata.get("study")
            if study is None:
                continue
            flipped = study.alternative if study.alternative is not None else getattr(paper, f.name)
            found.append((study.rank, SwitchSpec(f.name, kind, getattr(reference, f.name), flipped, study.retrain,
                                                 study.experiment, tuple(study.datasets), study.source,
                                                 study.description, tuple(study.metrics))))
    ranks = [r for r, _ in found]
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"fidelity switches: two study entries share a rank ({sorted(ranks)})")
    return {s.name: s for _, s in sorted(found, key=lambda t: t[0])}


SWITCHES: dict[str, SwitchSpec] = _switches()


def default_plan() -> list[tuple[str, str]]:
    """``(switch, dataset)`` pairs of the study: synthetic data for most switches, Adult for the grouping switch."""
    return [(name, ds) for name, spec in SWITCHES.items() for ds in spec.datasets]
