"""The experiments layer: one module (or small package) per stage of the paper, between the core (data, models,
constraints, generators, training, evaluation metrics) and the report, command line and Python API above it.

Every stage offers ``jobs(config) -> list[job]`` (the work items a workflow config asks for, as small dicts that say
what one job does) and ``run(job) -> pandas.DataFrame`` (what one job produces, its sidecar metadata in
``df.attrs``; the command line writes it). No stage parses arguments or draws: ``ctbench.cli`` does the first, the
report the second. :data:`STAGES` names them; :func:`stage` imports one.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: stage → module of this package (final: the final models' training; evaluation protocol, robustness,
#: attributions: Table 1-2 and the robustness figure; grids: appendix grid searches and tuning; fidelity: code/paper
#: switches; consistency: Black et al. 2022; prop31: the Proposition 3.1 simulation; figures: Figure 1 and MNIST;
#: bench: throughput benchmarks)
STAGES = {"final": "final_training", "evaluation": "evaluation", "robustness": "robustness",
          "attributions": "attributions", "grids": "grids", "fidelity": "fidelity", "consistency": "consistency",
          "prop31": "prop31", "figures": "figure_runs", "bench": "bench"}


def stage(name: str) -> ModuleType:
    """The module of stage ``name`` (its ``jobs`` and ``run``)."""
    if name not in STAGES:
        raise ValueError(f"unknown stage {name!r}; choose one of {sorted(STAGES)}")
    return importlib.import_module(f".{STAGES[name]}", __name__)
