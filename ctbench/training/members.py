"""The members of a population (:class:`Member`, :class:`MemberResult`), the seed and leave-one-out member
builders, the per-member checks made before any training starts, and the key that groups members able to share
one stacked program (:func:`.population.train_population`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..generators.base import Convergence, GradientGenerator
from ..generators.population import batchable
from ..stacked import architecture, stackable
from .objectives import Objective
from .trainer import TrainParams


@dataclass
class Member:
    """One model of a population: its initial model, objective, training parameters and search settings.

    ``rows``: indices of the training rows this member trains on, in order (``None`` = all rows), e.g. the training
    set with one point left out.
    """

    model: nn.Module
    objective: Objective
    params: TrainParams
    generator: GradientGenerator | None = None
    convergence: Convergence = field(default_factory=Convergence)
    name: str = ""
    rows: Any = None

    def describe(self) -> str:
        o = self.objective
        gen = "none" if self.generator is None else self.generator.name
        return (f"member {self.name!r} (objective {o.name}, seed {self.params.seed}, lr {self.params.lr}, "
                f"nce {self.params.nce}, burnin {self.params.burnin}, generator {gen}, "
                f"tau {self.convergence.tau}, T {self.convergence.max_iter})")


@dataclass
class MemberResult:
    """A trained member (``model``, per-epoch ``log``) or a failed one (``model`` None, ``error`` set)."""

    name: str
    model: nn.Module | None
    log: pd.DataFrame
    error: str | None = None
    population_size: int = 1
    population_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def seconds(self) -> float:
        """Wall time of the member's population divided by its size (the amortised cost of one member)."""
        return self.population_seconds / max(self.population_size, 1)


def seed_members(make: Any, seeds: Sequence[int]) -> list[Member]:
    """One member per seed: ``make(seed)`` returns a :class:`Member` (e.g. the random-seed retraining of Black
    et al.: same data, same settings, G seeds)."""
    members = [make(int(s)) for s in seeds]
    for s, m in zip(seeds, members, strict=True):
        if m.params.seed != int(s):
            raise ValueError(f"seed_members: make({s}) returned a member with params.seed {m.params.seed}")
        m.name = m.name or f"seed{s}"
    return members


def leave_one_out_members(make: Any, n_rows: int, left_out: Sequence[int]) -> list[Member]:
    """One member per left-out training row: ``make()`` returns a fresh :class:`Member` (all with the same seed,
    hence the same initial weights); member i trains on every row but ``left_out[i]`` (leave-one-out retraining)."""
    members = []
    for r in left_out:
        r = int(r)
        if not 0 <= r < n_rows:
            raise ValueError(f"leave_one_out_members: row {r} is not in 0..{n_rows - 1}")
        m = make()
        m.rows = np.delete(np.arange(n_rows), r)
        m.name = m.name or f"loo{r}"
        members.append(m)
    return members


def validate_members(members: Sequence[Member], n_rows: int) -> list[torch.Tensor | None]:
    if not members:
        raise ValueError("train_population: no members")
    names = [m.name or str(i) for i, m in enumerate(members)]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"train_population: member names must be unique; repeated: {dup}")
    rows = []
    for i, m in enumerate(members):
        m.name = names[i]
        where = f"member {m.name!r}"
        if not isinstance(m.objective, Objective):
            raise ValueError(f"{where}: objective must be a ctbench.training.Objective, got {type(m.objective)}")
        if not isinstance(m.params, TrainParams):
            raise ValueError(f"{where}: params must be a ctbench.training.TrainParams, got {type(m.params)}")
        if m.objective.needs_counterfactuals and m.generator is None:
            raise ValueError(f"{where}: objective {m.objective.name!r} needs a counterfactual generator")
        if m.params.grad_chunks != 1:
            raise ValueError(f"{where}: training.grad_chunks={m.params.grad_chunks} is for a model trained alone "
                             "(ctbench train); a population takes each mini-batch whole: set it to 1")
        if not isinstance(m.model, nn.Module):
            raise ValueError(f"{where}: model must be a torch.nn.Module")
        if m.rows is None:
            rows.append(None)
            continue
        r = torch.as_tensor(np.asarray(m.rows), dtype=torch.long).reshape(-1)
        if r.numel() == 0:
            raise ValueError(f"{where}: rows is empty; a member needs at least one training row")
        if int(r.min()) < 0 or int(r.max()) >= n_rows:
            raise ValueError(f"{where}: rows must lie in 0..{n_rows - 1} (the training set has {n_rows} rows)")
        if torch.unique(r).numel() != r.numel():
            raise ValueError(f"{where}: rows contains repeated indices")
        rows.append(r)
    return rows


def group_key(m: Member, n_rows: int) -> tuple:
    """Members with equal keys train as one program. Besides the program's shape (architecture, batch size, epochs)
    the key holds what decides a member's rows per mini-batch — its training rows, and whether it has counterfactual
    tuples, how many (nce) and from which epoch (burn-in) — so that no member's sums run over rows padded for another
    member. Padding is exact in mathematics but not in float: a sum over (K, 2) rows changes its last bit in about 30%
    of cases when zero rows are appended (the output bias gradient), so a baseline trained beside CT members, or a
    grid point beside points of another nce, came out different from the same model trained alone. With this key a
    member's weights do not depend on which other members share its population (tests/test_population.py)."""
    can_stack = stackable(m.model) and batchable(m.generator)
    arch = architecture(m.model) if can_stack else ("single", id(m))
    rows = n_rows if m.rows is None else len(m.rows)
    tuples = (m.params.nce, m.params.burnin) if m.objective.needs_counterfactuals else None
    return (arch, m.params.batch_size, m.params.epochs, rows, tuples)

