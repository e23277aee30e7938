"""Choices the report makes when it aggregates the evaluations into tables (issue 24, item 4).

The evaluation's switches live in :mod:`ctbench.fidelity` and :mod:`ctbench.evaluation.settings` and travel in the
evaluation sidecars; these act on the aggregation only, so they are given to ``ctbench report`` (the workflow
config's ``report:`` block) and flipping one reruns no training or evaluation. Like a fidelity switch, the default is
what produced the published numbers, and the report records which value ran (``index.json`` → ``settings``,
``provenance.json`` → ``report_settings``, and the note on every cell it changes).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from ..checks import check_overrides
from ..fidelity import switch


@dataclass(frozen=True)
class ReportSettings:
    """The report's aggregation switches."""

    #: reference §7.3 and §7.4 step 1 — IP* of a group with fewer than two counterfactuals is NaN (the unbiased MMD
    #: divides by m(m−1)). ``drop`` (the authors' code): the harness drops NaN rows before any mean, so a cell is the
    #: mean over the groups of at least two, however many NaN there are (MNIST, 25 individuals per run and λ, groups
    #: per run: 70% NaN), with the NaN share noted on the cell. ``withhold`` (this project's stricter reading): a cell
    #: with more than ``table1.MAX_NAN_SHARE`` NaN values is shown as "not computable".
    ip_star_nan_groups: str = switch("drop")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_CHOICES = {"ip_star_nan_groups": ("drop", "withhold")}


def report_settings(overrides: dict[str, Any] | None = None, where: str = "report") -> ReportSettings:
    """The defaults with ``overrides`` applied; an unknown name or value raises
    :class:`~ctbench.errors.ConfigError` naming it and the choices."""
    return replace(ReportSettings(), **check_overrides(ReportSettings, overrides, where, choices=_CHOICES,
                                                        noun="report setting"))


__all__ = ["ReportSettings", "report_settings"]
