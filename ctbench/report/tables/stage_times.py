"""CPU time per workflow stage, from the jobs' benchmark records (``<benchmarks>/<stage>/<job>.tsv``): each job's
own record (``<job>.cpu.json``, :mod:`ctbench.cpu_record`) where it has one, else Snakemake's, which under-counts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...cpu_record import read, record_path

#: an own record belongs to the Snakemake record's run when it spans no more than that run (its wall at most
#: Snakemake's + 5 s + 10%) and was written during it (its file no older than the Snakemake record's less the run's
#: wall and 60 s). Shorter is allowed: on a starved machine the shell and the wrapper's start can take many seconds
#: of Snakemake's wall (a lower bound dropped real records, tests/test_reruns.py::test_jobs_count_their_own_cpu)
WALL_SLACK = (5.0, 0.1)
WRITTEN_SLACK = 60.0


def _same_run(own: dict[str, float], wall: float, tsv: Path) -> bool:
    if own["wall_seconds"] > wall + WALL_SLACK[0] + WALL_SLACK[1] * wall:
        return False
    return record_path(tsv).stat().st_mtime >= tsv.stat().st_mtime - wall - WRITTEN_SLACK


def _number(frame: pd.DataFrame, column: str) -> float:
    return float(pd.to_numeric(frame.get(column, pd.Series([float("nan")])).iloc[0], errors="coerce"))


def job_record(tsv: Path) -> dict[str, float | str] | None:
    """Wall and CPU seconds and peak RSS (MB) of one job, and which record they come from (``own`` or
    ``snakemake``); None for an empty Snakemake record."""
    b = pd.read_csv(tsv, sep="\t")
    if b.empty:
        return None
    wall = float(b["s"].iloc[0])
    own = read(record_path(tsv))
    if own is not None and _same_run(own, wall, tsv):
        return {"wall_seconds": wall, "cpu_seconds": own["cpu_seconds"], "max_rss_mb": own["max_rss_mb"],
                "record": "own"}
    return {"wall_seconds": wall, "cpu_seconds": _number(b, "cpu_time"), "max_rss_mb": _number(b, "max_rss"),
            "record": "snakemake"}


JOB_COLUMNS = ["stage", "job", "wall_seconds", "cpu_seconds", "max_rss_mb", "record"]


def job_records(benchmarks_dir: str | Path) -> pd.DataFrame:
    """One row per job (``stage`` = its record's folder, ``job`` = the record's name, which holds the job's wildcard
    values): what a critical path over the DAG needs after the run's folder is gone
    (``benchmarks/critical_path.py --records``)."""
    rows = []
    for tsv in sorted(Path(benchmarks_dir).glob("*/*.tsv")):
        rec = job_record(tsv)
        if rec is not None:
            rows.append({"stage": tsv.parent.name, "job": tsv.stem, **rec})
    return pd.DataFrame(rows, columns=JOB_COLUMNS)


def stage_times(benchmarks_dir: str | Path, jobs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per stage: jobs, summed wall and CPU seconds, the largest resident memory (MB), and how many of the
    jobs' CPU seconds come from their own record (``own_records``; the others are Snakemake's)."""
    df = job_records(benchmarks_dir) if jobs is None else jobs.copy()
    if df.empty:
        return pd.DataFrame(columns=["stage", "jobs", "wall_seconds", "cpu_seconds", "max_rss_mb", "own_records"])
    df["own"] = (df["record"] == "own").astype(int)
    out = df.groupby("stage", sort=False).agg(jobs=("job", "count"), wall_seconds=("wall_seconds", "sum"),
                                              cpu_seconds=("cpu_seconds", "sum"),
                                              max_rss_mb=("max_rss_mb", "max"),
                                              own_records=("own", "sum")).reset_index()
    total = out[["jobs", "wall_seconds", "cpu_seconds", "own_records"]].sum().to_frame().T.assign(
        stage="total", max_rss_mb=out["max_rss_mb"].max())
    out = pd.concat([out, total], ignore_index=True)[["stage", "jobs", "wall_seconds", "cpu_seconds", "max_rss_mb",
                                                     "own_records"]]
    out[["jobs", "own_records"]] = out[["jobs", "own_records"]].astype(int)
    return out
