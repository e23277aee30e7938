"""Library replacements of hand-written code give the same numbers, bit for bit.

Each test keeps the hand-written formula that was replaced as the slow reference and compares it with the library
call on non-trivial inputs, so the reference numbers of the committed result set cannot move.
"""

import math

import numpy as np
import pandas as pd
import pytest

from ctbench.evaluation.robustness import _macro_f1_from_labels
from ctbench.report.tables.appendix_tables import _stats


def _macro_f1_by_hand(y_true, y_pred, n_classes=None) -> float:
    """The formula that ``_macro_f1_from_labels`` computed before scikit-learn: per class 2·TP / (2·TP + FP + FN)."""
    y_true, y_pred = np.asarray(y_true).reshape(-1), np.asarray(y_pred).reshape(-1)
    classes = np.union1d(y_true, y_pred)
    if n_classes is not None:
        classes = classes[(classes >= 0) & (classes < n_classes)] if len(classes) else classes
    scores = []
    for c in classes:
        tp = np.sum((y_true == c) & (y_pred == c))
        fp = np.sum((y_true != c) & (y_pred == c))
        fn = np.sum((y_true == c) & (y_pred != c))
        scores.append(2.0 * tp / (2.0 * tp + fp + fn))
    return float(np.mean(scores)) if scores else float("nan")


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def test_macro_f1_by_scikit_learn_equals_the_hand_written_formula():
    rng = np.random.default_rng(0)
    cases = 0
    for i in range(600):
        k = int(rng.integers(2, 12))
        n = int(rng.integers(1, 300))
        y = rng.integers(0, k, n)
        # predictions: right with a random probability, else any class incl. two labels outside [0, k)
        pred = np.where(rng.random(n) < rng.random(), y, rng.integers(0, k + 2, n))
        n_classes = None if i % 3 else k
        new, old = _macro_f1_from_labels(y, pred, n_classes), _macro_f1_by_hand(y, pred, n_classes)
        assert _same(new, old), (i, new, old)
        cases += 0 < old < 1
    assert cases > 500  # most cases are neither perfect nor all wrong
    # edge cases: classes present only in the predictions score 0; nothing in range gives NaN
    assert _macro_f1_from_labels([0, 0, 1, 1], [0, 0, 1, 2]) == _macro_f1_by_hand([0, 0, 1, 1], [0, 0, 1, 2])
    assert _macro_f1_from_labels([0, 0, 1], [0, 1, 1], n_classes=2) == pytest.approx(2 / 3)  # 2·1/(2+0+1) twice
    assert math.isnan(_macro_f1_from_labels([5, 6], [5, 6], n_classes=2))
    assert math.isnan(_macro_f1_from_labels([], []))


def _stats_by_hand(values) -> dict:
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna().to_numpy(float)
    n = len(v)
    sd = float(np.std(v, ddof=1)) if n > 1 else (0.0 if n == 1 else float("nan"))
    return {"mean": float(v.mean()) if n else float("nan"), "sd": sd,
            "se": sd / np.sqrt(n) if n else float("nan"), "n_models": n}


def test_appendix_standard_error_by_scipy_equals_sd_over_root_n():
    rng = np.random.default_rng(1)
    for n in [0, 1, 2, 3, 5, 7, 12, 30, 101] * 20:
        v = pd.Series(rng.normal(rng.normal(), rng.exponential(), n))
        new, old = _stats(v), _stats_by_hand(v)
        assert new.keys() == old.keys()
        assert all(_same(float(new[k]), float(old[k])) for k in new), (n, new, old)
    with_text = pd.Series(["0.5", "x", None, "0.75", "0.25"])
    assert _stats(with_text) == pytest.approx(_stats_by_hand(with_text))
