"""Reading a committed benchmark result file for a chapter's text: absent is allowed (the text says so), a file
that lacks a column the text reads is an error naming it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def read_columns(path: str | Path, columns: list[str]) -> pd.DataFrame | None:
    """The file, or None when it is absent; a file without a needed column stops with its name."""
    if not Path(path).exists():
        return None
    df = pd.read_csv(path)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: column(s) {missing} missing; it has {list(df.columns)}")
    return df


__all__ = ["read_columns"]
