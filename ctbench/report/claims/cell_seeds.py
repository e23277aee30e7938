"""Every Table-1 cell on each training seed alone, against the July preprint and the final version
(``table1_seeds.csv``, issue 25 item 2): the ten training seeds are re-runs of the whole pipeline, so a cell that
disagrees with a version is within training-seed variation when some seeds alone reach that version, and not when
none does. "Reaches" is the ledger's cell rule (:func:`.rules.rule_cell`): same sign and significance, magnitude
within the cell's tolerance (verdict ``reproduced``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .rules import cell_tolerance, published_cell
from .schema import Claim

#: the file the report writes next to ``verdicts_seeds.csv``
CELL_SEEDS_FILE = "table1_seeds.csv"
#: the versions a cell is compared with on each seed (July: the one this project reproduces; final: its default code)
CELL_VERSIONS = ("preprint_2025_07", "satml_2026")
#: ``note``: why a seed has no value (the seed lacks the cell's inputs: :mod:`.seed_gaps`)
CELL_COLUMNS = ["claim", "dataset", "metric", "seed", "reduction_pct", "significant",
                *[f"{k}_{v}" for v in CELL_VERSIONS for k in ("verdict", "tolerance")], "note"]


def cell_row(claim: Claim, seed: int, table: pd.DataFrame | None, result: dict[str, Any]) -> dict[str, Any] | None:
    """One seed's row of a Table-1 cell claim: the seed's value and star (from its ``table1.csv``, dataset labels),
    the claim's verdict against each of :data:`CELL_VERSIONS` and that version's tolerance; None for other claims."""
    if claim.rule != "cell" or claim.file != "table1.csv":
        return None
    ds, metric = claim.spec["dataset"], claim.spec["metric"]
    row: dict[str, Any] = {"claim": claim.id, "dataset": ds, "metric": metric, "seed": int(seed),
                           "reduction_pct": float("nan"), "significant": pd.NA, "note": ""}
    if table is not None:
        found = table[(table["dataset"] == ds) & (table["metric"] == metric)]
        if len(found):
            row["reduction_pct"] = pd.to_numeric(found["reduction_pct"], errors="coerce").iloc[0]
            row["significant"] = found["significant"].iloc[0]
    for v in CELL_VERSIONS:
        pub = published_cell(v, ds, metric)
        row[f"verdict_{v}"] = result.get(f"verdict_{v}", "")
        row[f"tolerance_{v}"] = cell_tolerance(pub["pm"]) if pub is not None else float("nan")
    return row


def cell_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows of :func:`cell_row` as ``table1_seeds.csv``'s frame, by dataset, metric and seed."""
    return pd.DataFrame(rows, columns=CELL_COLUMNS)


__all__ = ["CELL_COLUMNS", "CELL_SEEDS_FILE", "CELL_VERSIONS", "cell_frame", "cell_row"]
