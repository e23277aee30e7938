"""Small evaluation jobs grouped per dataset (issue 21): with ``evaluation.group_seeds`` on, the per-seed jobs of
``evaluate``, ``retrain_evaluate``, ``robustness`` and ``attribution`` of a dataset whose models are trained in one job
(all seeds at once) run as one job per (experiment, dataset) that evaluates its seeds one after another in one process
(``ctbench each``). Each member is the per-seed job of the stage's own planner, unchanged: the same arguments, the
same output file, the same bits (a member does not depend on the members before it, tested). What it saves is the
process start-up of every member but the first (≈ 3 CPU-s each on the paper's small jobs: torch, pandas and pyarrow
imports, first-call set-up and interpreter exit; ``benchmarks/eval_startup.py``).

Datasets trained one job per seed (``training.per_seed``: MNIST in the paper profile) keep one evaluation job per
seed: their models arrive one seed at a time, and grouping would make the 34-core critical path wait for the last
seed and then run five evaluations in a row. The retrained models of a dataset are one job (``retrain_train``), so
every retrain dataset is grouped. No ctbench command imports this module (only :mod:`ctbench.workflow`), so the
switch moves no command's code fingerprint.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError

#: grouped kind → (the per-seed plan it groups, the fields that name a group)
GROUPED: dict[str, tuple[str, tuple[str, ...]]] = {
    "evaluation_group": ("evaluation", ("experiment", "dataset")),
    "retrain_evaluation_group": ("retrain_evaluation", ("experiment", "dataset")),
    "robustness_group": ("robustness", ("dataset",)),
    "attribution_group": ("attribution", ("dataset",)),
}


def group_seeds(config: dict[str, Any]) -> bool:
    """``evaluation.group_seeds`` (absent or null: False, one job per seed as before)."""
    value = (config.get("evaluation") or {}).get("group_seeds")
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"evaluation.group_seeds: {value!r} is not true, false or null")
    return bool(value)


def grouped_datasets(config: dict[str, Any], per_seed_kind: str) -> list[str]:
    """The datasets whose ``per_seed_kind`` jobs (a plan of :data:`GROUPED`) run as one job per group: none with the
    switch off or with one seed; the retrain stage's every dataset; else the datasets not trained per seed."""
    if not group_seeds(config):
        return []
    if per_seed_kind == "retrain_evaluation":
        from .retrain import block

        b = block(config)
        return list(b["datasets"]) if b and len(b["seeds"]) > 1 else []
    if len(config["seeds"]) < 2:  # one seed: a group would be the same single job under another rule
        return []
    from .final_split import per_seed_datasets

    split = set(per_seed_datasets(config))
    return [d for d in config["datasets"] if d not in split]


def groups(kind: str, config: dict[str, Any], jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The jobs of ``kind`` (a key of :data:`GROUPED`): the per-seed ``jobs`` of its grouped datasets, by group in
    plan order, each ``{<group fields>, "seeds", "members": [per-seed job, ...], "models": [every member's model
    paths]}``. Every group of a kind has the same seeds (a rule's outputs are one list of seeds)."""
    per_seed_kind, fields = GROUPED[kind]
    grouped = set(grouped_datasets(config, per_seed_kind))
    out: dict[tuple, dict[str, Any]] = {}
    for j in jobs:
        if j["dataset"] not in grouped:
            continue
        g = out.setdefault(tuple(j[f] for f in fields), {**{f: j[f] for f in fields}, "seeds": [], "members": [],
                                                         "models": []})
        g["seeds"].append(int(j["seed"]))
        g["members"].append(j)
        g["models"] += [p for p in j["models"].values() if p not in g["models"]]
    seeds = {tuple(g["seeds"]) for g in out.values()}
    if len(seeds) > 1:
        raise ConfigError(f"evaluation.group_seeds: the {per_seed_kind} groups have different seeds {sorted(seeds)}")
    return list(out.values())


def seeds_of(groups_: list[dict[str, Any]]) -> list[int]:
    """The seeds every group of one kind evaluates (none without groups)."""
    return list(groups_[0]["seeds"]) if groups_ else []


__all__ = ["GROUPED", "group_seeds", "grouped_datasets", "groups", "seeds_of"]
