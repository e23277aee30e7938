"""The counterfactual-training loop (reference §1.2–1.4, §1.9).

Each epoch (after the burn-in) generates all counterfactuals at once with the current model, in one batched search:
``nce`` factuals drawn without replacement, targets among the classes other than the predicted one, one random
target-class training point x⁺ per counterfactual, immature counterfactuals replaced by x⁺, x⁺ protected under the
mutability constraints. The tuples are split into contiguous groups, group i going with mini-batch i. Mini-batches
come in file order every epoch (Flux's unshuffled DataLoader) unless ``fidelity.shuffle_batches``.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..constraints import Constraints
from ..errors import UserInputError
from ..fidelity import Fidelity, resolve_fidelity
from ..generators.base import Convergence, GradientGenerator
from ..generators.row_chunks import predict_row_chunks
from .grad_chunks import chunked_loss_and_grads
from .health import TrainingDidNotLearnError, TrainingDivergedError, growth_message, learning_message
from .objectives import CounterfactualGroup, Objective


@dataclass(frozen=True)
class TrainParams:
    epochs: int = 100
    batch_size: int = 30
    nce: int | None = 1000
    burnin: float = 0.0
    lr: float = 1e-3
    #: non-finite batch losses tolerated (their update is skipped, as the reference does) before the run stops
    max_nonfinite_batches: int = 0
    #: a failed run (see :mod:`.health`) is still returned/saved for inspection, marked failed
    keep_failed: bool = False
    #: the run diverged when an epoch's mean loss exceeds this × max(|first-batch loss|, 1); None: no check
    max_loss_growth: float | None = 1e4
    #: the run did not learn when its final validation accuracy ≤ majority-class rate + this; None: no check
    majority_margin: float | None = 0.02
    seed: int = 0
    #: each mini-batch's loss and gradients over this many fixed row chunks, summed in order, each chunk at one
    #: intra-op thread and on its own thread up to ``row_workers`` (:mod:`.grad_chunks`); 1: the whole batch at once
    grad_chunks: int = 1

    def __post_init__(self):
        from ..checks import check_value

        for f in fields(self):  # the same rules as the config (ctbench.checks.RULES), also for direct API use
            key = "seed" if f.name == "seed" else f"training.{f.name}"
            object.__setattr__(self, f.name, check_value(key, getattr(self, f.name)))


def split_obs(n: int, k: int) -> list[tuple[int, int]]:
    """Contiguous groups of ``range(n)`` for ``k`` batches: the first ``n % k`` groups get one more (TaijaParallel)."""
    q, r = divmod(n, k)
    bounds, start = [], 0
    for i in range(k):
        size = q + 1 if i < r else q
        bounds.append((start, start + size))
        start += size
    return bounds


def sample_targets(predicted: torch.Tensor, n_classes: int, gen: torch.Generator) -> torch.Tensor:
    """Uniform draw among the K−1 classes other than ``predicted``."""
    shift = torch.randint(1, n_classes, predicted.shape, generator=gen)
    return (predicted + shift) % n_classes


class PositiveSampler:
    """x⁺ draws for one training set: for each target class, one training point of that (true) class, uniformly
    with replacement. The class index is built once, so a trainer can draw every epoch without re-sorting."""

    def __init__(self, y: torch.Tensor, n_classes: int):
        self.counts = torch.bincount(y, minlength=n_classes)
        self.order = torch.argsort(y, stable=True)
        self.starts = torch.cumsum(self.counts, 0) - self.counts

    def __call__(self, target: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        c = self.counts[target]
        if bool((c == 0).any()):
            missing = sorted(set(target[c == 0].tolist()))
            raise ValueError(f"no training points of target class(es) {missing} to draw x⁺ from")
        u = torch.rand(target.shape, generator=gen, dtype=torch.float64)
        return self.order[self.starts[target] + torch.minimum((u * c).long(), c - 1)]


def sample_positives(y: torch.Tensor, target: torch.Tensor, n_classes: int, gen: torch.Generator) -> torch.Tensor:
    """For each target class, the index of one training point of that (true) class, uniformly with replacement."""
    return PositiveSampler(y, n_classes)(target, gen)


@dataclass
class EpochCounterfactuals:
    groups: list[CounterfactualGroup]
    share_mature: float
    mean_steps: float
    search_seconds: float


def generate_epoch_counterfactuals(model: nn.Module, X: torch.Tensor, y: torch.Tensor, n_classes: int,
                                   generator: GradientGenerator, constraints: Constraints, convergence: Convergence,
                                   nce: int | None, n_batches: int, fidelity: Fidelity,
                                   gen: torch.Generator) -> EpochCounterfactuals:
    """Reference §1.3: one sweep of counterfactual generation for an epoch, split into per-batch groups (the search
    and the prediction on the rows of :func:`~ctbench.generators.row_chunks.row_workers`, if any)."""
    t0 = time.perf_counter()
    N = X.shape[0]
    n = N if nce is None else min(max(nce, n_batches), N)
    idx = torch.randperm(N, generator=gen)[:n]
    xf = X[idx.to(X.device)]
    predicted = predict_row_chunks(model, xf).cpu()
    target = sample_targets(predicted, n_classes, gen)
    res = generator.search(model, xf, target.to(X.device), constraints, convergence, gen)
    mature = res.mature
    if fidelity.initially_valid_is_immature:
        mature = mature & ~res.initially_valid
    y_ae = y[idx.to(y.device)] if fidelity.adversarial_label == "true" else predicted.to(y.device)
    x_plus = X[sample_positives(y.cpu(), target, n_classes, gen).to(X.device)]
    x_cf = torch.where(mature[:, None], res.counterfactual, x_plus)
    x_plus = constraints.protect_positive(x_plus, x_cf)
    tgt = target.to(X.device)
    groups = [CounterfactualGroup(x_cf[a:b], res.nascent[a:b], tgt[a:b], x_plus[a:b], y_ae[a:b])
              for a, b in split_obs(n, n_batches)]
    return EpochCounterfactuals(groups, float(mature.float().mean()), float(res.steps.float().mean()),
                                time.perf_counter() - t0)


def _accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    if X.shape[0] == 0:
        return float("nan")
    return float((predict_row_chunks(model, X) == y).float().mean())


def training_tensors(X_train: Any, y_train: Any, X_val: Any, y_val: Any, n_classes: int | None,
                     device: torch.device, dtype: torch.dtype):
    """Checked tensors ``(X, y, X_val, y_val, n_classes)`` for a trainer; a clear error for bad shapes, NaN/Inf
    features or labels outside 0..K−1."""
    X = torch.as_tensor(np.asarray(X_train), dtype=dtype, device=device)
    y = torch.as_tensor(np.asarray(y_train), dtype=torch.long, device=device)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"training data must be X (n, D) and y (n,), got {tuple(X.shape)} and {tuple(y.shape)}")
    if not bool(torch.isfinite(X).all()):
        raise ValueError("training features contain NaN or Inf; clean the data first")
    if X.shape[0] == 0:
        raise UserInputError("training data has no rows; a model needs at least one row of each of two classes")
    K = int(n_classes if n_classes is not None else int(y.max()) + 1)
    if int(y.min()) < 0 or int(y.max()) >= K:
        raise ValueError(f"labels must lie in 0..{K - 1}")
    present = torch.unique(y).tolist()
    if K < 2 or len(present) < 2:
        raise UserInputError(
            f"the training data has one class only (class {present[0]}, all {X.shape[0]} rows; the dataset declares "
            f"{K} class(es)): a classifier needs at least two classes, and counterfactuals need a class to move "
            "to. Check the dataset, its labels and its size parameters (e.g. n_train).")
    Xv = yv = None
    if X_val is not None:
        Xv = torch.as_tensor(np.asarray(X_val), dtype=dtype, device=device)
        yv = torch.as_tensor(np.asarray(y_val), dtype=torch.long, device=device)
        if Xv.ndim != 2 or Xv.shape[1] != X.shape[1] or yv.shape != (Xv.shape[0],):
            raise ValueError(f"validation data must be X (n, {X.shape[1]}) and y (n,), got {tuple(Xv.shape)} and "
                             f"{tuple(yv.shape)}")
    return X, y, Xv, yv, K


def train(model: nn.Module, X_train: Any, y_train: Any, *, objective: Objective,
          generator: GradientGenerator | None, params: TrainParams, constraints: Constraints | None = None,
          convergence: Convergence | None = None, fidelity: Fidelity | str = "reference",
          X_val: Any = None, y_val: Any = None, n_classes: int | None = None,
          device: str | torch.device = "cpu", progress: bool = False,
          dtype: torch.dtype = torch.float32) -> tuple[nn.Module, pd.DataFrame]:
    """Train ``model`` in place with counterfactual training; returns the model and a per-epoch log.

    Raises :class:`~.health.TrainingDivergedError` when more than ``params.max_nonfinite_batches`` batch losses
    are non-finite, the weights stop being finite or the loss grows beyond ``params.max_loss_growth`` × its start,
    and :class:`~.health.TrainingDidNotLearnError` when the model ends at the majority-class rate (see
    :mod:`.health`). Both carry the log up to the failure (``err.log``) and the model (``err.model``).
    """
    fid = resolve_fidelity(fidelity)
    device = torch.device(device)
    X, y, Xv, yv, K = training_tensors(X_train, y_train, X_val, y_val, n_classes, device, dtype)
    cons = constraints or Constraints(X.shape[1])
    conv = convergence or Convergence()
    if objective.needs_counterfactuals and generator is None:
        raise ValueError(f"objective {objective.name!r} needs a counterfactual generator")
    model.to(device=device, dtype=dtype)
    gen = torch.Generator().manual_seed(int(params.seed))
    opt = torch.optim.Adam(model.parameters(), lr=params.lr)
    N, b = X.shape[0], params.batch_size
    batches = [(a, min(a + b, N)) for a in range(0, N, b)]
    burnin_epochs = round(params.burnin * params.epochs)
    nonfinite = 0
    updates = 0
    start_loss: float | None = None  # the loss of the first mini-batch, at the untrained weights
    rows: list[dict[str, Any]] = []

    def failed(kind: type, message: str) -> Exception:
        what = "did not learn" if kind is TrainingDidNotLearnError else "diverged"
        return kind(f"training {what}: {message}", log=pd.DataFrame(rows), model=model)

    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=params.epochs, desc=f"train {objective.name}", unit="epoch")
    try:
        for epoch in range(1, params.epochs + 1):
            t0 = time.perf_counter()
            cf = None
            if objective.needs_counterfactuals and epoch > burnin_epochs:
                model.eval()
                cf = generate_epoch_counterfactuals(model, X, y, K, generator, cons, conv, params.nce, len(batches),
                                                    fid, gen)
            model.train()
            order = torch.randperm(N, generator=gen).to(device) if fid.shuffle_batches else None
            sums: dict[str, float] = {}
            n_ok = 0
            for i, (a, z) in enumerate(batches):
                sel = slice(a, z) if order is None else order[a:z]
                group = cf.groups[i] if cf is not None else None
                if params.grad_chunks == 1:
                    loss, parts = objective(model, X[sel], y[sel], group)
                    grads = None
                else:  # the same bits at any thread count (module grad_chunks)
                    loss, parts, grads = chunked_loss_and_grads(objective, model, X[sel], y[sel], group,
                                                                params.grad_chunks)
                value = float(loss.detach())
                if start_loss is None:
                    start_loss = value
                if not math.isfinite(value):
                    nonfinite += 1
                    detail = ", ".join(f"{k}={float(v.detach()):.4g}" for k, v in parts.items())
                    if nonfinite > params.max_nonfinite_batches:
                        raise failed(TrainingDivergedError,
                                     f"non-finite loss {value} at epoch {epoch}, batch {i + 1} ({detail}); "
                                     f"{nonfinite} non-finite batch(es) in total exceed "
                                     f"training.max_nonfinite_batches={params.max_nonfinite_batches}. Lower the "
                                     "learning rate or the penalty strengths.")
                    warnings.warn(f"skipping non-finite loss at epoch {epoch}, batch {i + 1} ({detail})",
                                  RuntimeWarning, stacklevel=2)
                    continue
                opt.zero_grad(set_to_none=True)
                if grads is None:
                    loss.backward()
                else:
                    for p, g in zip([p for p in model.parameters() if p.requires_grad], grads, strict=True):
                        p.grad = g
                opt.step()
                n_ok += 1
                updates += 1
                sums["loss"] = sums.get("loss", 0.0) + value
                for k, v in parts.items():
                    sums[k] = sums.get(k, 0.0) + float(v.detach())
            if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
                raise failed(TrainingDivergedError, f"model weights became non-finite at epoch {epoch}")
            model.eval()
            row = {"epoch": epoch, "loss": sums.get("loss", float("nan")) / max(n_ok, 1)}
            for k in ("clf", "div", "reg", "adv"):
                row[k] = sums[k] / n_ok if k in sums and n_ok else float("nan")
            row["share_mature"] = cf.share_mature if cf is not None else float("nan")
            row["mean_steps"] = cf.mean_steps if cf is not None else float("nan")
            row["search_seconds"] = cf.search_seconds if cf is not None else 0.0
            row["nonfinite_batches"] = nonfinite
            row["acc_train"] = _accuracy(model, X, y)
            row["acc_val"] = _accuracy(model, Xv, yv) if Xv is not None else float("nan")
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
            if bar is not None:
                bar.set_postfix(loss=f"{row['loss']:.3f}", acc=f"{row['acc_train']:.3f}",
                                mature=f"{row['share_mature']:.2f}")
                bar.update()
            why = growth_message(row["loss"], start_loss, epoch, params.max_loss_growth) if n_ok else None
            if why is not None:
                raise failed(TrainingDivergedError, why)
    finally:
        if bar is not None:
            bar.close()
    why = learning_message(rows[-1]["acc_val"], yv, K, updates, params.majority_margin)
    if why is not None:
        raise failed(TrainingDidNotLearnError, why)
    return model, pd.DataFrame(rows)


__all__ = ["TrainParams", "TrainingDidNotLearnError", "TrainingDivergedError", "generate_epoch_counterfactuals",
           "split_obs", "train"]
