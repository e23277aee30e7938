"""CPU time per workflow stage, from the jobs' benchmark records (``<benchmarks>/<stage>/<job>.tsv``): each job's
own record (``<job>.cpu.json``, :mod:`ctbench.cpu_record`) where it has one, else Snakemake's, which under-counts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...cpu_record import read, record_path

#: an own record belongs to the Snakemake record's run when their wall times agree this closely (seconds, share);
#: one that does not (left by another run, or covering one command of several) is not used
WALL_SLACK = (5.0, 0.1)


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
    if own is not None and abs(own["wall_seconds"] - wall) <= WALL_SLACK[0] + WALL_SLACK[1] * wall:
        return {"wall_seconds": wall, "cpu_seconds": own["cpu_seconds"], "max_rss_mb": own["max_rss_mb"],
                "record": "own"}
    return {"wall_seconds": wall, "cpu_seconds": _number(b, "cpu_time"), "max_rss_mb": _number(b, "max_rss"),
            "record": "snakemake"}


def stage_times(benchmarks_dir: str | Path) -> pd.DataFrame:
    """One row per stage: jobs, summed wall and CPU seconds, the largest resident memory (MB), and how many of the
    jobs' CPU seconds come from their own record (``own_records``; the others are Snakemake's)."""
    rows = []
    for tsv in sorted(Path(benchmarks_dir).glob("*/*.tsv")):
        rec = job_record(tsv)
        if rec is not None:
            rows.append({"stage": tsv.parent.name, "job": tsv.stem, **rec})
    if not rows:
        return pd.DataFrame(columns=["stage", "jobs", "wall_seconds", "cpu_seconds", "max_rss_mb", "own_records"])
    df = pd.DataFrame(rows)
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
