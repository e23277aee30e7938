"""Training seeds as replicates: the evaluation runs of several trained models pooled for the paper's recipe, and a
seed-level estimate of a reduction (one value per training seed, then a t-interval over seeds).

The paper's ± covers only the redrawing of evaluation individuals given one trained CT and one trained BL model; a
second training seed can move a cell by more than that. Used by Table 1 (:mod:`ctbench.report.tables.table1`) and by the
fidelity study (:mod:`ctbench.experiments.fidelity`), so both state the same two uncertainties.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from .aggregate import reduction_table

__all__ = ["SEED_LEVEL", "pool_seeds", "seed_level"]

SEED_LEVEL = 0.95


def pool_seeds(df: pd.DataFrame) -> pd.DataFrame:
    """Runs of different training seeds are different replicates: ``run`` becomes (seed, run)."""
    if "seed" not in df or df["seed"].nunique() <= 1:
        return df
    return df.assign(run=df["seed"].astype(np.int64) * 1_000_000 + df["run"].astype(np.int64))


def seed_level(df: pd.DataFrame, metric: str, kind: str | None = None, label: str | None = None) -> pd.DataFrame:
    """Per dataset: the paper's reduction computed per training seed, then mean, sample sd, Student-t interval
    (level :data:`SEED_LEVEL`) over seeds and ``seed_significant`` when it excludes 0."""
    seeds = sorted(df["seed"].unique()) if "seed" in df else [None]
    per = []
    for s in seeds:
        sub = df if s is None else df[df["seed"] == s]
        r = reduction_table(sub, metric, kind=kind, label=label, avg_row=False)
        per.append(r[["dataset", "reduction_pct"]].assign(seed=s))
    per = pd.concat(per, ignore_index=True)
    rows = []
    for ds, g in per.groupby("dataset", sort=False):
        v = g["reduction_pct"].dropna().to_numpy(float)
        n = len(v)
        mean = v.mean() if n else np.nan
        sd = v.std(ddof=1) if n > 1 else np.nan
        if n > 1 and sd > 0:
            lb, ub = stats.t.interval(SEED_LEVEL, n - 1, loc=mean, scale=sd / np.sqrt(n))
        else:
            lb = ub = np.nan
        rows.append({"dataset": ds, "n_seeds": n, "seed_mean": mean, "seed_sd": sd, "seed_lb": lb, "seed_ub": ub,
                     "seed_significant": bool(lb > 0 or ub < 0) if np.isfinite(lb) else pd.NA,
                     "seed_values": " ".join(f"{x:.2f}" for x in v)})
    return pd.DataFrame(rows, columns=["dataset", "n_seeds", "seed_mean", "seed_sd", "seed_lb", "seed_ub",
                                       "seed_significant", "seed_values"])
