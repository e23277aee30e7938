"""The consistency job's retraining in shards (issue 21: Seizure's job is 593 CPU-s, 534 of them training 200
retrained models, on the DAG's critical path).

A shard job (``ctbench consistency --shard I/K``; :func:`~.consistency.train_shard`, which lives beside the job it
splits so that this module, imported by the job to read shards, imports nothing back) builds the job's members
exactly as the single job does (the same retraining plan, RS seeds and LOO rows, LOO members copied from the same
untrained base) and trains the I-th of K contiguous slices of the retrained members (each model's base excluded),
writing their weights. The merge (``ctbench consistency --retrained SHARD...``) trains only the base model(s) and
takes the retrained models from the shards. A member's weights do not depend on the other members it trains with
(``train_population``: bitwise, tested), so the merged frame is bitwise the single job's
(tests/test_consistency_shards.py). The merge refuses shards of another job or settings, a missing or repeated
shard, and members other than its own plan's, in its own order.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

SHARD_KIND = "consistency-shard"


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/K"`` (0 <= I < K) → (I, K); a clear error otherwise."""
    try:
        i, k = (int(v) for v in str(text).split("/"))
    except ValueError:
        raise ValueError(f"consistency --shard: {text!r} must be I/K, e.g. 0/4") from None
    if not 0 <= i < k:
        raise ValueError(f"consistency --shard: {text!r}: need 0 <= I < K")
    return i, k


def retrained_names(members: dict[str, list]) -> list[str]:
    """The retrained members' names in the single job's order (each label's list without its base, first)."""
    return [m.name for ms in members.values() for m in ms[1:]]


def shard_slice(n: int, shard: int, n_shards: int) -> slice:
    """The ``shard``-th of ``n_shards`` contiguous slices of n members (sizes differ by at most one)."""
    if n_shards > n:
        raise ValueError(f"consistency --shard: {n_shards} shards for {n} retrained models; allowed: 1..{n}")
    bounds = np.linspace(0, n, n_shards + 1).round().astype(int)
    return slice(int(bounds[shard]), int(bounds[shard + 1]))


def shard_identity(job: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    return {"part": job["part"], "dataset": job["dataset"], "seed": int(job.get("seed", 0)), "settings": s}


def write_shard(shard: dict[str, Any], out: str | Path) -> Path:
    """``torch.save`` to ``out`` atomically (a temporary file renamed)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    torch.save(shard, tmp)
    os.replace(tmp, out)
    return out


def load_shards(paths: list[str | Path], job: dict[str, Any], s: dict[str, Any], members: dict[str, list]):
    """``({name: MemberResult}, [shard CPU-s])`` of the retrained members, from the shard files of this job,
    checked: the same job and resolved settings, shards 0..K-1 each once, together exactly the members of the job's
    plan in its order."""
    from ..training.members import MemberResult

    want = shard_identity(job, s)
    shards = []
    for p in paths:
        d = torch.load(p, weights_only=True)
        if not isinstance(d, dict) or d.get("kind") != SHARD_KIND:
            raise ValueError(f"consistency --retrained: {p} is not a shard file of `ctbench consistency --shard`")
        if d["job"] != want:
            raise ValueError(f"consistency --retrained: {p} is a shard of another job or settings "
                             f"({d['job']['part']}/{d['job']['dataset']} seed {d['job']['seed']})")
        shards.append((d["shard"], d["of"], p, d))
    shards.sort(key=lambda t: t[0])
    ks = {k for _, k, _, _ in shards}
    if len(ks) != 1 or [i for i, *_ in shards] != list(range(next(iter(ks)))):
        got = sorted(f"{i}/{k}" for i, k, _, _ in shards)
        raise ValueError(f"consistency --retrained: need shards 0..K-1 of one K, each once; got {got}")
    names, plan = [n for *_, d in shards for n in d["names"]], retrained_names(members)
    if names != plan:
        i = next((i for i, (a, b) in enumerate(zip(names, plan, strict=False)) if a != b), min(len(names), len(plan)))
        raise ValueError(f"consistency --retrained: the shards' members are not this job's retraining plan: member {i} "
                         f"is {names[i] if i < len(names) else 'missing'}, the plan's "
                         f"{plan[i] if i < len(plan) else 'none'} ({len(names)} members, the plan {len(plan)})")
    templates = {m.name: m.model for ms in members.values() for m in ms[1:]}
    out = {}
    for *_, d in shards:
        for name, err, state in zip(d["names"], d["errors"], d["states"], strict=True):
            model = None
            if state is not None:
                model = copy.deepcopy(templates[name]).float()
                model.load_state_dict(state)
                model.eval()
            out[name] = MemberResult(name, model, None, err)
    return out, [float(d["cpu_seconds"]) for *_, d in shards]


__all__ = ["load_shards", "parse_shard", "retrained_names", "shard_identity", "shard_slice", "write_shard"]
