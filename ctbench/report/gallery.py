"""Sort a report folder's results into one folder per workflow stage, for Snakemake's own report.

``ctbench report`` writes many tables into one folder that the workflow declares only through ``index.json``;
Snakemake's report can only show files that a rule declares with ``report(...)``. The ``report_gallery`` rule runs
:func:`write_gallery` (``ctbench gallery``) and declares each stage folder as ``report(directory(...),
patterns=...)``, so that
``snakemake --report report.html`` shows the tables and figures in one category per stage. Files are copied (the
report folder is a few MB), never changed; a file that matches no stage goes to ``other`` so nothing new is lost.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import tempfile
from pathlib import Path

#: stage folder → file patterns (relative to the report folder); first match wins
STAGES: dict[str, tuple[str, ...]] = {
    "claims": ("verdicts.csv", "verdicts_seeds.csv"),
    "paper_tables": ("table1*.csv", "table2.csv", "table3*.csv", "appendix_*.csv", "ablation.csv",
                     "performance.csv", "ipstar_groupings.csv", "training_time.csv", "redundancy.csv", "datasets.csv"),
    "figures": ("figure1.png", "figure1.csv", "black_figure1.png", "black_figure1.csv", "black_figure2.png",
                "black_figure2.csv", "mnist_*.png"),
    "robustness": ("robustness.csv", "robustness.png"),
    "grids": ("grids/*.png", "grids/*.csv", "tuning.csv", "grid_effects.csv"),
    "prop31": ("prop31/*.png", "prop31/*.csv"),
    "consistency": ("consistency_*.csv", "consistency_*.png"),
    "fidelity": ("fidelity_effects.csv",),
    "provenance": ("benchmarks.csv", "provenance.json", "index.json"),
}
#: what the gallery shows: tables as CSV (Snakemake renders them as tables), figures as PNG, provenance as JSON
SHOWN = (".csv", ".png", ".json")


def stage_of(rel: str) -> str | None:
    """The stage folder of a report file (path relative to the report folder), ``other`` when no pattern fits and
    ``None`` when it is not shown (Markdown copies of tables, PDF copies of figures, sidecars)."""
    if not rel.endswith(SHOWN) or rel.endswith((".csv.json", ".gz.json")) or rel.startswith("_generated/"):
        return None
    for stage, patterns in STAGES.items():
        if any(fnmatch.fnmatch(rel, p) for p in patterns):
            return stage
    return None if rel.endswith(".json") else "other"


def write_gallery(report: str | Path, out: str | Path) -> dict[str, list[str]]:
    """Copy the report's results into ``out/<stage>/`` (every stage folder exists, possibly empty); returns
    stage → file names. A file keeps its name; one under ``other`` keeps its sub-folder as a ``__`` prefix."""
    report, out = Path(report), Path(out)
    if not (report / "index.json").exists():
        raise FileNotFoundError(f"gallery: {report} is not a report folder (index.json missing); run `ctbench report`")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    written: dict[str, list[str]] = {stage: [] for stage in (*STAGES, "other")}
    for stage in written:
        (tmp / stage).mkdir()
    for p in sorted(report.rglob("*")):
        rel = p.relative_to(report).as_posix()
        stage = stage_of(rel) if p.is_file() else None
        if stage is None:
            continue
        name = p.name if stage != "other" else rel.replace("/", "__")
        shutil.copy2(p, tmp / stage / name)
        written[stage].append(name)
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    return written
