"""Accuracy under FGSM and PGD attacks over the ε grid (the paper's robustness figure): ``jobs(config)`` lists one job
per (dataset, seed) of a workflow config, ``run(job)`` returns one row per (model, attack, ε); ``ctbench
robustness`` writes it (:func:`.evaluation.write`). The attacks are :mod:`ctbench.evaluation.robustness`."""

from __future__ import annotations

from typing import Any

import pandas as pd
import torch

from ..io import provenance
from .evaluation import load_models, model_meta, per_model
from .final_training import models_of


def jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The final models of the ablation (or the first experiment) per robustness dataset and seed."""
    rob = config.get("robustness") or {}
    if not rob.get("enabled", True):
        return []
    experiment = "ablation" if "ablation" in config["experiments"] else config["experiments"][0]
    datasets = [d for d in (rob.get("datasets") or config["datasets"]) if d in config["datasets"]]
    return [{"experiment": experiment, "dataset": d, "seed": int(s),
             "models": models_of(config, experiment, d, int(s))} for d in datasets for s in config["seeds"]]


def run(job: dict[str, Any]) -> pd.DataFrame:
    """One job (``{"models": {name: path}, "seed", "experiment"}``, optional ``eps_grid``)."""
    from ..evaluation.attack_kernels import robustness_curve

    seed, experiment = int(job.get("seed", 0)), str(job.get("experiment", ""))
    models, data = load_models([f"{n}={p}" for n, p in job["models"].items()])
    X = torch.as_tensor(data.X_test)
    y = torch.as_tensor(data.y_test)
    df = per_model(models, data, experiment,
                    lambda m: robustness_curve(m, X, y, eps_grid=job.get("eps_grid"), seed=seed))
    df.attrs["meta"] = {"kind": "robustness", "dataset": data.name, "experiment": experiment, "seed": seed,
                        "models": model_meta(models), "fidelity": next(iter(models.values())).fidelity.to_dict(),
                        "provenance": provenance()}
    return df
