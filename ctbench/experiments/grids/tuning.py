"""The tuning stage's choice of (tau, lambda_reg) per dataset from the tune / tune_lr chunk CSVs (Notes 9-12)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .runner import read_chunks

SELECTION_RULE = (
    "Per (tau, lambda_reg), average over all rows of the dataset (test-time lambda_energy, seeds and, in tune_lr, "
    "step sizes): ip_change_pct, cost_change_pct, acc_test_ct, acc_test_bl. Eligible: mean CT test accuracy >= mean "
    "BL test accuracy - max_acc_drop (1 pp by default). Choose the eligible pair with the largest IP reduction "
    "(lowest ip_change_pct); ties -> lower cost_change_pct, then higher CT accuracy, then smaller lambda_reg and tau. "
    "If no pair is eligible: the pair with the highest CT test accuracy (ties -> lowest ip_change_pct)."
)


def select_best(tune_csvs: Iterable[str | Path] | pd.DataFrame, dataset: str, *, max_acc_drop: float = 0.01,
                grids: Sequence[str] = ("tune", "tune_lr")) -> dict[str, Any]:
    """Choose (τ, λ_reg) for ``dataset`` from tuning chunk CSVs by :data:`SELECTION_RULE`.

    Returns ``{"dataset", "best": {"tau", "lambda_reg"}, "eligible", "rule", "max_acc_drop", "grids",
    "candidates": [...]}``; ``best`` is what ``paper_settings.final_hyperparameters(dataset, best)`` takes.
    """
    df = tune_csvs.copy() if isinstance(tune_csvs, pd.DataFrame) else read_chunks(tune_csvs)
    df = df[(df["dataset"] == dataset) & df["grid"].isin(list(grids))]
    if df.empty:
        raise ValueError(f"select_best: no rows for dataset {dataset!r} in grids {list(grids)}")
    agg = (df.groupby(["tau", "lambda_reg"])
           .agg(ip_change_pct=("ip_change_pct", "mean"), cost_change_pct=("cost_change_pct", "mean"),
                acc_test_ct=("acc_test_ct", "mean"), acc_test_bl=("acc_test_bl", "mean"),
                validity_ct=("validity_ct", "mean"), n_rows=("point", "size"))
           .reset_index())
    agg["acc_drop"] = agg["acc_test_bl"] - agg["acc_test_ct"]
    agg["eligible"] = (agg["acc_drop"] <= max_acc_drop + 1e-12) & np.isfinite(agg["ip_change_pct"])
    cand = agg[agg["eligible"]]
    if len(cand):
        chosen = cand.sort_values(["ip_change_pct", "cost_change_pct", "acc_test_ct", "lambda_reg", "tau"],
                                  ascending=[True, True, False, True, True], na_position="last").iloc[0]
        eligible = True
    else:
        chosen = agg.sort_values(["acc_test_ct", "ip_change_pct", "lambda_reg", "tau"],
                                 ascending=[False, True, True, True], na_position="last").iloc[0]
        eligible = False
    return {
        "dataset": dataset, "best": {"tau": float(chosen["tau"]), "lambda_reg": float(chosen["lambda_reg"])},
        "eligible": eligible, "rule": SELECTION_RULE, "max_acc_drop": max_acc_drop, "grids": list(grids),
        "candidates": json.loads(agg.to_json(orient="records")),
    }


def write_best(tune_csvs: Iterable[str | Path], dataset: str, out_json: str | Path, **kw: Any) -> dict[str, Any]:
    """Write ``out_json`` = ``{"tau", "lambda_reg"}`` (the final stage's input) and ``out_json + ".json"`` with the
    rule, the candidate table, the inputs and provenance. Returns the selection."""
    from ...io import atomic_write_json, provenance

    paths = [str(p) for p in tune_csvs]
    sel = select_best(paths, dataset, **kw)
    out_json = Path(out_json)
    atomic_write_json(out_json.with_name(out_json.name + ".json"),
                      {**sel, "inputs": paths, "provenance": provenance()})
    atomic_write_json(out_json, sel["best"])
    return sel

