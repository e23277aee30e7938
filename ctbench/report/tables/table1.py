"""Table 1 with two uncertainties, validity and computability flags, and every published version beside it.

The paper's recipe (:func:`ctbench.evaluation.aggregate.reduction_table`) treats the evaluation *runs* as its
replicates: its ± is the spread of per-run ratios and its star the 99% range of per-run differences, both given one
trained CT and one trained BL model. That says nothing about retraining: a second training seed can move a cell by
more than its ±. So each cell carries

* the paper's recipe over all (seed, run) pairs as runs (with one seed this is exactly the paper's number), and
* a seed-level estimate: the paper's reduction computed per training seed, then their mean, sample sd and a
  Student-t interval (level :data:`ctbench.evaluation.seeds.SEED_LEVEL`) over seeds; ``seed_significant`` when it
  excludes 0.

A cell is flagged when it rests on few valid counterfactuals (:data:`MIN_VALIDITY`). NaN metric values (IP* of
groups with fewer than two counterfactuals: MNIST, 70% of them) follow the report switch ``ip_star_nan_groups``
(:class:`ctbench.report.settings.ReportSettings`): ``drop``, the authors' code, averages over the rest and notes the
NaN share on the cell; ``withhold`` leaves a cell with more than :data:`MAX_NAN_SHARE` NaN values empty, "not
computable", with the reason.

:func:`compare_versions` adds, per published version (:data:`VERSIONS`), its value, ± and star and the agreement
category of ours; ``pub_*`` columns hold :data:`PRIMARY`, the version this project reproduces.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ...evaluation.aggregate import paper_value, reduction_table
from ...evaluation.seeds import pool_seeds
from ...evaluation.seeds import seed_level as _seed_level
from ...facts import PAPER_ORDER, VERSION_LABELS
from ..common import paper_sorted
from ..settings import ReportSettings
from .relabel import dataset_rows

#: the version reproduced (``../shared/papers/000_…``), then the final version and the March 2025 preprint
#: the published tables shipped with ctbench (defined here, below the claims rules and ``tables``, which both use it)
PUBLISHED_DIR = Path(__file__).resolve().parent.parent / "published"
PRIMARY = "preprint_2025_07"
VERSIONS = ("preprint_2025_07", "satml_2026", "preprint_2025_03")
#: the nine datasets of the paper (labels), in its order
PAPER_DATASETS = list(PAPER_ORDER)
MIN_VALIDITY = 0.05
MAX_NAN_SHARE = 0.10
#: (experiment, metric column, paper_value kind, label) of Table 1's three columns
SPECS = (("single", "ip", "ip", "IP"), ("single", "ip_star", "ip_star", "IP*"), ("mutability", "cost", "cost", "Cost"))

AGREE, SIGN_ONLY, DISAGREE = "sign and significance", "sign only", "disagrees"


def _cell_facts(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per dataset: validity of CT's and BL's counterfactuals and the share of NaN metric values."""
    d = df[df["objective"].isin(["full", "vanilla"])].assign(
        _valid=lambda x: x["valid"].astype(float), _nan=lambda x: pd.to_numeric(x[metric], errors="coerce").isna())
    rows = []
    for ds, g in d.groupby("dataset", sort=False):
        rows.append({"dataset": ds, "ct_validity": g.loc[g["objective"] == "full", "_valid"].mean(),
                     "bl_validity": g.loc[g["objective"] == "vanilla", "_valid"].mean(),
                     "nan_share": float(g["_nan"].mean())})
    return pd.DataFrame(rows, columns=["dataset", "ct_validity", "bl_validity", "nan_share"])


def _nan_share_text(r: pd.Series) -> str:
    why = " (groups of fewer than 2 counterfactuals)" if r["metric"] == "IP*" else ""
    return f"{100 * r['nan_share']:.0f}% of the {r['metric']} values are NaN{why}"


def experiment_rows(evals: pd.DataFrame | Mapping[str, pd.DataFrame], exp: str) -> pd.DataFrame:
    """The rows of experiment ``exp``: of one frame with an ``experiment`` column, or the frame of ``exp`` in a
    mapping experiment → frame (the report's, issue 21: no copy of 7M rows per table; an absent one is empty)."""
    if isinstance(evals, Mapping):
        return evals.get(exp, pd.DataFrame(columns=["dataset", "experiment"]))
    return evals[evals["experiment"] == exp]


def table1(evals: pd.DataFrame | Mapping[str, pd.DataFrame], settings: ReportSettings | None = None) -> pd.DataFrame:
    """Table 1 from per-counterfactual rows (dataset names already the paper's labels), one frame or a mapping
    experiment → frame (:func:`experiment_rows`); ``settings``: how NaN values are treated (default: the authors'
    way, see the module docstring)."""
    parts = []
    for exp, metric, kind, label in SPECS:
        sub = experiment_rows(evals, exp)
        if len(sub):
            parts.append(table1_part(sub, metric, kind, label))
    return table1_from_parts(parts, settings)


def table1_part(sub: pd.DataFrame, metric: str, kind: str, label: str) -> pd.DataFrame:
    """One metric's rows of Table 1 (a row of :data:`SPECS`) from its experiment's rows (not empty), before the
    flags and the Avg. rows (:func:`table1_from_parts`): the report makes each while its experiment is read.

    Every statistic is per dataset, so each dataset's rows are taken on their own (issue 21: the report's memory;
    7M rows at once cost ~1 GB of temporaries): the seeds pooled as ``pool_seeds`` decides on all rows, the
    datasets' rows in the order the one-frame recipe gives (that of each dataset's first valid row with a finite
    metric), the same values bit for bit (tested against the one-frame recipe)."""
    pool = "seed" in sub and sub["seed"].nunique() > 1
    ts, firsts, seeds, facts = [], [], [], []
    for _, at in dataset_rows(sub):
        rows = sub.iloc[at]
        pooled = rows.assign(run=rows["seed"].astype(np.int64) * 1_000_000 + rows["run"].astype(np.int64)) \
            if pool else rows  # pool_seeds' expression
        t = reduction_table(pooled, metric, kind=kind, label=label, avg_row=False)
        if len(t):
            y = paper_value(pd.to_numeric(rows[metric], errors="coerce").astype(float), kind).to_numpy()
            ts.append(t)
            firsts.append(at[np.isfinite(y) & rows["valid"].astype(bool).to_numpy()][0])
        seeds.append(_seed_level_of(rows, t, pool, metric, kind, label))
        facts.append(_cell_facts(rows, metric))
        del rows, pooled
    t = pd.concat([ts[i] for i in np.argsort(firsts, kind="stable")], ignore_index=True) if ts \
        else reduction_table(pool_seeds(sub.iloc[:0]), metric, kind=kind, label=label, avg_row=False)
    missing = [d for d in sub["dataset"].unique() if d not in set(t["dataset"])]
    if missing:  # a cell with no CT/BL pair left is shown empty, with its reason below
        t = pd.concat([t, pd.DataFrame({"dataset": missing, "metric": label})], ignore_index=True)
    t = t.merge(_stacked(seeds), on="dataset", how="left")
    return t.merge(_stacked(facts), on="dataset", how="left")


def _seed_level_of(rows: pd.DataFrame, t: pd.DataFrame, pool: bool, metric: str, kind: str,
                   label: str) -> pd.DataFrame:
    """``seed_level(rows, metric, kind, label)`` given ``t``, the reduction table of ``rows`` unpooled: where the
    rows hold one training seed (the report's per-seed tables) that table is the one seed's reduction, so it is not
    computed a second time (issue 21); anything else goes through ``seed_level``. Same frame (tested)."""
    if pool or not len(t):
        return _seed_level(rows, metric, kind, label)
    if "seed" in rows:
        s = rows["seed"].unique()
        if len(s) != 1 or pd.isna(s[0]):
            return _seed_level(rows, metric, kind, label)
    out = []
    for ds, g in t[["dataset", "reduction_pct"]].groupby("dataset", sort=False):
        v = g["reduction_pct"].dropna().to_numpy(float)
        n = len(v)  # 0 or 1: seed_level's statistics over one seed
        out.append({"dataset": ds, "n_seeds": n, "seed_mean": v.mean() if n else np.nan, "seed_sd": np.nan,
                    "seed_lb": np.nan, "seed_ub": np.nan, "seed_significant": pd.NA,
                    "seed_values": " ".join(f"{x:.2f}" for x in v)})
    return pd.DataFrame(out, columns=["dataset", "n_seeds", "seed_mean", "seed_sd", "seed_lb", "seed_ub",
                                      "seed_significant", "seed_values"])


def _stacked(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Per-dataset frames of one-row-per-dataset statistics as the one frame of all datasets (empty ones left out
    of the dtypes, as a frame built from all rows at once has them)."""
    full = [f for f in frames if len(f)]
    return pd.concat(full, ignore_index=True) if full else frames[0] if frames else pd.DataFrame(columns=["dataset"])


def table1_from_parts(parts: list[pd.DataFrame], settings: ReportSettings | None = None) -> pd.DataFrame:
    """Table 1 from its :func:`table1_part` rows in :data:`SPECS` order: flags, notes and the Avg. rows."""
    nan_groups = (settings or ReportSettings()).ip_star_nan_groups
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    for c in ("significant", "seed_significant"):
        out[c] = out[c].astype("boolean")
    notes = []
    for i, r in out.iterrows():
        note = []
        withheld = nan_groups == "withhold" and r["nan_share"] > MAX_NAN_SHARE
        if withheld:
            note.append(f"not computable: {_nan_share_text(r)}; ip_star_nan_groups = withhold")
            for c in ("reduction_pct", "pm", "lb", "ub", "mean_delta", "seed_mean", "seed_sd", "seed_lb", "seed_ub"):
                out.at[i, c] = np.nan
            out.at[i, "significant"] = pd.NA
            out.at[i, "seed_significant"] = pd.NA
        elif r["nan_share"] > 0 and pd.isna(r["reduction_pct"]):
            note.append(f"not computable: {_nan_share_text(r)}")
        elif r["nan_share"] > 0:
            note.append(f"{_nan_share_text(r)}, left out of the means as the authors' code does "
                        f"(ip_star_nan_groups = {nan_groups})")
        if pd.isna(r["reduction_pct"]) and not r["nan_share"] > 0:
            if pd.isna(r["ct_validity"]) or pd.isna(r["bl_validity"]):
                who = "CT (objective full)" if pd.isna(r["ct_validity"]) else "BL (objective vanilla)"
                note.append(f"not computable: the evaluation has no {who} model of this dataset (the same model "
                            "given as CT and BL?)")
            else:
                note.append("no run with valid counterfactuals of both CT and BL")
        low = min(r["ct_validity"], r["bl_validity"])
        if low < MIN_VALIDITY:
            who = "CT" if r["ct_validity"] <= r["bl_validity"] else "BL"
            note.append(f"rests on {100 * low:.1f}% valid {who} counterfactuals")
        notes.append("; ".join(note))
    out["flag"] = notes
    out["seed_significant"] = out["seed_significant"].astype("boolean")
    avg = []
    for metric, g in out.groupby("metric", sort=False):
        ok = g.dropna(subset=["reduction_pct"])
        present = [d for d in PAPER_DATASETS if d in set(ok["dataset"])]
        complete = len(present) == len(PAPER_DATASETS) and len(ok) == len(PAPER_DATASETS)
        avg.append({"dataset": "Avg.", "metric": metric, "reduction_pct": ok["reduction_pct"].mean(),
                    "seed_mean": ok["seed_mean"].mean(),
                    "flag": "" if complete else f"average of {len(ok)} datasets, not the paper's nine: "
                                                "not compared with the published Avg."})
    return paper_sorted(pd.concat([out, pd.DataFrame(avg)], ignore_index=True), reset_index=True)


def published_versions(published_dir: str | Path) -> pd.DataFrame:
    """Every published Table-1 value as rows ``version, dataset, metric, reduction_pct, pm, significant``.

    The March 2025 preprint has no ± or star; its IP is the mean of its five per-λ reductions and its Cost is given
    for the synthetic datasets only.
    """
    pdir = Path(published_dir)
    t1 = pd.read_csv(pdir / "table1_reductions.csv")
    t1["significant"] = t1["significant"].map({1: True, 0: False}).astype("boolean")
    rows = [t1]
    mar_path = pdir / "preprint_2025_03_table.csv"
    if mar_path.exists():
        mar = pd.read_csv(mar_path)
        lam = [c for c in mar.columns if c.startswith("ip_pct_lam")]
        recs = []
        for _, r in mar.iterrows():
            for metric, value in (("IP", r[lam].astype(float).mean()), ("IP*", r["ipstar_pct"]),
                                  ("Cost", r["cost_pct"])):
                if pd.notna(value):
                    recs.append({"version": "preprint_2025_03", "dataset": r["dataset"], "metric": metric,
                                 "reduction_pct": float(value), "pm": np.nan, "significant": pd.NA})
        rows.append(pd.DataFrame(recs))
    out = pd.concat(rows, ignore_index=True)
    out["significant"] = out["significant"].astype("boolean")
    return out


def agreement(ours: float, ours_sig, pub: float, pub_sig) -> str:
    """``sign and significance`` | ``sign only`` | ``disagrees`` | ``no published value`` | ``not computable``.

    Signs agree when both reductions have the same sign; a published value without a star (the March preprint)
    can agree in sign only.
    """
    if pub is None or pd.isna(pub):
        return "no published value"
    if ours is None or pd.isna(ours):
        return "not computable"
    if np.sign(ours) != np.sign(pub):
        return DISAGREE
    if pd.isna(pub_sig) or pd.isna(ours_sig):
        return SIGN_ONLY
    return AGREE if bool(ours_sig) == bool(pub_sig) else SIGN_ONLY


def compare_versions(t1: pd.DataFrame, published_dir: str | Path) -> pd.DataFrame:
    """Our Table 1 with every published version beside it (see the module docstring)."""
    pub = published_versions(published_dir)
    out = t1.copy()
    for v in VERSIONS:
        p = pub[pub["version"] == v][["dataset", "metric", "reduction_pct", "pm", "significant"]]
        p = p.rename(columns={c: f"{v}_{c}" for c in ("reduction_pct", "pm", "significant")})
        out = out.merge(p, on=["dataset", "metric"], how="left")
        partial_avg = (out["dataset"] == "Avg.") & (out["flag"].fillna("") != "")
        out.loc[partial_avg, [f"{v}_reduction_pct", f"{v}_pm"]] = np.nan  # not the paper's average
        out[f"{v}_agreement"] = [
            "" if r["dataset"] == "Avg." else
            agreement(r["reduction_pct"], r.get("significant"), r[f"{v}_reduction_pct"], r[f"{v}_significant"])
            for _, r in out.iterrows()]
    vals = out[[f"{v}_reduction_pct" for v in VERSIONS]]
    out["authors_min"], out["authors_max"] = vals.min(axis=1), vals.max(axis=1)
    out["within_authors_range"] = (out["reduction_pct"] >= out["authors_min"]) & \
        (out["reduction_pct"] <= out["authors_max"]) & (vals.notna().sum(axis=1) >= 2)
    out["seed_agrees"] = [
        pd.NA if pd.isna(r["seed_significant"]) or pd.isna(r[f"{PRIMARY}_significant"]) else
        bool(np.sign(r["seed_mean"]) == np.sign(r[f"{PRIMARY}_reduction_pct"])
             and bool(r["seed_significant"]) == bool(r[f"{PRIMARY}_significant"]))
        for _, r in out.iterrows()]
    out["seed_agrees"] = out["seed_agrees"].astype("boolean")
    # the book's renderer and the claims read the primary version as pub_*
    for c in ("reduction_pct", "pm", "significant"):
        out[f"pub_{c}"] = out[f"{PRIMARY}_{c}"]
    out["pub_version"] = PRIMARY
    out["diff_pct"] = out["reduction_pct"] - out["pub_reduction_pct"]
    out["significant_agrees"] = (out["significant"].astype("boolean") == out["pub_significant"].astype("boolean"))
    return out


def agreement_counts(t1v: pd.DataFrame) -> pd.DataFrame:
    """How many of the 27 cells agree with each version, and how many reach the issue's target (sign and
    significance with the July preprint, or inside the range of the authors' versions)."""
    cells = t1v[t1v["dataset"].isin(PAPER_DATASETS)]
    rows = []
    for v in VERSIONS:
        col = cells[f"{v}_agreement"]
        rows.append({"version": v, "label": VERSION_LABELS[v], "cells": int((col != "no published value").sum()),
                     AGREE: int((col == AGREE).sum()), SIGN_ONLY: int((col == SIGN_ONLY).sum()),
                     DISAGREE: int((col == DISAGREE).sum()), "not computable": int((col == "not computable").sum())})
    target = (cells[f"{PRIMARY}_agreement"] == AGREE) | cells["within_authors_range"].fillna(False)
    rows.append({"version": "target", "label": "July-preprint agreement or inside the authors' range",
                 "cells": len(cells), AGREE: int(target.sum()), SIGN_ONLY: np.nan, DISAGREE: np.nan,
                 "not computable": np.nan})
    return pd.DataFrame(rows)
