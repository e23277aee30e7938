"""Final training (Table 1's models): ``jobs(config)`` lists one job per (dataset, group) of a workflow config, each
training every final model of that dataset and group, all seeds included, as populations; ``run(job)`` trains one
job's models and returns one row per model (``ctbench train`` with the job's configs does the same in the workflow).

This is the one place that decides which final models exist, where each lives and the config each is trained with.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..facts import EXPERIMENTS, model_folder
from ..facts import path as result_path

#: final models trained by one job per dataset and group. The ablation's CD and AR models are a job of their own so
#: that adding the ablation to a finished run (or dropping it) never retrains the main models: Snakemake reruns a
#: job whole when one of its outputs is missing.
FINAL_GROUPS = {"main": ("baseline", "single", "mutability"), "ablation": ("ablation",)}
#: the Snakemake rule of each group
RULES = {"main": "train_final", "ablation": "train_final_ablation"}


def model_path(config: dict[str, Any], experiment: str, dataset: str, objective: str, seed: int) -> str:
    """Where the workflow keeps a final model. The vanilla baseline ignores counterfactual and mutability settings,
    so one BL per dataset and seed (``models/baseline/``) serves the single, mutability and ablation experiments;
    the ablation's full CT model has exactly the config of the single experiment's, so it is that model (one model,
    one number)."""
    return result_path("model", str(config["results"]).rstrip("/"), folder=model_folder(experiment, objective),
                       dataset=dataset, objective=objective, seed=int(seed))


def models_of(config: dict[str, Any], experiment: str, dataset: str, seed: int) -> dict[str, str]:
    """Objective → model file of one experiment's models of ``dataset`` and ``seed``."""
    return {o: model_path(config, experiment, dataset, o, seed) for o in EXPERIMENTS[experiment]}


def members(config: dict[str, Any], group: str | None = None) -> list[tuple[str, str, int]]:
    """(model folder, objective, seed) of every final model of one dataset, each once (the shared vanilla baseline
    under ``baseline``); ``group`` (a key of :data:`FINAL_GROUPS`) keeps one training job's members."""
    if group is not None and group not in FINAL_GROUPS:
        raise ValueError(f"final training group {group!r} not in {sorted(FINAL_GROUPS)}")
    triples = [(model_folder(e, o), o, int(s)) for e in config["experiments"] for o in EXPERIMENTS[e]
               for s in config["seeds"]]
    return [t for t in dict.fromkeys(triples) if group is None or t[0] in FINAL_GROUPS[group]]


def train_config(config: dict[str, Any], folder: str, dataset: str, objective: str, seed: int) -> dict[str, Any]:
    """The ``ctbench train`` config of the final model in ``folder`` (an experiment, or ``baseline``: the vanilla
    model of the single experiment): the paper's final settings with the config's training, fidelity, data and
    device settings applied."""
    from ..paper_settings import model_config

    if folder == "baseline":
        if objective != "vanilla":
            raise ValueError(f"models/baseline/ holds vanilla models only, not {objective!r}")
        folder = "single"
    return model_config(dataset, folder, objective, int(seed), fidelity=config["fidelity"],
                        fidelity_overrides=config.get("fidelity_overrides") or {},
                        data_params=(config.get("data_params") or {}).get(dataset, {}),
                        epochs=(config.get("training") or {}).get("epochs"),
                        threads=int(config.get("threads_per_job", 1)), device=config.get("device", "cpu"),
                        overrides=dict(config.get("training_overrides") or {}))


def tuned(config: dict[str, Any]) -> dict[str, str]:
    """Dataset → the tuning stage's ``best.json`` that final training applies: only when ``tune.select`` is on, and
    only for the datasets the tuning stage tunes (the others keep the published hyper-parameters)."""
    from .grids import select_jobs

    tune = config.get("tune") or {}
    if not (tune.get("enabled", False) and tune.get("select", False)):
        return {}
    return {j["dataset"]: j["out"] for j in select_jobs(config)}


def jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """One job per (dataset, group): ``members`` (folder, objective, seed, ``out`` and the resolved train
    ``config`` of each model) and ``best`` (the tuning stage's ``best.json``, or None)."""
    best, out = tuned(config), []
    for group in FINAL_GROUPS:
        triples = members(config, group)
        if not triples:
            continue
        for d in config["datasets"]:
            out.append({"group": group, "rule": RULES[group], "dataset": d, "best": best.get(d),
                        "members": [{"folder": f, "objective": o, "seed": s, "out": model_path(config, f, d, o, s),
                                     "config": train_config(config, f, d, o, s)} for f, o, s in triples]})
    return out


def run(job: dict[str, Any], progress: bool = False) -> pd.DataFrame:
    """Train one job's models as populations and save each to its ``out``; one row per model (``out``, ``ok``,
    ``acc_test``, ``error``)."""
    from ..paper_settings import apply_best
    from ..training.pipeline import FailedTraining, train_population_from_configs

    cfgs = {m["out"]: apply_best(m["config"], job["best"]) if job.get("best") else m["config"]
            for m in job["members"]}
    trained = train_population_from_configs(cfgs, progress=progress)
    rows = []
    for out, res in trained.items():
        ok = not isinstance(res, FailedTraining) and not res.failure
        if ok:
            res.save(out)
        rows.append({"out": out, "ok": ok, "acc_test": res.meta.get("acc_test") if ok else None,
                     "error": None if ok else (res.error if isinstance(res, FailedTraining) else res.failure)})
    return pd.DataFrame(rows)
