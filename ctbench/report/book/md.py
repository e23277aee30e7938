"""Markdown building blocks of the book's includes: the "not yet run" note, CSV reading, cell formatting, tables
and figures in MyST. Shared by the renderers (:mod:`.table_pages`, :mod:`.figure_pages`, :mod:`.meta_pages`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ...facts import AVERAGE
from ...facts import PAPER_LABELS as DATASET_LABELS
from ...facts import PAPER_ORDER as _PAPER_ORDER

GENERATED = "_generated"
#: report files copied into the book (everything else in the report folder is ignored)
COPY_SUFFIXES = (".csv", ".md", ".png", ".svg", ".jpg", ".pdf", ".json")
#: the paper's dataset labels in its order, then the average row
PAPER_ORDER = [*_PAPER_ORDER, AVERAGE]

# --------------------------------------------------------------------------------------------------- helpers


def _note(file: str, what: str = "") -> str:
    what = f" ({what})" if what else ""
    return (f"```{{note}}\nNot yet run in this profile: `{file}` is not in the report folder{what}. "
            f"Run the corresponding workflow stage, then rebuild the book.\n```\n")


def _read_csv(report: Path | None, name: str) -> pd.DataFrame | None:
    if report is None:
        return None
    p = report / name
    if not p.exists() or p.stat().st_size == 0:
        return None
    try:
        # setting columns mix numbers and words (0.1, true, predicted): read them as written
        df = pd.read_csv(p, dtype={"reference_setting": str, "paper_setting": str})
    except pd.errors.EmptyDataError:
        return None
    return None if df.empty else df


def _isnan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _num(v: Any, digits: int = 2) -> str:
    if _isnan(v):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    try:
        return f"{float(v):.{digits}f}"
    except (TypeError, ValueError):
        return str(v)


def _truthy(v: Any) -> bool | None:
    if _isnan(v):
        return None
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes")
    return bool(v)


def _esc(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _text(s: Any) -> str:
    """Data-derived text for a Markdown cell: no emphasis, math or code spans by accident."""
    if _isnan(s):
        return ""
    out = str(s)
    for ch in ("\\", "*", "$", "`", "_"):
        out = out.replace(ch, "\\" + ch)
    return out


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _sort(df: pd.DataFrame) -> pd.DataFrame:
    if "dataset" not in df.columns:
        return df
    df = df.assign(dataset=df["dataset"].map(lambda d: DATASET_LABELS.get(d, d)))
    rank = {d: i for i, d in enumerate(PAPER_ORDER)}
    return df.sort_values("dataset", key=lambda s: s.map(lambda d: rank.get(d, len(rank))), kind="stable")


def _figure(rel: str, caption: str, name: str | None = None) -> str:
    label = f":name: {name}\n" if name else ""
    return f"```{{figure}} /{GENERATED}/report/{rel}\n{label}:width: 90%\n\n{caption}\n```\n"

