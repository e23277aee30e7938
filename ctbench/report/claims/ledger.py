"""The per-seed ledger as a job of its own (issue 21): every claim judged on each training seed's tables
(:mod:`.seeds`) and the Table-1 cells per seed (:mod:`.cell_seeds`), written into the report folder as
``verdicts_seeds.csv`` / ``.md`` and ``table1_seeds.csv`` with ``seed_ledger.json`` (:data:`MANIFEST`, the workflow
rule's output) listing them.

It was half of the ``report`` job's CPU and needs none of the pooled tables: it reads the evaluation, robustness and
attribution files and the models' training times. ``ctbench report-seed-ledger`` (rule ``report_seed_ledger``)
writes it; ``ctbench report --seed-ledger <manifest>`` reads the per-seed verdicts back for ``verdicts.csv``'s seed
shares instead of computing them; a report run by hand without it computes them itself through
:func:`compute_seed_ledger`, the same function.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from .ledger_files import FILES, MANIFEST, SEEDS_FILE, write_seed_files


def compute_seed_ledger(claims_yaml: str | Path, *, evaluations: Iterable[str | Path] = (),
                        retrain: Iterable[str | Path] = (), robustness: Iterable[str | Path] = (),
                        attribution: Iterable[str | Path] = (), models: Iterable[str | Path] = (),
                        settings=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-seed verdicts, Table-1 cells per seed). The training times are the report's ``training_time.csv`` frame
    read back from its CSV text, as the report's own judging read the file it had written (same values, same
    dtypes)."""
    from ..tables.paper_tables import training_time_frame
    from .cell_seeds import cell_frame
    from .seeds import seed_verdicts

    models = list(models)
    tt = pd.read_csv(io.StringIO(training_time_frame(models).to_csv(index=False))) if models else None
    if tt is not None and tt.empty:
        tt = None
    cells: list = []
    long = seed_verdicts(claims_yaml, cells, evaluations=list(evaluations), retrain=list(retrain),
                         robustness=list(robustness), attribution=list(attribution), training_time=tt,
                         settings=settings)
    return long, cell_frame(cells)


def write_seed_ledger(out: str | Path, long: pd.DataFrame, cells: pd.DataFrame | None) -> Path:
    """:func:`write_seed_files`, then :data:`MANIFEST` (the files, the seeds, the code's provenance); its path."""
    from ...io import atomic_write_json, provenance

    out = Path(out)
    names = write_seed_files(out, long, cells)
    seeds = sorted({int(s) for s in long["seed"]}) if "seed" in long else []
    atomic_write_json(out / MANIFEST, {"written": names, "seeds": seeds, "rows": len(long),
                                       "provenance": provenance()})
    return out / MANIFEST


def read_seed_ledger(manifest: str | Path) -> pd.DataFrame:
    """The per-seed verdicts the ledger job wrote beside ``manifest``, as :func:`compute_seed_ledger` returned them
    for what :func:`~ctbench.report.claims.shares.with_seed_shares` reads (text as text, empty notes as '', seeds as
    integers)."""
    from ...errors import BadFileError

    manifest = Path(manifest)
    try:
        listed = json.loads(manifest.read_text())["written"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as err:
        raise BadFileError(f"--seed-ledger {manifest}: not a per-seed ledger manifest ({MANIFEST} of `ctbench "
                           f"report-seed-ledger`): {err}") from None
    path = manifest.with_name(SEEDS_FILE)
    if SEEDS_FILE not in listed or not path.is_file():
        raise BadFileError(f"--seed-ledger {manifest}: {SEEDS_FILE} is missing beside it; run `ctbench "
                           "report-seed-ledger` again")
    long = pd.read_csv(path, dtype=str, keep_default_na=False)
    if not {"claim", "seed", "verdict", "note"} <= set(long.columns):
        raise BadFileError(f"{path}: expected the columns claim, seed, verdict, note (a per-seed ledger)")
    long["seed"] = long["seed"].astype(int)
    return long


__all__ = ["FILES", "MANIFEST", "SEEDS_FILE", "compute_seed_ledger", "read_seed_ledger", "write_seed_files",
           "write_seed_ledger"]
