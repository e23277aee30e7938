"""Train a population of models at once: G members that share a data set, as one tensor program.

Members may differ in seed, objective and its λ's, nce, burn-in, learning rate, generator (Generic or ECCo and their
parameters) and convergence rule (τ, T, kind); and in the rows they train on (``Member.rows``: e.g. leave-one-out
subsets of one training set). Each member runs exactly the single-model recipe of :func:`~.trainer.train` (reference
§1.2–1.4) with its own random stream, seeded from its own ``params.seed``: its weights, batches and counterfactuals
equal those of a single run with the same settings, up to float round-off (tested). What is shared is the program:
stacked weights (:class:`~ctbench.stacked.StackedMLP`), one forward/backward per mini-batch for all members, one
masked Adam step, and one batched counterfactual search per epoch (:func:`~ctbench.generators.population.
population_search`).

Members that cannot share a program (other architecture, batch size or epochs), and members whose rows per
mini-batch differ (training rows; counterfactual tuples or not, their number and burn-in), are put in separate groups
automatically, so a member's weights never depend on the other members of its population (bitwise, tested); models
that cannot be stacked (not a plain MLP/linear model, or a generator with custom search hooks) run through the
single-model trainer. Members with different search spaces (feature space; the latent space of a
REVISE VAE) share the training program and search once per space each epoch. A member that diverges or does not
learn (:mod:`.health`: non-finite loss or weights, loss far beyond its start, validation accuracy at the
majority-class rate) is reported (name, settings, epoch, figures) and returned without a model (with it, marked by
its ``error``, when its ``params.keep_failed``); the others go on. Invalid per-member settings are rejected before
any training starts.

Modules: :mod:`.members` (members, checks, grouping), :mod:`.population_run` (the stacked training loop) and
:mod:`.population_search` (the batched per-epoch search); this module is the entry point.
"""

from __future__ import annotations

import copy
import time
import warnings
from collections.abc import Sequence
from typing import Any

import torch

from ..constraints import Constraints
from ..fidelity import Fidelity, resolve_fidelity
from .health import TrainingFailedError
from .members import Member, MemberResult, group_key, leave_one_out_members, seed_members, validate_members
from .population_run import PopulationRun
from .population_search import PER_MEMBER_SEARCH_FLOATS
from .trainer import train, training_tensors


def train_population(members: Sequence[Member], X_train: Any, y_train: Any, *, constraints: Constraints | None = None,
                     fidelity: Fidelity | str = "reference", X_val: Any = None, y_val: Any = None,
                     n_classes: int | None = None, device: str | torch.device = "cpu",
                     dtype: torch.dtype = torch.float32, progress: bool = False,
                     log_accuracy: bool = True) -> list[MemberResult]:
    """Train every member; returns one :class:`MemberResult` per member, in order.

    ``log_accuracy=False`` leaves the per-epoch training/validation accuracy of the log as NaN: for large
    populations trained only to be evaluated afterwards (retraining studies) it is a forward pass over the whole
    training set per member and epoch, a third of the training work.

    Members are grouped into populations that can share one program (same architecture, batch size and epochs;
    an MLP or linear model; Generic, ECCo or REVISE generator); each group trains at once. A member that cannot be
    stacked trains alone through :func:`~.trainer.train`.
    """
    fid = resolve_fidelity(fidelity)
    device = torch.device(device)
    X, y, Xv, yv, K = training_tensors(X_train, y_train, X_val, y_val, n_classes, device, dtype)
    rows = validate_members(members, X.shape[0])
    cons = constraints or Constraints(X.shape[1])
    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(members):
        groups.setdefault(group_key(m, X.shape[0]), []).append(i)
    results: list[MemberResult | None] = [None] * len(members)
    for key, idx in groups.items():
        t0 = time.perf_counter()
        if key[0][0] == "single":
            (i,) = idx
            results[i] = _train_single(members[i], rows[i], X, y, cons, fid, Xv, yv, K, device, dtype, progress)
            results[i].population_seconds = time.perf_counter() - t0
            continue
        group = PopulationRun([members[i] for i in idx], [rows[i] for i in idx], X, y, cons, fid, Xv, yv, K, dtype)
        group.log_accuracy = log_accuracy
        for i, res in zip(idx, group.run(progress), strict=True):
            res.population_size, res.population_seconds = len(idx), time.perf_counter() - t0
            results[i] = res
    return results  # type: ignore[return-value]


def _train_single(m: Member, rows, X, y, cons, fid, Xv, yv, K, device, dtype, progress) -> MemberResult:
    Xm, ym = (X, y) if rows is None else (X[rows.to(X.device)], y[rows.to(y.device)])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            model, log = train(copy.deepcopy(m.model).to(dtype), Xm.cpu().numpy(), ym.cpu().numpy(),
                               objective=m.objective, generator=m.generator, params=m.params, constraints=cons,
                               convergence=m.convergence, fidelity=fid, X_val=None if Xv is None else Xv.cpu().numpy(),
                               y_val=None if yv is None else yv.cpu().numpy(), n_classes=K, device=device,
                               progress=progress, dtype=dtype)
    except TrainingFailedError as err:  # its message says "training diverged: ..." or "training did not learn: ..."
        return MemberResult(m.name, err.model if m.params.keep_failed else None, err.log, f"{m.describe()}: {err}")
    return MemberResult(m.name, model, log)


__all__ = ["PER_MEMBER_SEARCH_FLOATS", "Member", "MemberResult", "leave_one_out_members", "seed_members",
           "train_population"]
