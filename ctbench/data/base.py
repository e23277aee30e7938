"""The container every dataset loader returns, and the split helpers shared by the loaders."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Dataset:
    """Train/validation/test splits of one dataset plus the metadata that search and training need.

    Arrays are float32 features ``(n, D)`` and int64 class labels ``0..K-1``. ``domain`` is a ``(lower, upper)``
    pair of per-feature lists, inferred from train+validation rows (reference §3). ``protected`` are the 0-based
    indices of the features that the paper's mutability runs make immutable. ``categorical_groups`` list the
    column indices of each one-hot group (used for snapping at evaluation).
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: list[str]
    n_classes: int
    domain: tuple[list[float], list[float]] | None = None
    protected: list[int] = field(default_factory=list)
    categorical_groups: list[list[int]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])

    def summary(self) -> dict[str, Any]:
        y_all = np.concatenate([self.y_train, self.y_val])
        share = np.bincount(y_all, minlength=self.n_classes) / max(len(y_all), 1)
        return {
            "dataset": self.name, "train": len(self.y_train), "val": len(self.y_val), "test": len(self.y_test),
            "features": self.n_features, "classes": self.n_classes,
            "balance": "/".join(f"{s:.2f}" for s in share),
            "protected": _describe_features(self.feature_names, self.protected),
        }


def _describe_features(names: list[str], idx: list[int], limit: int = 4) -> str:
    if not idx:
        return ""
    if len(idx) <= limit:
        return ", ".join(names[i] for i in idx)
    return f"{len(idx)} features ({names[idx[0]]} … {names[idx[-1]]})"


def stratified_val_split(y: np.ndarray, n_val: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """CE.jl ``train_test_split(keep_class_ratio=true)``: per class, ``floor(share·n_val)`` random rows go to
    validation; the remaining rows keep their original order. Returns (train_idx, val_idx)."""
    y = np.asarray(y)
    n = len(y)
    if not 0 <= n_val < n:
        raise ValueError(f"n_val={n_val} must lie in [0, {n})")
    test_size = n_val / n
    val = []
    for c in np.unique(y):
        members = np.flatnonzero(y == c)
        k = int(np.floor(test_size * len(members)))
        if k:
            val.append(rng.choice(members, size=k, replace=False))
    val_idx = np.sort(np.concatenate(val)) if val else np.empty(0, dtype=np.int64)
    mask = np.ones(n, dtype=bool)
    mask[val_idx] = False
    return np.flatnonzero(mask), val_idx
