"""Evaluation of counterfactuals: per-counterfactual metrics and the paper's statistics.

This ``__init__`` re-exports only ``metrics`` and ``aggregate``. Other modules of this package (``protocol``,
``robustness``, ``integrated_gradients``) are owned by others and are imported explicitly
(``from ctbench.evaluation import protocol``); keep the imports here limited to these two modules so that they
stay light and independent.
"""

from .aggregate import (
    AVG,
    Columns,
    ablation_table,
    bootstrap_reduction,
    compare_published,
    paper_value,
    per_run_means,
    reduction_table,
    validity_table,
)

#: the metrics (torch) load on first use, so that the report, which needs only ``aggregate``, starts without torch
#: (≈ 1.5 CPU-s a job, issue 21); ``from ctbench.evaluation import implausibility`` works as before
_METRICS = ("cost_l1", "implausibility", "ip_star", "mmd2_unbiased", "redundancy", "strict_validity", "validity")


def __getattr__(name: str):
    if name in _METRICS:
        from . import metrics

        return getattr(metrics, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "AVG",
    "Columns",
    "ablation_table",
    "bootstrap_reduction",
    "compare_published",
    "cost_l1",
    "implausibility",
    "ip_star",
    "mmd2_unbiased",
    "paper_value",
    "per_run_means",
    "reduction_table",
    "redundancy",
    "strict_validity",
    "validity",
    "validity_table",
]
