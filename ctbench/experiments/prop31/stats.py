"""Statistics of the Proposition 3.1 check: Wilson intervals, per-group shares and the per-setting verdict rows.

A *run* is one (setting, seed) trained in three arms on the same data and start: unprotected CT (``u``), protected
CT (``p``) and the conventionally trained baseline (``bl``). The proposition's conclusion holds in a run when the
protected model's relative sensitivity to the immutable feature is below the unprotected model's (``lowered``);
the practical reference point is the baseline (``lowered_bl``: below the baseline's). A *setting* shows the
conclusion when the Wilson 95% lower bound of its share of runs is above :data:`HOLDS_ABOVE` (a majority of runs,
beyond chance), so the verdict can fail both ways: on a setting where the proposition applies (too few runs) and on
a negative control (the conclusion still "holds" where the proposition's proviso does not).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import pandas as pd

ARMS = ("u", "p", "bl")
#: a setting shows the conclusion when the Wilson 95% lower bound of its share of runs exceeds this
HOLDS_ABOVE = 0.5
#: the reference points of a setting row: column suffix → the per-run flag it counts
REFERENCES = {"u": "lowered", "bl": "lowered_bl"}


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion k/n."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"wilson_interval: need 0 <= k <= n and n > 0, got k={k}, n={n}")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _share(flags: pd.Series, level: float) -> tuple[int, int, float, float, float]:
    k, n = int(flags.astype(bool).sum()), len(flags)
    lo, hi = wilson_interval(k, n, level)
    return k, n, k / n, lo, hi


def summary(df: pd.DataFrame, by: str | Sequence[str] | None = None, level: float = 0.95) -> pd.DataFrame:
    """Share of runs where protection lowered the relative sensitivity, with a Wilson interval, per group.

    Also the share below the baseline (``share_bl``, ``ci_low_bl``, ``ci_high_bl``) where the frame has
    ``lowered_bl``, the median ratio rs_p / rs_u, the median relative sensitivity and |w_imm|, |w_mut| of every arm
    present and the mean training accuracies. Give one ``iteration`` per group (filter, or include it in ``by``).
    """
    keys = [by] if isinstance(by, str) else list(by or [])
    groups = df.groupby(keys, sort=True) if keys else [((), df)]
    arms = [a for a in ARMS if f"rs_{a}" in df.columns]
    rows = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        k, n, share, lo, hi = _share(g["lowered"], level)
        row = {**dict(zip(keys, key, strict=True)), "runs": n, "lowered": k, "share": share, "ci_low": lo,
               "ci_high": hi}
        if "lowered_bl" in g.columns:
            _, _, row["share_bl"], row["ci_low_bl"], row["ci_high_bl"] = _share(g["lowered_bl"], level)
        row["median_ratio"] = float(g["ratio"].median())
        row |= {f"median_rs_{a}": float(g[f"rs_{a}"].median()) for a in arms}
        for feat in ("imm", "mut"):
            row |= {f"median_abs_w_{feat}_{a}": float(g[f"w_{feat}_{a}"].abs().median()) for a in arms}
        row |= {f"acc_{a}": float(g[f"acc_{a}"].mean()) for a in arms}
        rows.append(row)
    return pd.DataFrame(rows)


def setting_row(runs: pd.DataFrame, level: float = 0.95) -> dict:
    """One row of ``prop31_settings.csv`` from the runs of one setting.

    ``runs`` needs per arm ``rs_a`` (relative sensitivity), ``sens_imm_a`` (sensitivity to the immutable feature)
    and ``sens_rest_a`` (to the remaining features), and the flags ``lowered`` and ``lowered_bl``. Per reference
    point r ∈ {u, bl}: ``lowered_vs_r``, ``share_vs_r``, ``ci_low_vs_r``, ``ci_high_vs_r`` and ``holds_vs_r``
    (the Wilson lower bound above :data:`HOLDS_ABOVE`); the medians of every arm; ``acc_a`` the mean accuracy and
    ``mature_a`` the mean share of mature counterfactuals where the runs have them.
    """
    if runs.empty:
        raise ValueError("setting_row: no runs")
    row: dict = {"runs": len(runs)}
    for ref, flag in REFERENCES.items():
        k, _, share, lo, hi = _share(runs[flag], level)
        row |= {f"lowered_vs_{ref}": k, f"share_vs_{ref}": share, f"ci_low_vs_{ref}": lo, f"ci_high_vs_{ref}": hi,
                f"holds_vs_{ref}": bool(lo > HOLDS_ABOVE)}
    for what in ("rs", "sens_imm", "sens_rest"):
        row |= {f"median_{what}_{a}": float(np.nanmedian(runs[f"{what}_{a}"])) for a in ARMS}
    row |= {f"acc_{a}": float(runs[f"acc_{a}"].mean()) for a in ARMS if f"acc_{a}" in runs.columns}
    row |= {f"mature_{a}": float(runs[f"mature_{a}"].mean()) for a in ARMS if f"mature_{a}" in runs.columns}
    return row


def closed_form_runs(df: pd.DataFrame) -> pd.DataFrame:
    """The closed-form arm's run table in the columns of :func:`setting_row` (D = 2: |w_imm| and |w_mut|)."""
    out = df.copy()
    for a in ARMS:
        out[f"sens_imm_{a}"] = out[f"w_imm_{a}"].abs()
        out[f"sens_rest_{a}"] = out[f"w_mut_{a}"].abs()
    return out
