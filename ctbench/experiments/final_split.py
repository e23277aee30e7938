"""Final training per seed (issue 21): the datasets that a workflow config names in ``training.per_seed`` train each
seed's final models as a job of their own; every other dataset keeps one job for all its seeds
(:func:`.final_training.jobs`, whose plan this splits).

A population member's result does not depend on which members share its population (each member draws from its own
seeded generator and the loss is summed per member): the paper's MNIST models trained one seed at a time are the
committed population's bit for bit (``benchmarks/per_seed_final.py``). So the split changes when a model is trained,
not what it is: on many cores the MNIST training takes one seed's time (120-160 CPU-s) instead of five seeds'
(583 CPU-s), which was the paper DAG's critical path. On few cores the split costs one process start-up and one
data load per extra job. No ctbench command imports this module (only :mod:`ctbench.workflow`), so the split moves
no command's code fingerprint.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError

#: the Snakemake rule of a per-seed job, by the rule of the dataset's whole job
SEED_RULES = {"train_final": "train_final_seed", "train_final_ablation": "train_final_ablation_seed"}


def per_seed_datasets(config: dict[str, Any]) -> list[str]:
    """The datasets of ``config`` whose final training runs one job per seed: those of ``training.per_seed`` (none
    when absent or null) that the profile trains. A name the profile does not train is left out, because Snakemake
    merges a ``--configfile`` over ``paper.yaml`` and so a small profile inherits the paper's list; a name that is
    not a dataset at all is an error (:func:`ctbench.workflow_check.check_workflow`), and so is a non-list."""
    names = (config.get("training") or {}).get("per_seed") or []
    if not isinstance(names, list) or not all(isinstance(d, str) for d in names):
        raise ConfigError(f"training.per_seed: {names!r} is not a list of dataset names (or null)")
    return [d for d in config["datasets"] if d in names]


def split_jobs(config: dict[str, Any], jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The final-training ``jobs`` with each job of a per-seed dataset replaced by one job per seed: that seed's
    members, ``seed`` set and the per-seed rule (:data:`SEED_RULES`); the other jobs unchanged (no ``seed`` key)."""
    split = set(per_seed_datasets(config))
    out = []
    for j in jobs:
        if j["dataset"] not in split:
            out.append(j)
            continue
        for s in dict.fromkeys(int(m["seed"]) for m in j["members"]):
            out.append({**j, "rule": SEED_RULES[j["rule"]], "seed": s,
                        "members": [m for m in j["members"] if int(m["seed"]) == s]})
    return out
