"""Compare a fresh report folder with the committed result set: which numbers moved, beyond a stated tolerance.

Every table (``*.csv``) of the committed folder is matched with the fresh folder's table of the same name, row by
row on its key columns (the non-numeric columns: dataset, metric, objective, …), column by column. A number moved
when ``|fresh − committed| > atol + rtol·|committed|`` (NaN equals NaN); a text cell moved when it differs.
Columns that measure the machine rather than the method (wall-clock and CPU seconds, memory, paths) are skipped:
they differ between identical runs; so are the values of claims judged on them (the measured training time). The
same config gives the same numbers on the CPU, so the default tolerances are tight; loosen them to compare across
machines or BLAS builds.
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
VOLATILE_FILES = {"benchmarks.csv", "benchmarks_jobs.csv"}
#: report tables whose claims (``verdicts.csv`` rows with this ``file``) may be judged on machine measurements (the
#: measured training time): such a verdict row must exist, but its values are not compared
MEASURED_CLAIM_FILES = {"training_time.csv", "benchmarks.csv"}


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 1e-6
    atol: float = 1e-9


#: columns that identify a row of a report table (everything else is compared as a value)
IDENTITY = ("claim", "dataset", "metric", "objective", "model", "experiment", "seed", "version", "grouping", "grid",
            "parameter", "value", "switch", "method", "source", "part", "attack", "eps", "round", "label", "point")


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


def _tables(folder: Path) -> dict[str, Path]:
    """Report tables by path relative to ``folder`` (subfolders included: ``prop31/``, ``tuning/`` …)."""
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*.csv")) if p.name not in VOLATILE_FILES}


#: tables whose every row pools all datasets or all claims: a slice of the paper (the ``verify`` profile) cannot
#: reproduce them, so ``compare --slice`` leaves them out (as it leaves out the "Avg." rows of the others);
#: ``table1_seeds.csv`` has a row per Table-1 cell claim and seed, the retrain stage's seeds included, whatever the
#: slice ran (its per-seed values are ``table1.csv``'s ``seed_values``, which the slice does compare)
WHOLE_SET_TABLES = ("verdicts.csv", "verdicts_seeds.csv", "table1_agreement.csv", "table3_agreement.csv",
                    "grid_effects.csv", "fidelity_effects.csv", "table1_seeds.csv")
#: key values of rows that pool datasets
POOLED_ROWS = ("Avg.",)


def compare_reports(committed: str | Path, fresh: str | Path, tol: Tolerance = Tolerance(),
                    additions: bool = False, slice_of: bool = False) -> pd.DataFrame:
    """One row per moved cell, missing table or missing row: ``file, key, column, committed, fresh, what``.

    ``additions``: also list tables, rows and columns that only the fresh set has (a "must not change" check wants
    them; a comparison with an older committed set, made before a table existed, does not).

    ``slice_of``: the fresh set is a slice of the committed one (the ``verify`` profile): every number the fresh
    set has is compared, and a fresh table or row the committed set lacks is listed; the committed set's rows the
    slice does not make are not; tables and rows that pool the whole set (:data:`WHOLE_SET_TABLES`,
    :data:`POOLED_ROWS`) are left out."""
    committed, fresh = Path(committed), Path(fresh)
    rows = []
    ours, theirs = _tables(committed), _tables(fresh)
    if slice_of:
        theirs = {n: p for n, p in theirs.items() if Path(n).name not in WHOLE_SET_TABLES}
        ours = {n: p for n, p in ours.items() if n in theirs}
        additions = True
    if additions:
        rows += [{"file": name, "key": "", "column": "", "committed": "", "fresh": "",
                  "what": "table only in the fresh result set"} for name in theirs if name not in ours]
    for name, path in ours.items():
        other = fresh / name
        if name not in theirs:
            rows.append({"file": name, "key": "", "column": "", "committed": "", "fresh": "",
                         "what": "table missing from the fresh result set"})
            continue
        a = pd.read_csv(path, keep_default_na=True)
        b = pd.read_csv(other, keep_default_na=True)
        keys = [k for k in _key_columns(a) if k in b.columns]
        if slice_of:  # only the rows the slice makes, less those that pool datasets
            b = b[~b[keys].isin(POOLED_ROWS).any(axis=1)] if keys else b
            if keys:
                made = pd.MultiIndex.from_frame(b[keys].astype(str))
                a = a[pd.MultiIndex.from_frame(a[keys].astype(str)).isin(made)]
        cols = [c for c in a.columns if c not in keys and not VOLATILE.search(c)]
        a_idx = a.set_index(keys) if keys else a
        b_idx = b.set_index(keys) if keys else b
        if keys and (a_idx.index.duplicated().any() or b_idx.index.duplicated().any()):
            a_idx, b_idx = a.reset_index(drop=True), b.reset_index(drop=True)  # no unique key: compare by position
        if additions:
            rows += [{"file": name, "key": "", "column": c, "committed": "", "fresh": "",
                      "what": "column only in the fresh result set"} for c in b.columns if c not in a.columns]
            rows += [{"file": name, "key": " / ".join(map(str, k)) if isinstance(k, tuple) else str(k), "column": "",
                      "committed": "", "fresh": "", "what": "row only in the fresh result set"}
                     for k in b_idx.index if k not in a_idx.index]
        for key in a_idx.index:
            label = " / ".join(map(str, key)) if isinstance(key, tuple) else str(key)
            if key not in b_idx.index:
                rows.append({"file": name, "key": label, "column": "", "committed": "", "fresh": "",
                             "what": "row missing from the fresh result set"})
                continue
            ra, rb = a_idx.loc[key], b_idx.loc[key]
            if Path(name).name in ("verdicts.csv", "verdicts_seeds.csv") and \
                    str(ra.get("file", "")) in MEASURED_CLAIM_FILES:
                continue
            for c in cols:
                if c not in b_idx.columns:
                    rows.append({"file": name, "key": label, "column": c, "committed": ra[c], "fresh": "",
                                 "what": "column missing from the fresh result set"})
                elif _moved(ra[c], rb[c], tol):
                    rows.append({"file": name, "key": label, "column": c, "committed": ra[c],
                                 "fresh": rb[c], "what": "moved"})
    return pd.DataFrame(rows, columns=["file", "key", "column", "committed", "fresh", "what"])
