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


def check_dataset(ds: Any, name: str) -> Any:
    """A loader's result checked before any stage uses it; raises ``ValueError`` naming the dataset and the values:
    a :class:`Dataset`; per split, 2-D features with as many rows as labels and only finite values; labels
    ``0..K-1`` (``K = n_classes``) with at least two classes in the training split; one feature name per column; the
    domain, protected features and one-hot groups within the columns."""
    if not isinstance(ds, Dataset):
        raise ValueError(f"dataset {name!r}: the loader returned a {type(ds).__name__}, not a ctbench.data.Dataset")
    K = ds.n_classes
    if not isinstance(K, (int, np.integer)) or K < 2:
        raise ValueError(f"dataset {name!r}: n_classes={K!r}; a classification dataset has at least 2 classes")
    width = None
    for split in ("train", "val", "test"):
        X, y = getattr(ds, f"X_{split}"), getattr(ds, f"y_{split}")
        X, y = np.asarray(X), np.asarray(y)
        if X.ndim != 2:
            raise ValueError(f"dataset {name!r}: X_{split} has shape {X.shape}; give a 2-D (rows, features) array")
        if width is not None and X.shape[1] != width:
            raise ValueError(f"dataset {name!r}: X_{split} has {X.shape[1]} features, X_train {width}")
        width = X.shape[1]
        if y.ndim != 1 or len(y) != len(X):
            raise ValueError(f"dataset {name!r}: len(X_{split}) = {len(X)} but y_{split} has shape {y.shape}; give "
                             "one label per row")
        if not np.issubdtype(X.dtype, np.number):
            raise ValueError(f"dataset {name!r}: X_{split} has dtype {X.dtype}; features must be numbers")
        if X.size and not np.isfinite(X).all():
            r, c = np.argwhere(~np.isfinite(X))[0]
            n_bad = int((~np.isfinite(X)).sum())
            raise ValueError(f"dataset {name!r}: X_{split} has {n_bad} NaN/Inf value(s), the first at row {r}, "
                             f"feature {c} ({X[r, c]}); impute or drop them in the loader")
        if len(y):
            labels = np.unique(y)
            if not np.issubdtype(y.dtype, np.integer) and not np.array_equal(labels, np.round(labels)):
                raise ValueError(f"dataset {name!r}: y_{split} has non-integer labels {labels[:5].tolist()}; labels "
                                 f"must be the classes 0..{K - 1}")
            if labels.min() < 0 or labels.max() > K - 1:
                raise ValueError(f"dataset {name!r}: y_{split} has labels {labels[:10].tolist()}, but n_classes={K} "
                                 f"allows 0..{K - 1} only; encode the classes as 0..K-1")
        if split == "train" and len(np.unique(y)) < 2:
            raise ValueError(f"dataset {name!r}: the training split has one class only ({np.unique(y).tolist()}, "
                             f"{len(y)} rows); a classifier needs at least two")
    if len(ds.feature_names) != width:
        raise ValueError(f"dataset {name!r}: {len(ds.feature_names)} feature names for {width} features; give one "
                         "name per column")
    if ds.domain is not None:
        lo, hi = ds.domain
        if len(lo) != width or len(hi) != width:
            raise ValueError(f"dataset {name!r}: the domain has {len(lo)}/{len(hi)} bounds for {width} features")
    bad = [i for i in [*ds.protected, *(j for g in ds.categorical_groups for j in g)] if not 0 <= int(i) < width]
    if bad:
        raise ValueError(f"dataset {name!r}: protected/categorical feature index {bad[0]} is outside 0..{width - 1}")
    return ds


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
