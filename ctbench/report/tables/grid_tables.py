"""The grid searches as one table: the mean effect of each value of each grid parameter (appendix D, RQ4).

For every grid, dataset, varied parameter and value: the mean over all grid points with that value (and all
test-time λ_egy) of the % change of IP and cost of valid counterfactuals vs the shared BL model, the share of mature
counterfactuals in the last epoch and the test accuracies and macro F1 of CT and BL (``acc_diff``, ``f1_diff`` = CT −
BL); ``is_min``/``is_max`` mark the parameter's
smallest and largest value (for claims such as "more steps help"). One row per (grid, dataset) with
``parameter = value = "all"`` holds the means over the whole grid. Failed grid points (an ``error``) are left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ..figures.grid_figures import varied_parameters

METRICS = ["ip_change_pct", "cost_change_pct", "share_mature_last", "acc_test_ct", "acc_test_bl", "f1_test_ct",
           "f1_test_bl"]


def grid_effects(paths: Iterable[str | Path]) -> pd.DataFrame:
    frames = [pd.read_csv(p) for p in paths]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    if "error" in df:
        df = df[df["error"].isna() | (df["error"].astype(str).str.strip() == "")]
    metrics = [m for m in METRICS if m in df]
    rows = []
    for (grid, ds), g in df.groupby(["grid", "dataset"], sort=False):
        rows.append({"grid": grid, "dataset": ds, "parameter": "all", "value": "all", "is_min": False,
                     "is_max": False, "n_points": g["point"].nunique(), **g[metrics].mean().to_dict()})
        for param in varied_parameters(g, grid):
            values = list(pd.unique(g[param].dropna()))
            numeric = all(isinstance(v, int | float | np.number) for v in values)
            lo, hi = (min(values), max(values)) if numeric else (None, None)
            for v, gv in g.groupby(param, sort=True):
                rows.append({"grid": grid, "dataset": ds, "parameter": param, "value": v,
                             "is_min": bool(numeric and v == lo), "is_max": bool(numeric and v == hi),
                             "n_points": gv["point"].nunique(), **gv[metrics].mean().to_dict()})
    out = pd.DataFrame(rows)
    if {"acc_test_ct", "acc_test_bl"} <= set(out):
        out["acc_diff"] = out["acc_test_ct"] - out["acc_test_bl"]
    if {"f1_test_ct", "f1_test_bl"} <= set(out):  # chunks from before the F1 was recorded have none
        out["f1_diff"] = out["f1_test_ct"] - out["f1_test_bl"]
    return out
