"""Helpers every part of the report shares, each defined once: the datasets' labels (the paper's, and those a
plugin registered, passed in by ``ctbench report``) and the paper's order, reading a report table, the "not yet run"
note, and reading a yes/no cell."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from ..facts import AVERAGE, PAPER_LABELS, PAPER_ORDER

#: the paper's dataset labels in its order, then the average row
PAPER_ROWS = (*PAPER_ORDER, AVERAGE)

#: labels of datasets outside the paper (a plugin's ``label=``), set by :func:`dataset_labels`; the report layer does
#: not import the registry, so the command that builds a report looks them up and passes them in
_EXTRA_LABELS: ContextVar[Mapping[str, str]] = ContextVar("ctbench_dataset_labels",
                                                        default=MappingProxyType({}))


@contextmanager
def dataset_labels(labels: Mapping[str, str]) -> Iterator[None]:
    """Within the block every table, figure and verdict shows a dataset of ``labels`` (name → label) under its label;
    the paper's datasets keep the paper's labels whatever ``labels`` says."""
    token = _EXTRA_LABELS.set({**_EXTRA_LABELS.get(), **labels})
    try:
        yield
    finally:
        _EXTRA_LABELS.reset(token)


def dataset_label(name: str) -> str:
    """The label a dataset shows under: the paper's, else the one passed in by :func:`dataset_labels`, else its
    name."""
    label = PAPER_LABELS.get(name)
    return label if label is not None else _EXTRA_LABELS.get().get(name, name)


def with_labels(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its ``dataset`` names replaced by their labels (:func:`dataset_label`; names without one stay).

    A new frame either way, its columns shared until written (pandas copy-on-write): callers may set columns on it
    without touching the caller's frame, and a 34M-row evaluation frame is not copied."""
    labels = {d: dataset_label(d) for d in df["dataset"].unique()}
    if all(k == v for k, v in labels.items()):
        return df.copy(deep=False)
    return df.assign(dataset=df["dataset"].map(labels))


def paper_sorted(df: pd.DataFrame, *, relabel: bool = False, reset_index: bool = False) -> pd.DataFrame:
    """Rows in the paper's dataset order (:data:`PAPER_ROWS`; other datasets after them, in their order), stable.
    ``relabel`` first maps dataset names to their labels (:func:`dataset_label`); a frame without a ``dataset``
    column is returned as is."""
    if "dataset" not in df.columns:
        return df
    if relabel:
        df = df.assign(dataset=df["dataset"].map(dataset_label))
    rank = {d: i for i, d in enumerate(PAPER_ROWS)}
    out = df.sort_values("dataset", key=lambda s: s.map(lambda d: rank.get(d, len(rank))), kind="stable")
    return out.reset_index(drop=True) if reset_index else out


def read_report_csv(report: str | Path | None, name: str) -> pd.DataFrame | None:
    """The table ``name`` (file name, e.g. ``table1.csv``) of a report folder, or None when there is no folder, no
    file, or no row. Setting columns mix numbers and words (0.1, true, predicted): they are read as written."""
    if report is None:
        return None
    p = Path(report) / name
    if not p.exists() or p.stat().st_size == 0:
        return None
    try:
        df = pd.read_csv(p, dtype={"reference_setting": str, "paper_setting": str})
    except pd.errors.EmptyDataError:
        return None
    return None if df.empty else df


def not_run_note(file: str, what: str = "", stage: str | None = None) -> str:
    """The book's note for a file the report folder lacks: its stage did not run in this profile."""
    what = f" ({what})" if what else ""
    run = f"Run the `{stage}` stage and the report" if stage else "Run the corresponding workflow stage"
    return (f"```{{note}}\nNot yet run in this profile: `{file}` is not in the report folder{what}. "
            f"{run}, then rebuild the book.\n```\n")


def truthy(v: Any) -> bool | None:
    """A yes/no cell as written by pandas or by hand (True, "true", 1, "yes", "*"), None when empty."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes", "*")
    return bool(v)
