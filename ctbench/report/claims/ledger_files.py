"""The per-seed ledger's files in the report folder (:mod:`.ledger`) and their writer: apart from :mod:`.ledger` so
that the verdicts' writer (:func:`ctbench.report.claims.write_verdicts`) uses it without importing the per-seed
judging, which imports the ledger's own :func:`~ctbench.report.claims.evaluate_claim`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .cell_seeds import CELL_SEEDS_FILE

#: the list of what one run wrote (the workflow rule's declared output)
MANIFEST = "seed_ledger.json"
#: the per-seed verdicts (one row per claim and seed)
SEEDS_FILE = "verdicts_seeds.csv"
#: the report folder's files the ledger writes
FILES = (SEEDS_FILE, "verdicts_seeds.md", CELL_SEEDS_FILE, MANIFEST)


def write_seed_files(out: str | Path, long: pd.DataFrame, cells: pd.DataFrame | None) -> list[str]:
    """``verdicts_seeds.csv`` / ``.md`` and (with ``cells``) ``table1_seeds.csv`` into ``out``; their names."""
    from ...io import atomic_write_text
    from ..markdown import frame_to_markdown

    out = Path(out)
    atomic_write_text(out / SEEDS_FILE, long.to_csv(index=False))
    atomic_write_text(out / "verdicts_seeds.md", frame_to_markdown(long))
    names = [SEEDS_FILE, "verdicts_seeds.md"]
    if cells is not None:
        atomic_write_text(out / CELL_SEEDS_FILE, cells.to_csv(index=False))
        names.append(CELL_SEEDS_FILE)
    return names


__all__ = ["FILES", "MANIFEST", "SEEDS_FILE", "write_seed_files"]
