"""Black et al. (ICLR 2022)'s published values per (method, dataset), gathered from the transcribed tables in
``ctbench/report/published/`` (README there), so that the consistency tables and chapter compare success rate,
cost and invalidation against one source instead of numbers typed into code.

* success rate: App. B.3 Table 2 (``black2022_table2_methods.csv``); a ``+ SNS`` method inherits its base method's
  (SNS starts only from valid counterfactuals and keeps the last iterate that still has the target label, so it
  neither gains nor loses any);
* invalidation: Table 1 (``black2022_table1_invalidation.csv``) and the SDs of App. B.5 Table 3
  (``black2022_table3_invalidation_sd.csv``; "aggregated over 100 models": by their size a spread over the models,
  not over the counterfactuals);
* cost: the ℓ2 mean of Table 1 (``black2022_table1_cost_r2.csv``) and the ℓ2 SD, ℓ1 mean and ℓ1 SD of App. B.6
  Table 4 (``black2022_table4_cost.csv``; SDs over the counterfactuals).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

#: the base methods the paper follows with SNS (its Table 1)
SNS_BASES = ("Min L1", "Min L2", "Min eps PGD")
#: the columns :func:`published` returns besides ``method`` and ``dataset``
PUB_COLUMNS = ["pub_validity", "pub_iv_loo", "pub_sd_loo", "pub_iv_rs", "pub_sd_rs", "pub_cost_l2", "pub_cost_l2_sd",
               "pub_cost_l1", "pub_cost_l1_sd"]
KEYS = ["method", "dataset"]


def _read(published_dir: str | Path, name: str, columns: list[str]) -> pd.DataFrame:
    """One transcribed table with the given columns; a missing file, column or a repeated (method, dataset) stops
    with the file's name, since a silently empty comparison would read as "no difference"."""
    path = Path(published_dir) / name
    if not path.exists():
        raise FileNotFoundError(f"published table {path} is missing (see ctbench/report/published/README.md)")
    df = pd.read_csv(path)
    missing = [c for c in [*KEYS, *columns] if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: column(s) {missing} missing; it has {list(df.columns)}")
    df = df[[*KEYS, *columns]]
    dup = df[df.duplicated(KEYS, keep=False)]
    if not dup.empty:
        raise ValueError(f"{path}: (method, dataset) repeated: {sorted(set(map(tuple, dup[KEYS].to_numpy())))}")
    return df


def success_rates(published_dir: str | Path) -> pd.DataFrame:
    """Table 2's success rate per (method, dataset) as ``pub_validity``, with the ``+ SNS`` rows of the paper's
    three SNS methods inheriting their base method's."""
    t = _read(published_dir, "black2022_table2_methods.csv", ["success_rate"]).rename(
        columns={"success_rate": "pub_validity"})
    sns = t[t["method"].isin(SNS_BASES)].assign(method=lambda d: d["method"] + " + SNS")
    return pd.concat([t, sns], ignore_index=True)


def published(published_dir: str | Path) -> pd.DataFrame:
    """Every published value per (method, dataset): :data:`PUB_COLUMNS` (NaN where the paper has none)."""
    parts = [
        success_rates(published_dir),
        _read(published_dir, "black2022_table1_invalidation.csv", ["iv_loo", "iv_rs"]).rename(
            columns={"iv_loo": "pub_iv_loo", "iv_rs": "pub_iv_rs"}),
        _read(published_dir, "black2022_table3_invalidation_sd.csv", ["iv_loo_sd", "iv_rs_sd"]).rename(
            columns={"iv_loo_sd": "pub_sd_loo", "iv_rs_sd": "pub_sd_rs"}),
        _read(published_dir, "black2022_table1_cost_r2.csv", ["cost_l2"]).rename(columns={"cost_l2": "pub_cost_l2"}),
        _read(published_dir, "black2022_table4_cost.csv", ["cost_l2_sd", "cost_l1", "cost_l1_sd"]).rename(
            columns={"cost_l2_sd": "pub_cost_l2_sd", "cost_l1": "pub_cost_l1", "cost_l1_sd": "pub_cost_l1_sd"}),
    ]
    out = parts[0]
    for p in parts[1:]:
        out = out.merge(p, on=KEYS, how="outer")
    out = out[out["method"] != "R2"]  # the r² rows of the cost file are per dataset, not per method
    return out[[*KEYS, *PUB_COLUMNS]].reset_index(drop=True)


__all__ = ["PUB_COLUMNS", "SNS_BASES", "published", "success_rates"]
