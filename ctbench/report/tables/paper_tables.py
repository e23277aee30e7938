"""The paper's tables and figures from evaluation outputs, next to the published values (reference §9).

Inputs are the tidy files written by ``ctbench evaluate | robustness | attribution`` (each row carries its
``experiment``: ``single`` = unconstrained models, ``mutability`` = models trained and evaluated with the protected
features immutable, ``ablation`` = CT, CD, AR and BL). :func:`write_report` writes every table as CSV and Markdown
(the figures: :mod:`ctbench.report.figures.report_figures`); a table whose experiment has not been run is left out,
not faked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...evaluation.aggregate import ablation_table, reduction_table, validity_table
from ...facts import OBJECTIVE_LABELS, PAPER_ORDER
from ...io import atomic_write_json, atomic_write_text, machine, provenance
from ..common import dataset_label, paper_sorted
from ..markdown import frame_to_markdown
from ..settings import ReportSettings
from .compact import as_text
from .relabel import dataset_rows, labelled
from .table1 import PUBLISHED_DIR, agreement_counts, compare_versions, experiment_rows, pool_seeds
from .table1 import table1 as table1_cells
from .tidy_files import read_frames


def table1(evals: pd.DataFrame | Mapping[str, pd.DataFrame], settings: ReportSettings | None = None) -> pd.DataFrame:
    """Table 1: % reduction CT vs BL of IP and IP* (``single``) and cost (``mutability``), with the paper's ± and
    star, the seed-level interval, validity and computability flags (:mod:`ctbench.report.tables.table1`). ``evals``:
    one frame, or a mapping experiment → frame (:func:`~ctbench.report.tables.table1.experiment_rows`)."""
    if isinstance(evals, Mapping):
        return table1_cells({k: labelled(v) for k, v in evals.items()}, settings)
    return table1_cells(labelled(evals), settings)


def dataset_seed(seed: int, dataset: str) -> int:
    """A dataset's own seed from the report's: stable across runs, platforms and Python's hash randomisation."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{dataset}".encode()).digest()[:8], "little")


def table1_bootstrap(evals: pd.DataFrame | Mapping[str, pd.DataFrame], n_boot: int = 1000,
                     seed: int = 2025, draws: str = "cells") -> pd.DataFrame:
    """The cleaner estimate: bootstrap over individuals, percentile CIs of the mean difference and the reduction.

    Each replicate resamples the counterfactual rows with replacement within every (run, objective, λ) stratum, the
    unit the evaluation draws independently (:func:`ctbench.evaluation.aggregate.bootstrap_reduction`).
    ``draws="cells"`` (default since issue 21) draws what the statistic uses of each stratum, its valid count
    (binomial, exact) and the sum of its valid values (exact for ≤ 30 values, else normal with the exact mean and
    variance: :mod:`.cell_bootstrap`), not 7.1M rows per replicate; ``draws="rows"`` draws every row (the tables
    before issue 21). The ``draws`` column records which ran.

    IP* is left out: it is a group statistic (one MMD per group of counterfactuals), so resampling individuals would
    need the MMD recomputed for every resample; reusing the group values gave zero-width intervals (issue 11)."""
    from .shared_bootstrap import Bootstraps

    boots = Bootstraps(n_boot=n_boot, draws=draws)
    for e, (exp, *_) in enumerate(_BOOT_SPECS):
        _add_bootstraps(boots, e, experiment_rows(evals, exp), seed)
    return _bootstrap_table(boots)


#: (experiment, metric, paper_value kind, label) of the bootstrap table's two parts
_BOOT_SPECS = (("single", "ip", "ip", "IP"), ("mutability", "cost", "cost", "Cost"))


def _add_bootstraps(boots, e: int, sub: pd.DataFrame, seed: int = 2025) -> None:
    """Part ``e`` of :data:`_BOOT_SPECS` from its experiment's rows, each dataset with its own random stream (a
    dataset's interval does not depend on which other datasets the report holds: the verify slice reproduces the
    full set's rows); a dataset's IP and cost share their draws where their strata agree (shared_bootstrap)."""
    if not len(sub):
        return
    _, metric, kind, label = _BOOT_SPECS[e]
    for name in pd.unique(sub["dataset"].dropna()):
        boots.add((e, name), pool_seeds(labelled(sub[sub["dataset"] == name])), metric, kind, label,
                  dataset_seed(seed, str(name)))


def _bootstrap_table(boots) -> pd.DataFrame:
    """The bootstrap table: every single dataset's row, then every mutability one's, in the paper's order."""
    done = boots.run()
    parts = [done[k] for k in boots.order]
    parts = [p for p in parts if not p.empty]  # no CT/BL pair in any cell: no table (not a KeyError)
    return paper_sorted(pd.concat(parts, ignore_index=True)).assign(draws=boots.draws) if parts else pd.DataFrame()


def ipstar_groupings(evals: pd.DataFrame, published_dir: Path | None = None) -> pd.DataFrame:
    """IP* reduction with groups per evaluation run (Table 1's default) and pooled over runs, side by side, each with
    its agreement (sign and significance) with every published version, so the choice can be judged on all
    datasets (issue 11). Empty when the evaluations predate the two columns."""
    from .table1 import VERSIONS, agreement, published_versions

    # a frame of the single rows only, without the experiment column (the report's): used as it is, no copy
    single = evals[evals["experiment"] == "single"] if "experiment" in evals else evals
    if not len(single) or not {"ip_star_run", "ip_star_pooled"} <= set(single.columns):
        return pd.DataFrame()
    pub = published_versions(published_dir) if published_dir is not None else None
    rows = []
    per_run, pooled = _reductions_by_dataset(labelled(single), ("ip_star_run", "ip_star_pooled"))
    for t, name in ((per_run, "per_run"), (pooled, "pooled")):
        for _, r in t.iterrows():
            row = {"dataset": r["dataset"], "grouping": name, "reduction_pct": r["reduction_pct"], "pm": r["pm"],
                   "significant": r["significant"]}
            for v in VERSIONS if pub is not None else ():
                p = pub[(pub["version"] == v) & (pub["dataset"] == r["dataset"]) & (pub["metric"] == "IP*")]
                row[f"{v}_agreement"] = agreement(r["reduction_pct"], r["significant"],
                                                  *(p[["reduction_pct", "significant"]].iloc[0] if len(p)
                                                    else (np.nan, pd.NA)))
            rows.append(row)
    long = pd.DataFrame(rows)
    if long.empty:  # no CT/BL pair in any cell
        return long
    wide = long.pivot(index="dataset", columns="grouping", values=[c for c in long.columns
                                                                   if c not in ("dataset", "grouping")])
    wide.columns = [f"{v}_{g}" for v, g in wide.columns]
    for c in wide.columns:
        if c.startswith(("reduction_pct", "pm")):
            wide[c] = wide[c].astype(float)
    return paper_sorted(wide.reset_index())


def _reductions_by_dataset(frame: pd.DataFrame, metrics: tuple[str, ...]) -> list[pd.DataFrame]:
    """``reduction_table(pool_seeds(frame), m, kind="ip_star", label="IP*", avg_row=False)`` per metric ``m``,
    one dataset's rows at a time (issue 21: 7M rows at once cost ~1 GB of temporaries): the same rows per dataset,
    the datasets in the order of their first rows, not the one-frame table's (its only user pivots on the dataset,
    which sorts them)."""
    pool = "seed" in frame and frame["seed"].nunique() > 1
    parts: list[list[pd.DataFrame]] = [[] for _ in metrics]
    for _, at in dataset_rows(frame):
        rows = frame.iloc[at]
        if pool:  # pool_seeds' expression, decided on all rows
            rows = rows.assign(run=rows["seed"].astype(np.int64) * 1_000_000 + rows["run"].astype(np.int64))
        for part, m in zip(parts, metrics, strict=True):
            t = reduction_table(rows, m, kind="ip_star", label="IP*", avg_row=False)
            if len(t):
                part.append(t)
    return [pd.concat(p, ignore_index=True) if p else
            reduction_table(pool_seeds(frame.iloc[:0]), m, kind="ip_star", label="IP*", avg_row=False)
            for p, m in zip(parts, metrics, strict=True)]


def table3(evals: pd.DataFrame | Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 3: mean validity of CT and BL, unconstrained (``single``) and constrained (``mutability``); ``evals``
    one frame or a mapping experiment → frame."""
    cols = [_table3_column(experiment_rows(evals, exp), exp) for exp in _TABLE3_COLUMNS]
    return _table3_from(cols)


#: experiment → Table 3's column group
_TABLE3_COLUMNS = {"single": "unconstrained", "mutability": "constrained"}


def _table3_column(sub: pd.DataFrame, exp: str) -> pd.DataFrame | None:
    """Table 3's CT and BL columns of one experiment from its rows (None: no CT or BL row)."""
    sub = sub[sub["objective"].isin(["full", "vanilla"])] if len(sub) else sub
    if not len(sub):
        return None
    v = as_text(validity_table(pool_seeds(labelled(sub)), avg_row=False))
    v["column"] = v["objective"].map({"full": "ct", "vanilla": "bl"}) + "_" + _TABLE3_COLUMNS[exp]
    return v.pivot(index="dataset", columns="column", values="validity")


def _table3_from(cols: list[pd.DataFrame | None]) -> pd.DataFrame:
    """Table 3 from its :func:`_table3_column` parts in :data:`_TABLE3_COLUMNS` order, with the Avg. row."""
    cols = [c for c in cols if c is not None]
    if not cols:
        return pd.DataFrame()
    out = pd.concat(cols, axis=1).reset_index()
    avg = out.drop(columns="dataset").mean().to_frame().T.assign(dataset="Avg.")
    return paper_sorted(pd.concat([out, avg], ignore_index=True))


#: a Table-3 cell agrees when our validity is within this of the published one (issue 11's target)
VALIDITY_TOLERANCE = 0.05


def validity_agreement(t3: pd.DataFrame) -> pd.DataFrame:
    """How many Table-3 cells (dataset × CT/BL × unconstrained/constrained, Avg. excluded) lie within
    :data:`VALIDITY_TOLERANCE` of the published validity, and which do not."""
    diffs = [c for c in t3.columns if c.startswith("diff_")]
    if not diffs:
        return pd.DataFrame()
    cells = t3[t3["dataset"] != "Avg."].melt(id_vars="dataset", value_vars=diffs, var_name="column",
                                             value_name="diff").dropna(subset=["diff"])
    off = cells[cells["diff"].abs() > VALIDITY_TOLERANCE]
    return pd.DataFrame([{"cells": len(cells), "within": len(cells) - len(off), "tolerance": VALIDITY_TOLERANCE,
                          "outside": "; ".join(f"{r.dataset} {r.column[5:]} {r.diff:+.2f}"
                                               for r in off.itertuples())}])


def cost_table_unconstrained(evals: pd.DataFrame | Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Appendix: cost reduction without mutability constraints (``single``)."""
    single = experiment_rows(evals, "single")
    return reduction_table(pool_seeds(labelled(single)), "cost", kind="cost", label="Cost") if len(single) \
        else pd.DataFrame()


def ablation(evals: pd.DataFrame) -> pd.DataFrame:
    """Fig. 6: IP and IP* reductions of CT, CD and AR against BL (``ablation``). CT and BL are the ``single``
    experiment's models and rows when the ablation evaluation leaves them out (the workflow does: same models, same
    protocol, so the same rows); the recipe is the authors' ablation recipe (ratio of means), not Table 1's."""
    sub = evals[evals["experiment"] == "ablation"]
    if not len(sub):
        return pd.DataFrame()
    return ablation_pooled(pd.concat([sub, ablation_shared(sub, evals[evals["experiment"] == "single"])],
                                     ignore_index=True))


def ablation_shared(sub: pd.DataFrame, single: pd.DataFrame) -> pd.DataFrame:
    """The ``single`` rows that :func:`ablation` adds to the ``ablation`` rows ``sub``: CT's and BL's, unless the
    ablation evaluation has them itself."""
    rows = (single["objective"].isin(["full", "vanilla"]) & ~single["objective"].isin(set(sub["objective"]))).to_numpy()
    return single if rows.all() else single[rows]  # all of them (the workflow's case): no copy of 7M rows


def ablation_pooled(rows: pd.DataFrame) -> pd.DataFrame:
    """:func:`ablation` from its rows (the ``ablation`` rows, then :func:`ablation_shared`'s), seeds not yet pooled:
    the report builds them from two reads and frees them first (issue 21: the report's memory)."""
    sub = pool_seeds(rows)
    del rows
    parts = [ablation_table(labelled(sub), m, kind=m, label=lab) for m, lab in (("ip", "IP"), ("ip_star", "IP*"))]
    return pd.concat(parts, ignore_index=True)


def table2(attrib: pd.DataFrame) -> pd.DataFrame:
    """Table 2: median standardised IG on the protected features with the 2.5/97.5% quantiles over rounds."""
    if attrib.empty:
        return attrib
    g = labelled(attrib).groupby(["dataset", "objective"])["value"]
    out = g.agg(median="median", lb_2_5=lambda v: np.quantile(v, 0.025), ub_97_5=lambda v: np.quantile(v, 0.975),
                n_rounds="count").reset_index()
    out["model"] = out["objective"].map(OBJECTIVE_LABELS).fillna(out["objective"])
    return paper_sorted(out)


def with_published(ours: pd.DataFrame, published_csv: Path, keys: list[str], value_map: dict[str, str]) -> pd.DataFrame:
    """Outer-join ``ours`` with a published CSV on ``keys``; ``value_map`` maps our column → published column."""
    if ours.empty or not published_csv.exists():
        return ours
    pub = pd.read_csv(published_csv)
    pub = pub.rename(columns={v: f"pub_{k}" for k, v in value_map.items()})
    keep = keys + [f"pub_{k}" for k in value_map]
    out = ours.merge(pub[keep], on=keys, how="left")
    for k in value_map:
        out[f"diff_{k}"] = out[k] - out[f"pub_{k}"]
    return out


def training_time_frame(models: Iterable[str | Path]) -> pd.DataFrame:
    """``training_time.csv``'s frame from the saved models (their sidecars; the experiment is the folder the
    workflow saves them in): the report writes it, the per-seed ledger job reads the same frame."""
    from .training_time import training_times

    models = list(models)
    tt = training_times([Path(f"{m}.json") for m in models])
    tt["experiment"] = [Path(m).parent.parent.name for m in models]
    return tt


def write_table(df: pd.DataFrame, out: Path, name: str, written: dict[str, Any]) -> None:
    if df is None or df.empty:
        return
    atomic_write_text(out / f"{name}.csv", df.to_csv(index=False))
    atomic_write_text(out / f"{name}.md", frame_to_markdown(df, digits=3))
    written[name] = {"rows": len(df), "csv": f"{name}.csv", "md": f"{name}.md"}




#: the evaluation frames' text columns read as sorted categoricals (issue 21: masks and group-bys gather one-byte
#: codes, not Arrow strings); the tables are the same (tests/test_report_compact.py)
COMPACT = True
#: the design columns of an evaluation file that every table reads
EVAL_KEYS = ("dataset", "experiment", "seed", "objective", "lambda_energy", "run", "valid")


def _evaluation_tables(evaluations: list[str | Path], pub: Path | None, n_boot: int,
                       settings: ReportSettings | None = None) -> dict[str, pd.DataFrame]:
    """The tables of the evaluation files, in the order they are written. Passes over the files, each reading only
    the rows and columns its tables use (issue 21: one frame of all 24 columns of the paper's 21.4M rows took
    11.3 GB, the three-pass reader before this 3.7 GB): the ``single`` rows (IP, IP*, cost), then the ``mutability``
    rows (cost), each freed once Tables 1 and 3, the bootstrap and the cost table have their part of it; the IP*
    groupings from ``single``; the ablation from ``ablation`` and ``single`` (IP, IP*), one dataset at a time. Every
    table is computed from the same rows in the same order as from one frame of every column, so it is the same to
    the last bit (tests/test_report_frames.py; the report's golden tables)."""
    from .ablation_parts import ablation_by_dataset, ablation_from_tables
    from .eval_frames import read_report_evaluations as read_evaluations
    from .eval_frames import read_report_table, release_arrow_memory

    tables: dict[str, pd.DataFrame | None] = dict.fromkeys(
        ("table1_agreement", "table1", "ipstar_groupings", "table1_bootstrap", "appendix_ci", "table3",
         "table3_agreement", "appendix_cost_unconstrained", "ablation"))
    if not evaluations:
        return tables
    # one experiment's rows in memory at a time, without the experiment column: each table's part of it is made,
    # then the frame is freed (Table 1, Table 3 and the bootstrap are put together from their parts below)
    from .shared_bootstrap import Bootstraps
    from .table1 import SPECS as T1_SPECS
    from .table1 import table1_from_parts, table1_part

    t1_parts, t3_parts, boots, seen = {}, {}, Bootstraps(n_boot=n_boot, draws="cells"), False
    for exp in ("single", "mutability"):
        metrics = ("ip", "ip_star", "cost") if exp == "single" else ("cost",)  # the metrics of its tables
        f = read_evaluations(evaluations, (*EVAL_KEYS, *metrics), experiments=(exp,), keep_experiment=False,
                             compact=COMPACT)
        if f.empty:
            continue
        seen = True
        rows_l = labelled(f)  # Table 1's rows carry the labels
        for i, (e, metric, kind, label) in enumerate(T1_SPECS):
            if e == exp:
                t1_parts[i] = table1_part(rows_l, metric, kind, label)
        del rows_l
        t3_parts[exp] = _table3_column(f, exp)
        if exp == "single":
            tables["appendix_cost_unconstrained"] = cost_table_unconstrained({"single": f})
        for e, spec in enumerate(_BOOT_SPECS):
            if spec[0] == exp:
                _add_bootstraps(boots, e, f)
        del f
        release_arrow_memory()
    if seen:
        t1 = table1_from_parts([t1_parts[i] for i in sorted(t1_parts)], settings)
        ci = t1.copy()
        if pub is not None and (pub / "table1_reductions.csv").exists() and not t1.empty:
            t1 = compare_versions(t1, pub)
            tables["table1_agreement"] = agreement_counts(t1)
        tables["table1"] = t1
        tables["table1_bootstrap"] = _bootstrap_table(boots)
        ci = ci[ci["dataset"] != "Avg."][["dataset", "metric", "ct_mean_abs", "bl_mean_abs", "lb", "ub"]] \
            if not ci.empty else ci
        if pub is not None and not ci.empty:
            ci = with_published(ci, pub / "appendix_ci_table.csv", ["dataset", "metric"],
                                {"ct_mean_abs": "ct_mean_abs", "bl_mean_abs": "bl_mean_abs", "lb": "lb_99",
                                 "ub": "ub_99"})
        tables["appendix_ci"] = ci
        t3 = _table3_from([t3_parts.get(e) for e in _TABLE3_COLUMNS])
        if pub is not None and not t3.empty:
            t3 = with_published(t3, pub / "table3_validity.csv", ["dataset"],
                                {c: c for c in t3.columns if c != "dataset"})
        tables["table3"] = t3
        tables["table3_agreement"] = validity_agreement(t3)
    del boots
    single = read_evaluations(evaluations, (*EVAL_KEYS, "ip_star_run", "ip_star_pooled"), experiments=("single",),
                              keep_experiment=False, compact=COMPACT)
    if not single.empty:
        tables["ipstar_groupings"] = ipstar_groupings(single, pub)
    del single
    # the ablation: from Arrow tables, one dataset's rows as a frame at a time; else from frames
    cols = (*EVAL_KEYS, "ip", "ip_star")
    from .ablation_files import ablation_from_files

    done = ablation_from_files(evaluations, cols)  # one dataset's files at a time, where their statistics allow
    if done is None:
        ok, abl_t = read_report_table(evaluations, cols, ("ablation",), keep_experiment=False)
        ok_single, single_t = read_report_table(evaluations, cols, ("single",), keep_experiment=False) \
            if ok and abl_t is not None else (False, None)
        done = ablation_from_tables(abl_t, single_t) if ok and ok_single and abl_t is not None else None
        del abl_t, single_t
    if done is not None:
        tables["ablation"] = done if len(done) else None
    else:
        abl = read_evaluations(evaluations, cols, experiments=("ablation",), keep_experiment=False)
        if not abl.empty:
            single = read_evaluations(evaluations, cols, experiments=("single",), keep_experiment=False)
            shared = ablation_shared(abl, single) if not single.empty else abl.iloc[:0]
            del single
            tables["ablation"] = ablation_by_dataset(abl, shared)  # one dataset's rows at a time
    return tables


def write_report(out: str | Path, *, evaluations: Iterable[str | Path] = (), robustness: Iterable[str | Path] = (),
                 attribution: Iterable[str | Path] = (), published_dir: str | Path | None = PUBLISHED_DIR,
                 benchmarks_dir: str | Path | None = None, n_boot: int = 1000,
                 settings: ReportSettings | None = None) -> dict[str, Any]:
    """Write all tables and figures that the given outputs support; returns an index of what was written.

    ``published_dir`` defaults to the copy of ``reference/published`` shipped with ctbench; ``None`` leaves the
    published columns out. ``benchmarks_dir`` (Snakemake ``benchmark:`` files) adds the CPU time per stage.
    ``settings``: the report's aggregation switches (default: the authors' behaviour), recorded in ``index.json``.
    """
    settings = settings or ReportSettings()
    out = Path(out)
    pub = Path(published_dir) if published_dir else None
    evaluations = list(evaluations)
    robust = read_frames(robustness, "robustness file", ("dataset", "model"))
    attrib = read_frames(attribution, "attribution file", ("dataset", "model"))
    written: dict[str, Any] = {}
    for name, table in _evaluation_tables(evaluations, pub, n_boot, settings).items():
        write_table(table, out, name, written)
    if not attrib.empty:
        t2 = table2(attrib)
        if pub is not None:
            t2 = with_published(t2, pub / "table2_integrated_gradients.csv", ["dataset", "model"],
                                {"median": "median", "lb_2_5": "lb_2.5", "ub_97_5": "ub_97.5"})
        write_table(t2, out, "table2", written)
    if not robust.empty:
        write_table(robust, out, "robustness", written)
    if benchmarks_dir is not None:
        from .stage_times import stage_times

        write_table(stage_times(benchmarks_dir), out, "benchmarks", written)
    atomic_write_json(out / "index.json", {"written": written, "provenance": provenance(),
                                           "settings": settings.to_dict()})
    return written


def _performance_rows(sidecars: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for side in sidecars:
        if side.get("experiment") != "single":
            continue
        seed = next((m.get("seed") for m in (side.get("models") or {}).values()), None)
        for rec in side.get("performance", []):
            rows.append({"dataset": dataset_label(side["dataset"]), "seed": seed, **rec})
    df = pd.DataFrame(rows)
    return df[df["objective"].isin(["full", "vanilla"])] if len(df) else df


def performance_by_seed(sidecars: list[dict[str, Any]]) -> pd.DataFrame:
    """Test accuracy and macro F1 of CT and BL per dataset and training seed (``single`` experiment): an unconverged
    model of one seed shows here before it moves a Table-1 cell."""
    df = _performance_rows(sidecars)
    if not len(df) or not {"full", "vanilla"} <= set(df["objective"]):  # CT and BL both needed (not one model twice)
        return pd.DataFrame()
    w = df.pivot_table(index=["dataset", "seed"], columns="objective", values=["accuracy", "macro_f1"],
                       aggfunc="first")
    out = pd.DataFrame({"acc_ct": w[("accuracy", "full")], "acc_bl": w[("accuracy", "vanilla")],
                        "f1_ct": w[("macro_f1", "full")], "f1_bl": w[("macro_f1", "vanilla")]}).reset_index()
    order = {d: i for i, d in enumerate(PAPER_ORDER)}
    return out.sort_values(["dataset", "seed"], key=lambda c: c.map(order) if c.name == "dataset" else c,
                           ignore_index=True)


def performance_table(sidecars: list[dict[str, Any]]) -> pd.DataFrame:
    """Test accuracy and macro F1 of CT and BL per dataset (``single`` experiment), mean over training seeds, with
    ``acc_diff`` = CT − BL and the number of seeds; from the evaluation sidecars' ``performance`` records."""
    df = _performance_rows(sidecars)
    if not len(df) or not {"full", "vanilla"} <= set(df["objective"]):  # CT and BL both needed (not one model twice)
        return pd.DataFrame()
    g = df.groupby(["dataset", "objective"])[["accuracy", "macro_f1"]].mean().unstack("objective")
    out = pd.DataFrame({"acc_ct": g[("accuracy", "full")], "acc_bl": g[("accuracy", "vanilla")],
                        "f1_ct": g[("macro_f1", "full")], "f1_bl": g[("macro_f1", "vanilla")]})
    out["acc_diff"] = out["acc_ct"] - out["acc_bl"]
    out["n_seeds"] = df.groupby("dataset")["seed"].nunique()
    return paper_sorted(out.reset_index())


def write_extras(out: str | Path, *, evaluations: Iterable[str | Path] = (), models: Iterable[str | Path] = (),
                 tuned: Iterable[str | Path] = (), grids: Iterable[str | Path] = (),
                 profile: str = "", config: dict[str, Any] | None = None,
                 versions: dict[str, Any] | None = None,
                 sources: dict[str, tuple[str, str]] | None = None,
                 settings: ReportSettings | None = None) -> dict[str, Any]:
    """Training times, tuning choices, the grids' effects and ``provenance.json`` for the book: versions, machine, the
    resolved workflow config (``config``), the fidelity switches, and the code versions that produced the inputs
    (``versions``: :func:`ctbench.report.run_set.check_versions` of every input; by default from the evaluation and
    model sidecars), with counts and ``mixed``: a result set made over several code versions says so. ``sources``:
    dataset name → (source, licence) of its raw files for the dataset table. ``settings``: the report's aggregation
    switches, recorded as ``report_settings``."""
    import json
    from datetime import UTC, datetime

    out = Path(out)
    written: dict[str, Any] = {}
    evaluations, models = list(evaluations), list(models)
    if models:
        write_table(training_time_frame(models), out, "training_time", written)
    tuned = list(tuned)
    if tuned:
        rows = [{"dataset": dataset_label(Path(t).parent.name),
                 **json.loads(Path(t).read_text())} for t in tuned]
        write_table(pd.DataFrame(rows), out, "tuning", written)
    grids = list(grids)
    if grids:  # their figures: ctbench.report.figures.report_figures
        from .grid_tables import grid_effects

        write_table(grid_effects(grids), out, "grid_effects", written)
    from .extra_tables import dataset_table, redundancy_table

    write_table(redundancy_table(evaluations), out, "redundancy", written)
    write_table(dataset_table(models, sources), out, "datasets", written)
    sidecars = [json.loads(Path(f"{e}.json").read_text()) for e in evaluations if Path(f"{e}.json").exists()]
    write_table(performance_table(sidecars), out, "performance", written)
    write_table(performance_by_seed(sidecars), out, "performance_seeds", written)
    fid = sidecars[0]["fidelity"] if sidecars else None
    if versions is None:
        from ..run_set import code_versions, summary

        versions = summary(code_versions({"evaluations": evaluations, "models": models}))
    atomic_write_json(out / "provenance.json", {
        "profile": profile, "written_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "fidelity": fid, "report_settings": (settings or ReportSettings()).to_dict(),
        **provenance(), "machine": machine(), "config": config, **versions})
    written["provenance"] = "provenance.json"
    return written
