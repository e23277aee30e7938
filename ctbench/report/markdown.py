"""Markdown tables without extra dependencies (pandas' ``to_markdown`` needs ``tabulate``)."""

from __future__ import annotations

import math

import pandas as pd


def _cell(v, digits: int) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v).replace("|", "\\|")


def frame_to_markdown(df: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (index dropped, floats rounded to ``digits``)."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v, digits) for v in row) + " |")
    return "\n".join(lines) + "\n"
