"""Encoding of a tabular dataset's table (the TaijaData/MLJ recipe, reference §6.2 step 3): z-score the numeric columns
with statistics of the training rows only and one-hot the categorical columns in place.

Hand-written on purpose: MLJ's ``Standardizer`` divides by the Bessel-corrected standard deviation (scikit-learn's
``StandardScaler`` by the population one) and leaves constant columns unscaled, and the one-hot columns follow the
reference's level orders; the reference numbers depend on both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


@dataclass
class RawTable:
    """A table in final row order: feature columns (original order), labels, categorical level orders."""

    frame: pd.DataFrame
    y: np.ndarray
    levels: dict[str, list[Any]] = field(default_factory=dict)  # categorical column -> levels, in column order
    labels: dict[str, list[str]] = field(default_factory=dict)  # optional display labels of those levels


@dataclass
class _Encoded:
    X: np.ndarray
    names: list[str]
    groups: dict[str, list[int]]  # categorical column -> its one-hot column indices
    numeric: list[int]
    mean: list[float]
    std: list[float]


def encode_table(table: RawTable, n_fit: int) -> _Encoded:
    """Standardise numeric columns with statistics of the first ``n_fit`` rows; one-hot categoricals in place."""
    cols: list[np.ndarray] = []
    names: list[str] = []
    groups: dict[str, list[int]] = {}
    numeric: list[int] = []
    mean: list[float] = []
    std: list[float] = []
    for col in table.frame.columns:
        values = table.frame[col].to_numpy()
        if col in table.levels:
            levels = table.levels[col]
            labels = table.labels.get(col, [str(v) for v in levels])
            onehot = values[:, None] == np.asarray(levels, dtype=object)[None, :]
            bad = ~onehot.any(axis=1)
            if bad.any():
                raise ValueError(f"column {col!r}: value {values[bad][0]!r} is not one of the levels {levels}")
            groups[col] = list(range(len(names), len(names) + len(levels)))
            cols.extend(onehot.T.astype(np.float64))
            names.extend(f"{col}__{lab}" for lab in labels)
        else:
            x = values.astype(np.float64)
            mu = float(x[:n_fit].mean())
            sd = float(x[:n_fit].std(ddof=1))
            numeric.append(len(names))
            mean.append(mu)
            std.append(sd)
            cols.append((x - mu) / sd if sd > 0 else x)  # MLJ leaves constant columns unscaled
            names.append(str(col))
    X = np.column_stack(cols).astype(np.float32)
    return _Encoded(X, names, groups, numeric, mean, std)
