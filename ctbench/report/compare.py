"""Compare a fresh report folder with the committed result set: which numbers moved, beyond a stated tolerance.

Every table (``*.csv``) of the committed folder is matched with the fresh folder's table of the same name, row by
row on its key columns (the non-numeric columns: dataset, metric, objective, …), column by column. A number moved
when ``|fresh − committed| > atol + rtol·|committed|`` (NaN equals NaN); a text cell moved when it differs.
Columns that measure the machine rather than the method (wall-clock and CPU seconds, memory, paths) are skipped:
they differ between identical runs. The same config gives the same numbers on the CPU, so the default tolerances
are tight; loosen them to compare across machines or BLAS builds.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

#: columns that describe the run's machine, not its results
VOLATILE = re.compile(r"(seconds|wall|cpu|rss|_s$|^s$|path|time)", re.IGNORECASE)
#: tables that are all machine measurements
VOLATILE_FILES = {"benchmarks.csv"}


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 1e-6
    atol: float = 1e-9


#: columns that identify a row of a report table (everything else is compared as a value)
IDENTITY = ("claim", "dataset", "metric", "objective", "model", "experiment", "seed", "version", "grouping", "grid",
            "parameter", "value", "switch", "method", "source", "part", "attack", "eps", "round", "label")


def _key_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in IDENTITY if c in df.columns]


def _moved(a, b, tol: Tolerance) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return str(a) != str(b) and not (pd.isna(a) and pd.isna(b))
    if pd.isna(a) and pd.isna(b):
        return False
    if pd.isna(a) or pd.isna(b):
        return True
    a, b = float(a), float(b)
    if math.isinf(a) or math.isinf(b):
        return a != b
    return abs(b - a) > tol.atol + tol.rtol * abs(a)


def compare_reports(committed: str | Path, fresh: str | Path, tol: Tolerance = Tolerance()) -> pd.DataFrame:
    """One row per moved cell, missing table or missing row: ``file, key, column, committed, fresh, what``."""
    committed, fresh = Path(committed), Path(fresh)
    rows = []
    for path in sorted(committed.glob("*.csv")):
        if path.name in VOLATILE_FILES:
            continue
        other = fresh / path.name
        if not other.exists():
            rows.append({"file": path.name, "key": "", "column": "", "committed": "", "fresh": "",
                         "what": "table missing from the fresh result set"})
            continue
        a = pd.read_csv(path, keep_default_na=True)
        b = pd.read_csv(other, keep_default_na=True)
        keys = [k for k in _key_columns(a) if k in b.columns]
        cols = [c for c in a.columns if c not in keys and not VOLATILE.search(c)]
        a_idx = a.set_index(keys) if keys else a
        b_idx = b.set_index(keys) if keys else b
        if keys and (a_idx.index.duplicated().any() or b_idx.index.duplicated().any()):
            a_idx, b_idx = a.reset_index(drop=True), b.reset_index(drop=True)  # no unique key: compare by position
        for key in a_idx.index:
            label = " / ".join(map(str, key)) if isinstance(key, tuple) else str(key)
            if key not in b_idx.index:
                rows.append({"file": path.name, "key": label, "column": "", "committed": "", "fresh": "",
                             "what": "row missing from the fresh result set"})
                continue
            ra, rb = a_idx.loc[key], b_idx.loc[key]
            for c in cols:
                if c not in b_idx.columns:
                    rows.append({"file": path.name, "key": label, "column": c, "committed": ra[c], "fresh": "",
                                 "what": "column missing from the fresh result set"})
                elif _moved(ra[c], rb[c], tol):
                    rows.append({"file": path.name, "key": label, "column": c, "committed": ra[c],
                                 "fresh": rb[c], "what": "moved"})
    return pd.DataFrame(rows, columns=["file", "key", "column", "committed", "fresh", "what"])
