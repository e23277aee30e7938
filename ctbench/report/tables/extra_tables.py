"""Report tables beyond the paper's own (issue 24, item 1): the redundancy of counterfactuals (computed by the
evaluation, reported nowhere in the paper) and a description of each dataset as it was used.

* :func:`redundancy_table` — per dataset and experiment, the mean share of features a valid counterfactual leaves
  unchanged (``redundancy``, reference §7: ``|x'_d − x_d| < 1e-5``), CT against BL; read file by file, only the
  columns it needs, so the report's main frame stays as it is.
* :func:`dataset_table` — rows of each split, features, class balance and protected features from the final
  models' sidecars, with the source and licence of the raw files from the data catalogue.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import BadFileError
from ...evaluation.files import read_evaluation
from ..common import dataset_label, paper_sorted

_RED_COLUMNS = ("dataset", "experiment", "objective", "valid", "redundancy")


def _no_rows_of(path: str | Path, experiments: tuple[str, ...]) -> bool:
    """True when a Parquet file's statistics prove it holds no row of ``experiments`` (it is then not read, issue
    21); anything else (CSV, no statistics, an unreadable footer: the reader below decides) False."""
    if Path(path).suffix != ".parquet":
        return False
    import pyarrow.parquet as pq

    from .eval_frames import holds_none_of

    try:
        return holds_none_of(pq.read_metadata(path), set(experiments))
    except (OSError, ValueError):
        return False


def redundancy_table(evaluations: Iterable[str | Path]) -> pd.DataFrame:
    """Mean redundancy of valid counterfactuals of CT (``full``) and BL (``vanilla``) per dataset and experiment
    (``single``, ``mutability``), with the difference CT − BL and the number of valid counterfactuals; empty when
    the files carry no ``redundancy`` column."""
    sums: dict[tuple[str, str, str], list[float]] = {}
    for p in evaluations:
        if _no_rows_of(p, ("single", "mutability")):  # e.g. an ablation file: nothing of it is kept below
            continue
        try:
            df = read_evaluation(p, _RED_COLUMNS)
        except BadFileError:  # write_report reads every evaluation file first and stops on a bad one
            continue
        if not set(_RED_COLUMNS) <= set(df.columns):
            continue
        df = df[df["experiment"].isin(["single", "mutability"]) & df["objective"].isin(["full", "vanilla"])]
        df = df[df["valid"].astype(bool)]
        red = pd.to_numeric(df["redundancy"], errors="coerce")
        g = df.assign(_r=red).dropna(subset=["_r"]).groupby(["dataset", "experiment", "objective"])["_r"]
        for key, s in g.agg(["sum", "count"]).iterrows():
            acc = sums.setdefault(tuple(key), [0.0, 0.0])
            acc[0] += float(s["sum"])
            acc[1] += float(s["count"])
    if not sums:
        return pd.DataFrame()
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for (ds, exp, obj), (total, n) in sorted(sums.items()):
        r = rows.setdefault((ds, exp), {"dataset": dataset_label(ds), "experiment": exp})
        tag = "ct" if obj == "full" else "bl"
        r[f"redundancy_{tag}"] = total / n if n else np.nan
        r[f"n_valid_{tag}"] = int(n)
    out = pd.DataFrame(list(rows.values()))
    for c in ("redundancy_ct", "redundancy_bl", "n_valid_ct", "n_valid_bl"):
        if c not in out.columns:
            out[c] = np.nan
    out["diff"] = out["redundancy_ct"] - out["redundancy_bl"]
    out[["n_valid_ct", "n_valid_bl"]] = out[["n_valid_ct", "n_valid_bl"]].astype("Int64")
    out = out[["dataset", "experiment", "redundancy_ct", "redundancy_bl", "diff", "n_valid_ct", "n_valid_bl"]]
    return paper_sorted(out, reset_index=True)


def dataset_table(models: Iterable[str | Path],
                  sources: dict[str, tuple[str, str]] | None = None) -> pd.DataFrame:
    """One row per dataset of the final models (from the ``dataset.summary`` of their sidecars, as
    :meth:`ctbench.data.Dataset.summary` wrote it at training time): rows of the train/validation/test splits,
    features, classes, the class shares of train+validation, the protected features, and ``sources[name]`` =
    (source, licence) of the raw files (the ``ctbench report`` command looks them up in the data catalogue: the
    report layer does not import the data layer); a dataset without raw files is ``generated``."""
    seen: dict[str, dict[str, Any]] = {}
    for m in models:
        side = Path(f"{m}.json")
        if not side.exists():
            continue
        ds = json.loads(side.read_text()).get("dataset")
        if isinstance(ds, dict) and isinstance(ds.get("summary"), dict) and ds.get("name") not in seen:
            seen[ds["name"]] = ds["summary"]
    rows = []
    for name, info in seen.items():
        source, licence = (sources or {}).get(name) or ("generated (synthetic)", "generated from a seed")
        rows.append({
            "dataset": dataset_label(name), "n_train": info.get("train"), "n_val": info.get("val"),
            "n_test": info.get("test"), "n_features": info.get("features"), "n_classes": info.get("classes"),
            "class_shares": info.get("balance"), "protected": info.get("protected"),
            "source": source, "licence": licence})
    return paper_sorted(pd.DataFrame(rows), reset_index=True) if rows else pd.DataFrame()
