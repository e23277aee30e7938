"""Is a training run healthy? The checks that stop a run that diverges or does not learn (both trainers).

A run fails, and is not saved as a normal model, when

1. a mini-batch loss is not finite (more than ``training.max_nonfinite_batches`` times), or the weights are not;
2. **the loss grows far beyond its start**: the mean loss of an epoch exceeds ``training.max_loss_growth``
   (default 10⁴) × max(|loss of the first mini-batch|, 1). The first mini-batch is computed with the untrained
   weights, so its loss is the run's start. Healthy runs stay far below: across the paper-profile grids (1,338
   runs, including the penalty grid's λ_reg = 0 points, whose unregularised logits make the loss swing by
   hundreds) the largest mean epoch loss was 367, at most 367× the start; ``training.lr=1e6`` reaches 10²⁵.
3. **the model does not learn**: after the last epoch its validation accuracy is not above the majority-class rate
   of the validation labels + ``training.majority_margin`` (default 0.02), i.e. it is no better than always
   predicting the most frequent class. This is judged only where it means something: at least
   :data:`MIN_UPDATES` optimiser updates (a smoke run of 3 epochs on 600 rows, 60 updates, may legitimately still be
   at chance), at least :data:`MIN_VAL_ROWS` validation rows, and a majority class holding at most
   :data:`MAX_MAJORITY_SHARE` of them (on heavily imbalanced data a useful model can sit close to the majority
   rate).

``null`` for ``max_loss_growth`` or ``majority_margin`` turns that check off. ``training.keep_failed: true`` (CLI
``ctbench train --keep-failed``) saves a failed run for inspection, marked ``"training_status": "failed"`` in its
sidecar; :func:`ctbench.api.load_model` refuses such a model unless asked (``allow_failed=True``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

#: fewest optimiser updates after which a model at the majority-class rate counts as not learning
MIN_UPDATES = 200
#: fewest validation rows for the majority-rate check
MIN_VAL_ROWS = 20
#: the majority-rate check is skipped when the most frequent class holds more than this share of validation rows
MAX_MAJORITY_SHARE = 0.9


class TrainingFailedError(RuntimeError):
    """A training run failed (diverged or did not learn); nothing is saved unless ``training.keep_failed``.

    ``log``: the per-epoch log up to the failure (the figures); ``model``: the model as it was when it stopped.
    """

    def __init__(self, message: str, log: pd.DataFrame | None = None, model: Any = None):
        super().__init__(message)
        self.log = log if log is not None else pd.DataFrame()
        self.model = model


class TrainingDivergedError(TrainingFailedError):
    """The loss or the weights became NaN/Inf, or the loss grew far beyond its start."""


class TrainingDidNotLearnError(TrainingFailedError):
    """The model ended at the majority-class rate on the validation data."""


def growth_limit(start_loss: float, factor: float | None) -> float | None:
    """The largest allowed mean epoch loss for a run whose first mini-batch loss was ``start_loss``."""
    if factor is None or not math.isfinite(start_loss):
        return None
    return float(factor) * max(abs(start_loss), 1.0)


def growth_message(mean_loss: float, start_loss: float, epoch: int, factor: float) -> str | None:
    """Why the run diverged at ``epoch`` (its mean loss is beyond the growth limit), or None."""
    limit = growth_limit(start_loss, factor)
    if limit is None or not mean_loss > limit:
        return None
    return (f"mean loss {mean_loss:.4g} at epoch {epoch} exceeds training.max_loss_growth={factor:g} × "
            f"max(|first-batch loss {start_loss:.4g}|, 1) = {limit:.4g}. Lower training.lr or the penalty "
            "strengths (objective.lambda_*), or set training.max_loss_growth: null to turn this check off.")


def majority_rate(y_val: Any, n_classes: int) -> float | None:
    """Share of the most frequent class among the validation labels (None without validation data)."""
    if y_val is None:
        return None
    y = np.asarray(y_val.cpu() if hasattr(y_val, "cpu") else y_val).astype(np.int64).reshape(-1)
    if y.size == 0:
        return None
    return float(np.bincount(y, minlength=n_classes).max() / y.size)


def learning_message(acc_val: float, y_val: Any, n_classes: int, n_updates: int, margin: float | None) -> str | None:
    """Why the model did not learn (validation accuracy at the majority-class rate), or None (see module doc)."""
    if margin is None or y_val is None or len(y_val) < MIN_VAL_ROWS or n_updates < MIN_UPDATES:
        return None
    rate = majority_rate(y_val, n_classes)
    if rate is None or rate > MAX_MAJORITY_SHARE or not math.isfinite(acc_val) or acc_val > rate + margin:
        return None
    return (f"validation accuracy {acc_val:.4f} after {n_updates} updates is not above the majority-class rate "
            f"{rate:.4f} + training.majority_margin={margin:g}: the model is no better than always predicting the "
            "most frequent class. Check the data and the labels, lower or raise training.lr, train longer "
            "(training.epochs), or set training.majority_margin: null to turn this check off.")


__all__ = ["MAX_MAJORITY_SHARE", "MIN_UPDATES", "MIN_VAL_ROWS", "TrainingDidNotLearnError", "TrainingDivergedError",
           "TrainingFailedError", "growth_limit", "growth_message", "learning_message", "majority_rate"]
