"""Retraining robustness (issue 24 item 5): extra training seeds of the final models, trained and evaluated exactly
as the main ones, into a results folder of their own.

The paper's ± covers redrawing individuals for one trained pair of models; whether a Table-1 cell holds under another
training seed needs more seeds than the main run's five. The workflow config's ``retrain`` block names them; this
module plans their jobs by re-planning the final-training and evaluation stages (:mod:`.final_training`,
:mod:`.evaluation`) on a copy of the config that differs only in seeds, datasets, experiments and results folder, so
every model's train config and every evaluation's protocol is the main one apart from the seed (tests hold the
trained weights bitwise equal to the main rule's).

Only the workflow imports this module; no ``ctbench`` command does (the jobs run ``ctbench train`` and ``ctbench
evaluate``). Its path templates live here rather than in :data:`ctbench.facts.PATHS`, which every stage reaches: so
adding the stage changes no stage's code fingerprint and reruns no finished job.
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import ConfigError
from .stage_paths import StagePaths

#: the folder under ``{results}`` that holds this stage's files
FOLDER = "retrain"
#: result templates of this stage: the main model and evaluation templates (ctbench.facts.PATHS) under
#: ``{results}/retrain`` (tests/test_retrain.py holds them equal)
PATHS: dict[str, str] = {
    "retrain_model": "{results}/retrain/models/{folder}/{dataset}/{objective}_s{seed}.pt",
    "retrain_evaluation": "{results}/retrain/eval/{experiment}/{dataset}_s{seed}.parquet",
}
#: the experiments whose models can be retrained: those of final training's main group (one job per dataset); the
#: ablation's CD and AR are a training job of their own and not part of the retraining question
EXPERIMENTS = ("single", "mutability")


_PATHS = StagePaths("retrain", PATHS)
#: the stage's :class:`~.stage_paths.StagePaths` functions
fields, path, pattern = _PATHS.fields, _PATHS.path, _PATHS.pattern


def block(config: dict[str, Any]) -> dict[str, Any] | None:
    """The ``retrain`` block when the stage is on, checked against the rest of the config; None when it is off."""
    r = config.get("retrain") or {}
    if not r.get("enabled", False):
        return None
    seeds = [int(s) for s in r.get("seeds") or []]
    if not seeds:
        raise ConfigError("retrain.seeds: name the extra training seeds (e.g. [5, 6, 7, 8, 9])")
    clash = sorted(set(seeds) & {int(s) for s in config["seeds"]})
    if clash:
        raise ConfigError(f"retrain.seeds: {clash} also in `seeds:`; the retrain stage trains extra seeds only (the "
                          "main run trains those): give other seeds, or `retrain: {enabled: false}` (every profile "
                          "inherits paper.yaml's block)")
    # the main run's datasets limit this stage as they limit every other (a profile's `datasets:` narrows it)
    datasets = [d for d in (r.get("datasets") or config["datasets"]) if d in config["datasets"]]
    experiments = list(r.get("experiments") or ["single"])
    bad = [e for e in experiments if e not in EXPERIMENTS]
    if bad:
        raise ConfigError(f"retrain.experiments: {bad} cannot be retrained; choose from {list(EXPERIMENTS)}")
    return {"seeds": seeds, "datasets": datasets, "experiments": experiments, "report": bool(r.get("report", False))}


def root(config: dict[str, Any]) -> str:
    """``{results}/retrain``: the results folder of the re-planned stages."""
    return f"{str(config['results']).rstrip('/')}/{FOLDER}"


def sub_config(config: dict[str, Any]) -> dict[str, Any] | None:
    """The config the final-training and evaluation planners see: the main one with the block's seeds, datasets and
    experiments, results under ``{results}/retrain``, and no tuning selection (whose files live in the main folder:
    :func:`train_jobs` applies the main run's choice itself). None when the stage is off."""
    b = block(config)
    if b is None:
        return None
    sub = copy.deepcopy(config)
    sub.update(results=root(config), seeds=b["seeds"], datasets=b["datasets"], experiments=b["experiments"])
    sub["tune"] = {**(sub.get("tune") or {}), "select": False}
    return sub


def train_jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """One training job per retrained dataset (all its extra seeds as one population, as final training does):
    ``members`` with each model's ``out`` and train config, and ``best`` (the main run's tuning choice, or None)."""
    from .final_training import jobs, tuned

    sub = sub_config(config)
    if sub is None:
        return []
    best = tuned(config)
    out = []
    for j in jobs(sub):
        if j["group"] != "main":  # the ablation's CD and AR: not retrained (EXPERIMENTS)
            continue
        out.append({**j, "rule": "retrain_train", "best": best.get(j["dataset"])})
    return out


def evaluation_jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """One evaluation job per (experiment, dataset, extra seed): the main protocol on the retrained models."""
    from .evaluation import jobs

    sub = sub_config(config)
    return [] if sub is None else jobs(sub)


def members(config: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(model folder, objective, seed) of every retrained model of one dataset (the training rule's outputs)."""
    from .final_training import members as final_members

    sub = sub_config(config)
    return [] if sub is None else final_members(sub, "main")


__all__ = ["EXPERIMENTS", "PATHS", "block", "evaluation_jobs", "members", "path", "pattern", "root", "sub_config",
           "train_jobs"]
