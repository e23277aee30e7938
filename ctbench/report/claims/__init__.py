"""The claims ledger: every claim of the paper, tested against the report outputs with a stated rule, once per
published version of the paper.

``claims.yaml`` (repository root) lists the claims; its header documents the schema and the verdict rules
(:mod:`.schema` validates, :mod:`.rules` judges). :func:`evaluate_claims` reads the report folder (``ctbench report``
outputs) and returns one row per claim with the columns :data:`COLUMNS`: ``verdict`` is the verdict against the
claim's first version (the July 2025 preprint, the version this project reproduces, wherever the claim is in it;
``version`` names it), ``verdict_<version>`` one verdict per published version ("" where the claim is not in that
version), ``versions_note`` says where the authors' versions disagree with each other, ``headline`` ("yes" or
"") marks the claims the book's first page leads with.

Verdicts are deterministic functions of the report files. A missing report file, row or value gives ``not yet
run``; a value the experiment computed but withheld, with its reason, or two sides of a comparison the run did not
separate (``must_differ``), give ``not computable``; a malformed claim entry raises :class:`ClaimsError`. Paper
claims are judged on the paper's nine datasets only: rows of any other dataset a user adds are dropped before a rule
sees the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...facts import VERSION_LABELS
from ..common import dataset_label
from ..tables.training_time import training_times
from .rules import RULE_FUNCTIONS, Missing, NotComputable, fmt
from .schema import (
    BLACK_DATASETS,
    NOT_COMPUTABLE,
    NOT_REPRODUCED,
    NOT_YET_RUN,
    PAPER_DATASETS,
    PARTLY,
    PRIMARY,
    REPRODUCED,
    RULES,
    VERDICTS,
    VERSIONS,
    Claim,
    ClaimsError,
    load_claims,
    validate_claim,
)

__all__ = ["COLUMNS", "NOT_COMPUTABLE", "NOT_REPRODUCED", "NOT_YET_RUN", "PARTLY", "PRIMARY", "REPRODUCED", "RULES",
           "VERDICTS", "VERSIONS", "Claim", "ClaimsError", "evaluate_claim", "evaluate_claims", "load_claims",
           "summarize", "training_times", "validate_claim", "write_verdicts"]

COLUMNS = ["claim", "text", "source", "published", "ours", "interval", "verdict", "version",
           *[f"verdict_{v}" for v in VERSIONS], "versions_note", "note", "headline", "file"]


def _read(report_dir: Path, name: str, cache: dict, black: bool = False) -> pd.DataFrame | None:
    """The report table ``name``, restricted to the datasets of the paper that makes the claim (the CT paper's
    nine, or Black et al.'s for ``black2022`` claims)."""
    key = (name, black)
    if key not in cache:
        p = report_dir / name
        df = pd.read_csv(p) if p.exists() and p.stat().st_size > 0 else None
        if df is not None and "dataset" in df.columns:
            if black:
                df = df[df["dataset"].isin(BLACK_DATASETS)].reset_index(drop=True)
            else:
                df["dataset"] = df["dataset"].map(dataset_label)
                df = df[df["dataset"].isin([*PAPER_DATASETS, "Avg."])].reset_index(drop=True)
        cache[key] = df
    return cache[key]


def _published_text(claim: Claim, version: str) -> str:
    p = claim.for_version(version, "published")
    if claim.rule == "which":
        return f"{p}: " + ", ".join(claim.for_version(version, "expected")) if isinstance(p, str) else str(p)
    return fmt(float(p)) if isinstance(p, int | float) and not isinstance(p, bool) else str(p)


def _versions_note(claim: Claim, published: dict[str, str]) -> str:
    shown = {v: t for v, t in published.items() if t}
    if len(set(shown.values())) <= 1:
        return ""
    return "the authors' versions differ: " + "; ".join(f"{VERSION_LABELS[v]} {t}" for v, t in shown.items())


def evaluate_claim(claim: Claim, report_dir: str | Path, cache: dict | None = None) -> dict[str, Any]:
    """The verdict row of one claim against the report folder, with one verdict per published version."""
    cache = {} if cache is None else cache
    row: dict[str, Any] = {c: "" for c in COLUMNS}
    row.update(claim=claim.id, text=claim.text, source=claim.source, file=claim.file, verdict=NOT_YET_RUN,
               headline="yes" if claim.spec.get("headline") else "")
    df = _read(Path(report_dir), claim.file, cache, black="black2022" in claim.versions)
    results: dict[str, dict[str, Any] | None] = {}
    published: dict[str, str] = {}
    for v in claim.versions:
        published[v] = "" if claim.rule == "cell" else _published_text(claim, v)
        if df is None:
            results[v] = {"verdict": NOT_YET_RUN,
                          "note": f"{claim.file} not in the report (experiment not run in this profile)"}
            continue
        try:
            results[v] = RULE_FUNCTIONS[claim.rule](claim, df, v)
        except NotComputable as exc:
            results[v] = {"verdict": NOT_COMPUTABLE, "note": f"{claim.file}: {exc}"}
        except Missing as exc:
            results[v] = {"verdict": NOT_YET_RUN, "note": f"{claim.file}: {exc}"}
        if results[v] is not None and "published" in results[v]:
            published[v] = results[v].pop("published")
    judged = [v for v in claim.versions if results[v] is not None]
    for v in VERSIONS:
        row[f"verdict_{v}"] = results[v]["verdict"] if results.get(v) is not None else ""
    if judged:
        main = judged[0]
        row.update({k: results[main].get(k, "") for k in ("ours", "interval", "verdict", "note")})
        row["version"] = main
        row["published"] = published[main]
        row["missing"] = list(results[main].get("missing") or [])  # not a column: read by the per-seed judging
    row["versions_note"] = _versions_note(claim, published)
    extra = claim.spec.get("note")
    if extra:
        row["note"] = f"{row['note']}; {extra}" if row["note"] else extra
    return row


def evaluate_claims(claims_yaml: str | Path, report_dir: str | Path) -> pd.DataFrame:
    """Evaluate every claim of ``claims_yaml`` against ``report_dir``; one row per claim, in file order."""
    cache: dict[str, pd.DataFrame | None] = {}
    rows = [evaluate_claim(c, report_dir, cache) for c in load_claims(claims_yaml)]
    return pd.DataFrame(rows, columns=COLUMNS)


def summarize(verdicts: pd.DataFrame, column: str = "verdict") -> dict[str, int]:
    """Number of claims per verdict (all four verdicts present, in :data:`VERDICTS` order)."""
    counts = verdicts[column].value_counts() if len(verdicts) else pd.Series(dtype=int)
    return {v: int(counts.get(v, 0)) for v in VERDICTS}


def write_verdicts(claims_yaml: str | Path, report_dir: str | Path, out: str | Path | None = None,
                   seeds: pd.DataFrame | None = None, cells: pd.DataFrame | None = None,
                   write_seeds: bool = True) -> Path:
    """Evaluate the claims and write ``verdicts.csv`` and ``verdicts.md`` (default: into ``report_dir``).

    ``seeds``: the claims judged per training seed (:func:`.seeds.judge_seeds`); then each verdict gets its share of
    seeds under which the claim holds beside it (:data:`.seeds.SEED_COLUMNS`) and the per-seed verdicts are written
    to ``verdicts_seeds.csv`` / ``.md`` next to ``verdicts.csv``; ``cells``: the Table-1 cells per seed
    (:mod:`.cell_seeds`), written to ``table1_seeds.csv`` there. ``write_seeds=False``: ``seeds`` was read from the
    per-seed ledger job's files (:mod:`.ledger`), which stay as they are; only the shares are added."""
    from ...io import atomic_write_text
    from ..markdown import frame_to_markdown
    from .shares import with_seed_shares

    df = evaluate_claims(claims_yaml, report_dir)
    out = Path(out) if out is not None else Path(report_dir) / "verdicts.csv"
    if seeds is not None:
        df = with_seed_shares(df, seeds)
        if write_seeds:
            from .ledger_files import write_seed_files

            write_seed_files(out.parent, seeds, cells)
    atomic_write_text(out, df.to_csv(index=False))
    atomic_write_text(out.with_suffix(".md"), frame_to_markdown(df.drop(columns=["file"])))
    return out


