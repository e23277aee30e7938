"""Integrated gradients on the protected features (Table 2): ``jobs(config)`` lists one job per (dataset, seed) of a
workflow config's mutability models, ``run(job)`` returns one row per (model, round); ``ctbench attribution`` writes
it (:func:`.evaluation.write`). The attribution method is :mod:`ctbench.evaluation.integrated_gradients`."""

from __future__ import annotations

from typing import Any

import pandas as pd
import torch

from ..facts import ATTRIBUTION
from ..io import provenance
from .evaluation import load_models, model_meta, per_model
from .final_training import models_of


def jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The mutability experiment's models per dataset and seed, with the config's ``attribution`` sizes."""
    att = config.get("attribution") or {}
    if not att.get("enabled", True) or "mutability" not in config["experiments"]:
        return []
    sizes = {"n_rounds": int(att.get("rounds", ATTRIBUTION["rounds"])),
             "n_samples": int(att.get("samples", ATTRIBUTION["samples"])),
             "steps": int(att.get("steps", ATTRIBUTION["steps"]))}
    return [{"experiment": "mutability", "dataset": d, "seed": int(s),
             "models": models_of(config, "mutability", d, int(s)), **sizes}
            for d in config["datasets"] for s in config["seeds"]]


def run(job: dict[str, Any]) -> pd.DataFrame:
    """One job (``{"models": {name: path}, "seed", "experiment", "n_rounds", "n_samples", "steps"}``): the same
    rounds and baselines for every model."""
    from ..evaluation.ig_kernels import closed_form_ig
    from ..evaluation.integrated_gradients import ig_rounds

    seed, experiment = int(job.get("seed", 0)), str(job.get("experiment", ""))
    n_rounds, n_samples, steps = (int(job.get(f"n_{k}" if k != "steps" else k, ATTRIBUTION[k]))
                                  for k in ("rounds", "samples", "steps"))
    models, data = load_models([f"{n}={p}" for n, p in job["models"].items()])
    if not data.protected:
        raise ValueError(f"dataset {data.name!r} has no protected features to attribute")
    X = torch.as_tensor(data.X_test)
    y = torch.as_tensor(data.y_test)
    with closed_form_ig():  # the same numbers without the (samples × points × hidden) masks (issue 21)
        df = per_model(models, data, experiment, lambda m: ig_rounds(
            m, X, y, data.protected, n_rounds=n_rounds, n_samples=n_samples, seed=seed, steps=steps))
    df.attrs["meta"] = {"kind": "integrated_gradients", "dataset": data.name, "experiment": experiment,
                        "n_rounds": n_rounds, "n_samples": n_samples, "steps": steps, "seed": seed,
                        "protected": data.protected, "models": model_meta(models), "provenance": provenance()}
    return df
