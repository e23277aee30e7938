"""The paper's experimental settings as data: final hyper-parameters per dataset and the model config of each run.

Source: the appendix table "Final hyperparameters" (per dataset, in :mod:`ctbench.facts`) and the run records
(reference §8.3). Everything the workflow trains is built by :func:`model_config`, so a rule never spells out a
hyper-parameter itself.
"""

from __future__ import annotations

import copy
from typing import Any

from .facts import EXPERIMENTS, published_hyperparameters

#: common settings of all final runs
COMMON: dict[str, Any] = {
    "model": {"type": "mlp", "hidden": 32, "layers": 1},
    "training": {"epochs": 100, "burnin": 0.0, "lr": 0.001},
    "generator": {"type": "ecco", "lambda_cost": 0.001, "lambda_energy": 5.0},
    "convergence": {"kind": "threshold", "max_iter": 30},
    "objective": {"lambda_clf": 1.0, "lambda_div": 0.5, "lambda_adv": 0.25},
}


#: the settings of Figure 1's run (:mod:`ctbench.experiments.figure_runs.linear`, whose docstring gives where each
#: comes from); here, with no torch import, so that ``ctbench figure1 --help`` and the CLI's start-up need none
FIG1: dict[str, Any] = {
    "dataset": "lin_sep",
    "fidelity": "reference",
    "model": {"type": "linear"},
    "init": "zeros",
    "objective": {"lambda_clf": 1.0, "lambda_div": 0.5, "lambda_reg": 0.01, "lambda_adv": 0.1},
    "generator": {"type": "generic", "lambda_cost": 0.001},
    "convergence": {"kind": "threshold", "tau": 0.75, "max_iter": 30},
    "training": {"epochs": 30, "batch_size": 50, "nce": 1000, "lr": 0.01},
    "immutable": [0],
    "feature_labels": ["age", "x₂"],
    "n_factuals": 6,
    "quick_epochs": 8,
}


def final_hyperparameters(dataset: str, best: dict[str, Any] | None = None) -> dict[str, Any]:
    """The published final setting of ``dataset``, or the tuning stage's choice ``best`` (τ, λ_reg) over it."""
    hp = published_hyperparameters(dataset)
    if best:
        unknown = set(best) - {"tau", "lambda_reg"}
        if unknown:
            raise ValueError(f"best.json for {dataset}: unknown key(s) {sorted(unknown)}; expected tau, lambda_reg")
        hp.update(best)
    return hp


def model_config(dataset: str, experiment: str, objective: str, seed: int = 0, *, fidelity: str = "reference",
                 fidelity_overrides: dict[str, Any] | None = None, data_params: dict[str, Any] | None = None,
                 epochs: int | None = None, best: dict[str, Any] | None = None, threads: int = 1,
                 device: str = "cpu", overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``ctbench train`` config of one final model (experiment ∈ single, mutability, ablation)."""
    if experiment not in EXPERIMENTS:
        raise ValueError(f"experiment {experiment!r} not in {sorted(EXPERIMENTS)}")
    hp = final_hyperparameters(dataset, best)
    cfg = copy.deepcopy(COMMON)
    cfg.update({"seed": int(seed), "fidelity": fidelity, "fidelity_overrides": dict(fidelity_overrides or {}),
                "threads": threads, "device": device,
                "data": {"name": dataset, "params": dict(data_params or {})},
                "mutability": "protected" if experiment == "mutability" else None})
    cfg["training"].update({"batch_size": hp["batch_size"], "nce": hp["nce"]})
    if epochs is not None:
        cfg["training"]["epochs"] = int(epochs)
    cfg["convergence"]["tau"] = hp["tau"]
    cfg["objective"].update({"name": objective, "lambda_reg": hp["lambda_reg"]})
    for key, value in (overrides or {}).items():  # dotted keys, e.g. {"training.epochs": 5}
        node = cfg
        *path, last = key.split(".")
        for p in path:
            node = node.setdefault(p, {})
        node[last] = value
    return cfg


def apply_best(cfg: dict[str, Any], best_json: str) -> dict[str, Any]:
    """Replace τ and λ_reg of a resolved train config with the tuning stage's choice (``best.json``)."""

    from .io import read_json_file

    best = read_json_file(best_json, "tuning choice (--best)")
    chosen = best.get("best", best)
    unknown = set(chosen) - {"tau", "lambda_reg"}
    if unknown:
        raise ValueError(f"{best_json}: unknown key(s) {sorted(unknown)}; expected tau and lambda_reg")
    cfg = copy.deepcopy(cfg)
    if "tau" in chosen:
        cfg["convergence"]["tau"] = float(chosen["tau"])
    if "lambda_reg" in chosen:
        cfg["objective"]["lambda_reg"] = float(chosen["lambda_reg"])
    return cfg
