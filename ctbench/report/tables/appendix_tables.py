"""Appendix tables of the paper from the run's own files: the grids' predictive performance (appendix Tables 4–6 of
the July 2025 preprint) and the final hyper-parameters (its appendix Table 2), each next to the published values.

* :func:`grid_performance` — test accuracy and macro F1 of the CT models (one per grid point) and of the shared BL
  models of each grid and dataset, from the chunk CSVs of ``ctbench grid run``: mean, standard deviation and standard
  error over *models* (each model once, not once per test-time λ_egy row). The paper retrained BL at every grid point
  (so its "Vanilla" rows vary); here one BL per baseline key serves the whole grid.
* :func:`final_hyperparameters_table` — the settings the final ``single`` CT models were trained with (their
  ``*.pt.json``
  sidecars: sizes, batch size, domain, τ, nce, λ_reg and the rest of the objective), the tuning stage's choice where
  ``best.json`` files are given, and the paper's Table 2 (``published/final_hyperparameters.csv``).
* :func:`write_appendix` — both as CSV + Markdown in the report folder, and the tuning figures
  (:mod:`..figures.tuning_figures`) under ``tuning/`` unless told not to; called by ``ctbench report`` (without
  the figures: :mod:`..figures.report_figures` draws them) and ``ctbench appendix``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ...facts import PAPER_ORDER
from ..common import dataset_label, paper_sorted
from .paper_tables import PUBLISHED_DIR, write_table

#: appendix table of the July 2025 preprint for each grid's predictive performance
PERFORMANCE_TABLE = {"gen_params": 4, "penalties": 5, "training_params": 6}
_VARIABLES = (("Accuracy", "acc_test"), ("F1-score", "f1_test"))


def _chunks(paths: Iterable[str | Path] | pd.DataFrame) -> pd.DataFrame:
    if isinstance(paths, pd.DataFrame):
        df = paths.copy()
    else:
        frames = [pd.read_csv(p) for p in paths]
        df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if "error" in df:
        df = df[df["error"].isna() | (df["error"].astype(str).str.strip() == "")]
    return df


def _stats(values: pd.Series) -> dict[str, Any]:
    v = pd.to_numeric(values, errors="coerce").dropna().to_numpy(float)
    n = len(v)
    sd = float(np.std(v, ddof=1)) if n > 1 else (0.0 if n == 1 else float("nan"))
    se = float(stats.sem(v)) if n > 1 else (0.0 if n == 1 else float("nan"))  # sd / √n, as scipy defines it
    return {"mean": float(v.mean()) if n else float("nan"), "sd": sd, "se": se, "n_models": n}


def grid_performance(chunks: Iterable[str | Path] | pd.DataFrame,
                     published: str | Path | None = PUBLISHED_DIR / "grid_performance.csv") -> pd.DataFrame:
    """Appendix Tables 4–6: accuracy and F1 per grid, dataset and objective (Full = CT, Vanilla = BL).

    One value per model: CT per (dataset, seed, point), BL per (dataset, seed, baseline key). F1 is ``NaN`` with
    ``n_models = 0`` for chunks written before the chunk rows recorded it (``f1_test_*`` columns). ``published``:
    the transcribed tables (``pub_mean``, ``pub_se``, ``diff`` = ours − paper), ``None`` to leave them out.
    """
    df = _chunks(chunks)
    if df.empty:
        return pd.DataFrame()
    rows = []
    for (grid, ds), g in df.groupby(["grid", "dataset"], sort=False):
        for objective, tag, key in (("Full", "ct", "point"), ("Vanilla", "bl", "baseline_key")):
            models = g.drop_duplicates([c for c in ("seed", key) if c in g])
            for variable, col in _VARIABLES:
                series = models[f"{col}_{tag}"] if f"{col}_{tag}" in models else pd.Series(dtype=float)
                rows.append({"table": PERFORMANCE_TABLE.get(grid), "grid": grid,
                             "dataset": dataset_label(ds), "variable": variable, "objective": objective,
                             **_stats(series)})
    out = pd.DataFrame(rows)
    out["table"] = out["table"].astype("Int64")
    if published is not None and Path(published).exists():
        pub = pd.read_csv(published)[["grid", "dataset", "variable", "objective", "mean", "se"]]
        out = out.merge(pub.rename(columns={"mean": "pub_mean", "se": "pub_se"}),
                        on=["grid", "dataset", "variable", "objective"], how="left")
        out["diff"] = out["mean"] - out["pub_mean"]
    grid_rank = {g: i for i, g in enumerate([*PERFORMANCE_TABLE, "tune", "tune_lr"])}
    ds_rank = {d: i for i, d in enumerate(PAPER_ORDER)}
    out = out.assign(_g=out["grid"].map(lambda g: grid_rank.get(g, 99)),
                     _d=out["dataset"].map(lambda d: ds_rank.get(d, 99)))
    return out.sort_values(["_g", "_d"], kind="stable").drop(columns=["_g", "_d"]).reset_index(drop=True)


# --------------------------------------------------------------------------------------------------- Table 2
def _domain(side: dict[str, Any]) -> str:
    dom = (side.get("constraints") or {}).get("domain")
    if dom is None:
        return str(side.get("config", {}).get("domain", ""))
    a = np.asarray(dom, dtype=float)
    if a.ndim == 2 and a.shape[0] == 2 and np.ptp(a[0]) == 0 and np.ptp(a[1]) == 0:
        return f"({a[0, 0]:g}, {a[1, 0]:g})"
    return "inferred per feature"


def _model_row(side: dict[str, Any]) -> dict[str, Any]:
    c, meta = side["config"], (side.get("dataset") or {}).get("meta", {})
    obj = side.get("objective_effective") or c["objective"]
    n_train = meta.get("n_trainval")
    if n_train is None and meta.get("n_train") is not None:
        n_train = int(meta["n_train"]) + int(meta.get("n_val") or 0)
    return {"n_train": n_train, "n_test": meta.get("n_test"), "batch_size": c["training"]["batch_size"],
            "domain": _domain(side), "tau": c["convergence"]["tau"], "nce": c["training"]["nce"],
            "lambda_reg": obj.get("lambda_reg"), "lambda_adv": obj.get("lambda_adv"),
            "lambda_div": obj.get("lambda_div"), "lambda_energy": c["generator"].get("lambda_energy"),
            "max_iter": c["convergence"]["max_iter"], "epochs": c["training"]["epochs"],
            "generator": c["generator"]["type"], "fidelity": side.get("fidelity_mode", c.get("fidelity"))}


def _one(values: pd.Series) -> Any:
    """The value shared by all seeds, or the distinct values joined by ' / ' (a run that mixed settings)."""
    vals = list(dict.fromkeys(values.dropna().tolist()))
    return vals[0] if len(vals) == 1 else (" / ".join(map(str, vals)) if vals else None)


def final_hyperparameters_table(model_sidecars: Iterable[str | Path], tuned: Iterable[str | Path] = (),
                          published: str | Path | None = PUBLISHED_DIR / "final_hyperparameters.csv",
                          experiment: str = "single") -> pd.DataFrame:
    """Appendix Table 2 from the ``experiment``'s CT models (``<results>/models/<experiment>/<dataset>/full_s*.pt``
    sidecars; pass the ``.pt.json`` paths or the ``.pt`` paths). One row per dataset; ``n_seeds`` models whose
    settings must agree. ``tuned_*``: the tuning stage's choice (``tune/<dataset>/best.json``); ``pub_*``: the paper;
    ``matches_paper``: τ, nce, λ_reg and batch size equal the paper's."""
    recs = []
    for p in map(Path, model_sidecars):
        side_path = p if p.name.endswith(".json") else p.with_name(p.name + ".json")
        if side_path.parent.parent.name != experiment:
            continue
        side = json.loads(side_path.read_text())
        if (side.get("objective_effective") or side["config"]["objective"]).get("name") != "full":
            continue
        recs.append({"dataset": side["config"]["data"]["name"], "seed": side.get("seed"), **_model_row(side)})
    if not recs:
        return pd.DataFrame()
    df = pd.DataFrame(recs)
    cols = [c for c in df.columns if c not in ("dataset", "seed")]
    out = df.groupby("dataset", sort=False).agg({**{c: _one for c in cols}, "seed": "nunique"})
    out = out.rename(columns={"seed": "n_seeds"}).reset_index()
    best = {Path(t).parent.name: json.loads(Path(t).read_text()) for t in tuned}
    out["tuned_tau"] = out["dataset"].map(lambda d: best.get(d, {}).get("tau"))
    out["tuned_lambda_reg"] = out["dataset"].map(lambda d: best.get(d, {}).get("lambda_reg"))
    out["dataset"] = out["dataset"].map(dataset_label)
    if published is not None and Path(published).exists():
        pub = pd.read_csv(published, dtype={"domain": str}).drop(columns=["source"], errors="ignore")
        out = out.merge(pub.add_prefix("pub_").rename(columns={"pub_dataset": "dataset"}), on="dataset", how="left")
        keys = ["tau", "nce", "lambda_reg", "batch_size"]

        def agree(r: pd.Series) -> bool | None:
            if pd.isna(r.get("pub_tau")):
                return None
            try:
                return all(np.isclose(float(r[k]), float(r[f"pub_{k}"])) for k in keys)
            except (TypeError, ValueError):  # a mixed setting ('0.5 / 0.75') never matches
                return False
        out["matches_paper"] = out.apply(agree, axis=1)
    return paper_sorted(out, reset_index=True)


# --------------------------------------------------------------------------------------------------- write
def write_appendix(out: str | Path, *, grids: Iterable[str | Path] = (), models: Iterable[str | Path] = (),
                   tuned: Iterable[str | Path] = (), published_dir: str | Path | None = PUBLISHED_DIR,
                   tuning_figures: bool = True) -> dict[str, Any]:
    """``grid_performance``, ``final_hyperparameters`` (CSV + MD) and, with ``tuning_figures``, the ``tuning/*``
    figures into ``out`` (``ctbench report`` passes False: it draws them with the others,
    :func:`ctbench.report.figures.report_figures.write_report_figures`)."""
    from ..figures.tuning_figures import split_tuning, write_tuning_figures

    out = Path(out)
    written: dict[str, Any] = {}
    pub = Path(published_dir) if published_dir is not None else None
    grids = list(grids)
    if grids:
        write_table(grid_performance(grids, pub / "grid_performance.csv" if pub else None), out,
                     "grid_performance", written)
        tune_paths = split_tuning(grids)[1] if tuning_figures else []
        if tune_paths:
            written["tuning"] = [str(p.relative_to(out)) for p in write_tuning_figures(tune_paths, out / "tuning")]
    models = list(models)
    if models:
        table = final_hyperparameters_table(models, tuned, pub / "final_hyperparameters.csv" if pub else None)
        write_table(table, out, "final_hyperparameters", written)
    return written


__all__ = ["PERFORMANCE_TABLE", "final_hyperparameters_table", "grid_performance", "write_appendix"]
