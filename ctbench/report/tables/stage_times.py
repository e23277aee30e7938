"""CPU time per workflow stage, from Snakemake's ``benchmark:`` files (``<benchmarks>/<stage>/<job>.tsv``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def stage_times(benchmarks_dir: str | Path) -> pd.DataFrame:
    """One row per stage: jobs, summed wall and CPU seconds, the largest resident memory (MB)."""
    rows = []
    for tsv in sorted(Path(benchmarks_dir).glob("*/*.tsv")):
        b = pd.read_csv(tsv, sep="\t")
        if b.empty:
            continue
        rows.append({"stage": tsv.parent.name, "job": tsv.stem, "wall_seconds": float(b["s"].iloc[0]),
                     "cpu_seconds": float(pd.to_numeric(b.get("cpu_time", pd.Series([float("nan")])).iloc[0],
                                                        errors="coerce")),
                     "max_rss_mb": float(pd.to_numeric(b.get("max_rss", pd.Series([float("nan")])).iloc[0],
                                                       errors="coerce"))})
    if not rows:
        return pd.DataFrame(columns=["stage", "jobs", "wall_seconds", "cpu_seconds", "max_rss_mb"])
    df = pd.DataFrame(rows)
    out = df.groupby("stage", sort=False).agg(jobs=("job", "count"), wall_seconds=("wall_seconds", "sum"),
                                              cpu_seconds=("cpu_seconds", "sum"),
                                              max_rss_mb=("max_rss_mb", "max")).reset_index()
    total = out[["jobs", "wall_seconds", "cpu_seconds"]].sum().to_frame().T.assign(stage="total",
                                                                                    max_rss_mb=out["max_rss_mb"].max())
    out = pd.concat([out, total], ignore_index=True)
    out["jobs"] = out["jobs"].astype(int)
    return out
