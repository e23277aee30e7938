"""Report tables and the figure of the consistency study, from the per-counterfactual files of
``ctbench consistency`` (:mod:`ctbench.experiments.consistency`).

* ``consistency_table1``: 003's Table 1 regenerated — per method × dataset the mean invalidation rate over valid
  counterfactuals under LOO and RS, validity, mean L1/L2 cost (and their SDs), next to the published values
  (:mod:`.black2022_published`): IV and its SDs (Tables 1, 3), success rate (Table 2), L2 and L1 cost with SDs
  (Tables 1, 4);
* ``consistency_r2``: per dataset the r² of invalidation on L2 cost over all valid counterfactuals of all methods
  (IV over all retrained models of both sources, as the paper pools them), per source, without the SNS methods,
  and the r² on confidence and on the local Lipschitz estimate, next to the published r²;
* ``consistency_sns_pairs``: each base method against itself + SNS, per dataset and source (the published direction
  is "SNS lowers IV" in every pair);
* ``consistency_ct`` / ``consistency_ct_delta``: the CT-paper models, per dataset, model (CT/BL), method and source,
  mean IV over valid counterfactuals with a Student-t 95% interval over training seeds; and CT − BL paired by seed;
* ``consistency_models``: test accuracy of base and retrained models and the CPU seconds of each job;
* ``consistency_iv.png``: invalidation against confidence and against the local Lipschitz estimate (the paper's
  Theorem 2 quantities), binned means per dataset, with and without SNS.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...facts import BLACK2022_LABELS, BLACK2022_ORDER
from ...io import atomic_write_text, save_figure
from ..markdown import frame_to_markdown

DATASET_LABELS = BLACK2022_LABELS
DATASET_ORDER = list(BLACK2022_ORDER)
METHOD_LABELS = {"min_l1": "Min L1", "min_l1+sns": "Min L1 + SNS", "min_l2": "Min L2", "min_l2+sns": "Min L2 + SNS",
                 "min_eps_pgd": "Min eps PGD", "min_eps_pgd+sns": "Min eps PGD + SNS", "prototype": "Looveren et al.",
                 "prototype+sns": "Looveren et al. + SNS", "latent_random": "Pawelczyk et al.",
                 "latent_random+sns": "Pawelczyk et al. + SNS", "ecco": "ECCo", "ecco+sns": "ECCo + SNS"}
METHOD_ORDER = list(METHOD_LABELS.values())


def read(files: Iterable[str | Path]) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """All per-counterfactual rows (with a ``part`` column) and the sidecars of the given files."""
    frames, metas = [], []
    for f in files:
        meta = json.loads(Path(f"{f}.json").read_text()) if Path(f"{f}.json").exists() else {}
        metas.append({**meta, "file": str(f)})
        df = pd.read_csv(f)
        if not df.empty:
            frames.append(df.assign(part=meta.get("part", "black2022")))
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), metas


def _labels(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(dataset=df["dataset"].map(lambda d: DATASET_LABELS.get(d, d)),
                     method=df["method"].map(lambda m: METHOD_LABELS.get(m, m)))


def _order(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    if df.empty:  # e.g. no seed with both a CT and a BL value: an empty table, not a KeyError
        return df
    rank = {"dataset": {d: i for i, d in enumerate(DATASET_ORDER)}, "method": {m: i for i, m in
                                                                               enumerate(METHOD_ORDER)}}
    return df.sort_values(keys, key=lambda s: s.map(lambda v: rank.get(s.name, {}).get(v, 99)), kind="stable")


def _iv_all(df: pd.DataFrame) -> pd.Series:
    """IV over all retrained models of both sources (the paper pools LOO and RS for its r²)."""
    n_rs, n_loo = df["n_rs"].fillna(0), df["n_loo"].fillna(0)
    num = df["iv_rs"].fillna(0) * n_rs + df["iv_loo"].fillna(0) * n_loo
    return num / (n_rs + n_loo).replace(0, np.nan)


#: the columns of ``consistency_table1`` before the comparison with Tables 2-4 (claims and prose read them by name;
#: the new columns come after them)
TABLE1_COLUMNS = ["method", "dataset", "validity", "n", "sns", "iv_loo", "iv_rs", "sd_loo", "sd_rs", "cost_l1",
                  "cost_l2", "n_valid", "pub_iv_loo", "pub_iv_rs", "pub_cost_l2", "diff_iv_loo", "diff_iv_rs",
                  "diff_cost_l2"]


def table1(df: pd.DataFrame, published_dir: str | Path | None) -> pd.DataFrame:
    """003's Table 1 from the per-counterfactual rows: IV, validity and cost per (method, dataset) over the valid
    counterfactuals (``sd_*``: spread over them), beside every published value (``pub_*``, ``diff_*`` = ours −
    published) when ``published_dir`` is given."""
    d = _labels(df[df["part"] == "black2022"])
    if d.empty:
        return pd.DataFrame()
    valid = d[d["valid"].astype(bool)]
    g = valid.groupby(["method", "dataset"], sort=False)
    out = g.agg(iv_loo=("iv_loo", "mean"), iv_rs=("iv_rs", "mean"), sd_loo=("iv_loo", "std"),
                sd_rs=("iv_rs", "std"), cost_l1=("cost_l1", "mean"), cost_l2=("cost_l2", "mean"),
                n_valid=("valid", "size"), sd_cost_l1=("cost_l1", "std"), sd_cost_l2=("cost_l2", "std"))
    alln = d.groupby(["method", "dataset"], sort=False).agg(validity=("valid", "mean"), n=("valid", "size"),
                                                            sns=("sns", "first"))
    out = alln.join(out).reset_index()
    out["n_valid"] = out["n_valid"].fillna(0).astype(int)
    cols = [*TABLE1_COLUMNS[:12], "sd_cost_l1", "sd_cost_l2"]
    if published_dir is not None:
        from .black2022_published import PUB_COLUMNS, published

        out = out.merge(published(published_dir), on=["method", "dataset"], how="left")
        for c in ("iv_loo", "iv_rs", "cost_l2", "validity", "cost_l1"):
            out[f"diff_{c}"] = out[c] - out[f"pub_{c}"]
        cols = [*TABLE1_COLUMNS, "sd_cost_l1", "sd_cost_l2",
                *[c for c in PUB_COLUMNS if c not in TABLE1_COLUMNS], "diff_validity", "diff_cost_l1"]
    return _order(out[cols], ["method", "dataset"]).reset_index(drop=True)


def r2_table(df: pd.DataFrame, published_dir: str | Path | None) -> pd.DataFrame:
    from ...experiments.invalidation import r_squared

    d = _labels(df[(df["part"] == "black2022") & df["valid"].astype(bool)])
    rows = []
    for ds, g in d.groupby("dataset", sort=False):
        iv = _iv_all(g)
        plain = ~g["sns"].astype(bool)
        rows.append({"dataset": ds, "r2": r_squared(g["cost_l2"], iv), "r2_loo": r_squared(g["cost_l2"], g["iv_loo"]),
                     "r2_rs": r_squared(g["cost_l2"], g["iv_rs"]), "r2_l1": r_squared(g["cost_l1"], iv),
                     "r2_without_sns": r_squared(g.loc[plain, "cost_l2"], iv[plain]),
                     "r2_confidence": r_squared(g["confidence"], iv),
                     "r2_log_lipschitz": r_squared(np.log10(g["lipschitz"].clip(lower=1e-12)), iv),
                     "n_valid": len(g)})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    if published_dir is not None:
        pub = pd.read_csv(Path(published_dir) / "black2022_table1_cost_r2.csv")
        pub = pub[pub["method"] == "R2"][["dataset", "r2"]].rename(columns={"r2": "pub_r2"})
        out = out.merge(pub, on="dataset", how="left")
    return _order(out, ["dataset"]).reset_index(drop=True)


def sns_pairs(t1: pd.DataFrame) -> pd.DataFrame:
    if t1.empty:
        return t1
    rows = []
    for _, r in t1[t1["sns"].astype(bool)].iterrows():
        base = t1[(t1["method"] == r["method"].removesuffix(" + SNS")) & (t1["dataset"] == r["dataset"])]
        if base.empty:
            continue
        b = base.iloc[0]
        for src in ("loo", "rs"):
            pub_b, pub_s = b.get(f"pub_iv_{src}", np.nan), r.get(f"pub_iv_{src}", np.nan)
            rows.append({"dataset": r["dataset"], "method": b["method"], "source": src.upper(),
                         "iv_base": b[f"iv_{src}"], "iv_sns": r[f"iv_{src}"], "delta": r[f"iv_{src}"] - b[f"iv_{src}"],
                         "pub_delta": pub_s - pub_b, "cost_base": b["cost_l2"], "cost_sns": r["cost_l2"],
                         "cost_delta": r["cost_l2"] - b["cost_l2"]})
    return pd.DataFrame(rows)


def _t_interval(v: np.ndarray) -> tuple[float, float, float]:
    from scipy import stats

    v = v[np.isfinite(v)]
    if len(v) == 0:
        return math.nan, math.nan, math.nan
    m = float(v.mean())
    if len(v) < 2:
        return m, math.nan, math.nan
    h = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return m, m - h, m + h


def ct_tables(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    d = df[df["part"] == "ct"]
    if d.empty:
        return pd.DataFrame(), pd.DataFrame()
    d = _labels(d)
    per_seed = d[d["valid"].astype(bool)].groupby(["dataset", "method", "model", "seed"], sort=False).agg(
        iv_loo=("iv_loo", "mean"), iv_rs=("iv_rs", "mean"), cost_l2=("cost_l2", "mean")).reset_index()
    validity = d.groupby(["dataset", "method", "model", "seed"], sort=False)["valid"].mean().rename("validity")
    per_seed = per_seed.merge(validity.reset_index(), on=["dataset", "method", "model", "seed"], how="right")
    rows, deltas = [], []
    for (ds, meth, model), g in per_seed.groupby(["dataset", "method", "model"], sort=False):
        row = {"dataset": ds, "method": meth, "model": model, "n_seeds": g["seed"].nunique()}
        for c in ("iv_loo", "iv_rs", "cost_l2", "validity"):
            row[c], row[f"{c}_lb"], row[f"{c}_ub"] = _t_interval(g[c].to_numpy(float))
        rows.append(row)
    wide = per_seed.pivot_table(index=["dataset", "method", "seed"], columns="model",
                                values=["iv_loo", "iv_rs", "cost_l2"])
    for (ds, meth), g in wide.groupby(level=[0, 1], sort=False):
        row = {"dataset": ds, "method": meth, "n_seeds": len(g)}
        for c in ("iv_loo", "iv_rs", "cost_l2"):
            if ("CT" not in g[c].columns) or ("BL" not in g[c].columns):
                continue
            row[f"delta_{c}"], row[f"delta_{c}_lb"], row[f"delta_{c}_ub"] = _t_interval(
                (g[c]["CT"] - g[c]["BL"]).to_numpy(float))
        deltas.append(row)
    return _order(pd.DataFrame(rows), ["method"]), _order(pd.DataFrame(deltas), ["method"])


def models_table(metas: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for m in metas:
        for label, mm in (m.get("models") or {}).items():
            cpu = m.get("cpu_seconds", {})
            rows.append({"part": m.get("part"), "dataset": DATASET_LABELS.get(m.get("dataset"), m.get("dataset")),
                         "seed": m.get("seed"), "model": label, "acc_base": mm.get("acc_base"),
                         "acc_rs_mean": (mm.get("acc_rs") or {}).get("mean"),
                         "acc_loo_mean": (mm.get("acc_loo") or {}).get("mean"), "n_rs": mm.get("n_rs"),
                         "n_loo": mm.get("n_loo"), "failed": len(mm.get("failed") or []),
                         "n_factuals": m.get("n_factuals"), "cpu_train_s": cpu.get("train"),
                         "cpu_total_s": cpu.get("total")})
        if m.get("skipped"):
            rows.append({"part": m.get("part"), "dataset": m.get("dataset"), "seed": m.get("seed"),
                         "model": m["skipped"]})
    return pd.DataFrame(rows)


def figure(df: pd.DataFrame, out: str | Path) -> list[Path]:
    """IV (pooled over both sources) against confidence and against the log local Lipschitz estimate: binned means
    per dataset, solid without SNS, dashed with SNS."""
    from matplotlib.figure import Figure

    d = _labels(df[(df["part"] == "black2022") & df["valid"].astype(bool)])
    d = d.assign(iv=_iv_all(d), log_lip=np.log10(d["lipschitz"].clip(lower=1e-12)))
    fig = Figure(figsize=(10, 4))
    axes = fig.subplots(1, 2, sharey=True)
    colors = {ds: f"C{i}" for i, ds in enumerate(DATASET_ORDER)}
    for ax, col, label in ((axes[0], "confidence", "confidence of the base model at the counterfactual"),
                           (axes[1], "log_lip", "log10 local Lipschitz estimate of the class probability")):
        for (ds, sns), g in d.groupby(["dataset", "sns"], sort=False):
            if len(g) < 5:
                continue
            bins = np.unique(np.quantile(g[col], np.linspace(0, 1, 11)))
            if len(bins) < 3:  # (nearly) one value, e.g. SNS counterfactuals all at confidence 1: one point
                m = pd.DataFrame({"x": [g[col].mean()], "y": [g["iv"].mean()]})
            else:
                cut = pd.cut(g[col], bins, include_lowest=True)
                m = g.groupby(cut, observed=True).agg(x=(col, "mean"), y=("iv", "mean"))
            ax.plot(m["x"], m["y"], "--" if sns else "-", marker="o", ms=3, color=colors.get(ds, "k"),
                    label=f"{ds}{' + SNS' if sns else ''}")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("invalidation rate (LOO and RS pooled)")
    axes[1].legend(fontsize=7, loc="upper left")
    fig.suptitle("Invalidation against the two quantities of Theorem 2 (binned means, valid counterfactuals)")
    return save_figure(fig, out)


def write_consistency(out: str | Path, files: Iterable[str | Path],
                      published_dir: str | Path | None = "default") -> dict[str, Any]:
    """Write every consistency table (CSV + Markdown) and the figure into the report folder ``out``;
    ``published_dir``: the published tables (``"default"``: the copy shipped with ctbench; None: leave them out)."""
    from .paper_tables import PUBLISHED_DIR

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    df, metas = read(files)
    written: dict[str, Any] = {}
    pub = PUBLISHED_DIR if published_dir == "default" else published_dir
    t1 = table1(df, pub) if not df.empty else pd.DataFrame()
    ct, ct_delta = ct_tables(df) if not df.empty else (pd.DataFrame(), pd.DataFrame())
    tables = {"consistency_table1": t1, "consistency_r2": r2_table(df, pub) if not df.empty else pd.DataFrame(),
              "consistency_sns_pairs": sns_pairs(t1), "consistency_ct": ct, "consistency_ct_delta": ct_delta,
              "consistency_models": models_table(metas)}
    for name, t in tables.items():
        if t is None or t.empty:
            continue
        atomic_write_text(out / f"{name}.csv", t.to_csv(index=False))
        atomic_write_text(out / f"{name}.md", frame_to_markdown(t, digits=3))
        written[name] = {"rows": len(t), "csv": f"{name}.csv", "md": f"{name}.md"}
    if not df.empty and (df["part"] == "black2022").any():
        written["consistency_iv"] = [str(p.name) for p in figure(df, out / "consistency_iv.png")]
    return written


__all__ = ["DATASET_LABELS", "METHOD_LABELS", "TABLE1_COLUMNS", "ct_tables", "figure", "models_table", "r2_table",
           "read", "sns_pairs", "table1", "write_consistency"]
