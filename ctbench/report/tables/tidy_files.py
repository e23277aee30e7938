"""Reading the tidy CSV outputs of ``ctbench robustness`` and ``ctbench attribution`` (one definition for the
tables, the per-seed ledger and the report's figures, :mod:`ctbench.report.figures.report_figures`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ...errors import BadFileError
from ...io import read_csv_file


def read_frames(paths: Iterable[str | Path], what: str = "input", required: Iterable[str] = ()) -> pd.DataFrame:
    """Concatenate tidy CSV outputs (``.csv`` or ``.csv.gz``); an empty list gives an empty frame. A missing,
    truncated or foreign file (without the ``required`` columns) raises ``BadFileError`` naming it."""
    frames = []
    for p in paths:
        df = read_csv_file(p, what)
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise BadFileError(f"{what} {p} lacks the column(s) {missing}: it is not an output of the command that "
                               f"writes {what}s")
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
