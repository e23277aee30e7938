"""The Python API (a surface, like the command line): train, save and load models, and run any stage of the paper.

    >>> from ctbench.api import train_from_config, load_model
    >>> trained = train_from_config({"data": {"name": "lin_sep"}, "training": {"epochs": 5}})
    >>> trained.save("results/ls.pt")
    >>> trained = load_model("results/ls.pt")
    >>> result = trained.counterfactuals(X, target)
    >>> from ctbench.api import jobs, run
    >>> frames = [run("robustness", job) for job in jobs("robustness", workflow_config)]

The model functions live in the core (:mod:`ctbench.training.pipeline`, which the experiments use); this module is
their documented entry point (README) and adds :func:`jobs` and :func:`run` over :mod:`ctbench.experiments`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .experiments import STAGES, stage
from .training.pipeline import (
    FailedTraining,
    TrainedModel,
    load_model,
    train_from_config,
    train_population_from_configs,
)

__all__ = ["STAGES", "FailedTraining", "TrainedModel", "jobs", "load_model", "run", "train_from_config",
           "train_population_from_configs"]


def jobs(stage_name: str, config: dict[str, Any]) -> list[Any]:
    """The jobs of one stage (a key of :data:`STAGES`) that a workflow config asks for."""
    return stage(stage_name).jobs(config)


def run(stage_name: str, job: Any) -> pd.DataFrame:
    """Run one job of a stage; the table it produces (sidecar metadata in ``attrs``)."""
    return stage(stage_name).run(job)
