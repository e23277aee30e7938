"""The report's evaluation tables from one frame per experiment (issue 21: the report's memory) equal those from one
frame of every experiment, bit for bit, on hand-made rows."""

import numpy as np
import pandas as pd
import pytest

from ctbench.report.tables import paper_tables as pt


def _evals(seed=0):
    rng = np.random.default_rng(seed)
    recs = []
    for exp, objs in (("single", ("full", "vanilla")), ("mutability", ("full", "vanilla")),
                      ("ablation", ("energy", "adversarial"))):
        for ds in ("moons", "lin_sep", "my_data"):
            for s in (0, 1):
                for r in range(4):
                    for lam in (0.1, 1.0):
                        for obj in objs:
                            n = 9
                            ip, ips, cost = rng.gamma(2.0, 1.0, n), rng.normal(0.1, 0.1, n), rng.gamma(3.0, .5, n)
                            ips[rng.random(n) < 0.1] = np.nan
                            valid = rng.random(n) < (0.02 if ds == "my_data" and obj == "full" else 0.7)
                            recs += [(ds, exp, s, obj, lam, r, bool(v), a, b, c)
                                     for v, a, b, c in zip(valid, ip, ips, cost, strict=True)]
    df = pd.DataFrame(recs, columns=["dataset", "experiment", "seed", "objective", "lambda_energy", "run", "valid",
                                     "ip", "ip_star", "cost"])
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _by_exp(df, exps=("single", "mutability")):
    out = {}
    for e in exps:
        f = df[df["experiment"] == e].drop(columns="experiment").reset_index(drop=True)
        if len(f):
            out[e] = f
    return out


@pytest.mark.parametrize("exps", [("single", "mutability", "ablation"), ("single",), ("mutability",)])
def test_tables_from_frames_per_experiment_equal_the_one_frame(exps):
    df = _evals()
    df = df[df["experiment"].isin(exps)].reset_index(drop=True)
    one = df[df["experiment"].isin(["single", "mutability"])]
    per = _by_exp(df)
    for f in (pt.table1, pt.table3, pt.cost_table_unconstrained, lambda e: pt.table1_bootstrap(e, n_boot=40)):
        pd.testing.assert_frame_equal(f(per), f(one), check_exact=True)
    if "ablation" in exps:
        abl = df[df["experiment"] == "ablation"].drop(columns="experiment").reset_index(drop=True)
        single = df[df["experiment"] == "single"].drop(columns="experiment").reset_index(drop=True)
        rows = pd.concat([abl, pt.ablation_shared(abl, single)], ignore_index=True)
        new = pt.ablation_pooled(rows)
        assert len(new) == 3 * 4 * 2
        pd.testing.assert_frame_equal(new, pt.ablation(df), check_exact=True)


def test_report_tables_from_files_equal_the_one_frame(tmp_path):
    """``_evaluation_tables`` on Parquet files (one Arrow read per experiment) gives the tables of the one-frame
    functions on all rows."""
    from ctbench.experiments.evaluation import write

    df = _evals(1).assign(model="m")
    paths = []
    for (ds, s), g in df.groupby(["dataset", "seed"], sort=False):
        g = g.reset_index(drop=True)
        g.attrs["meta"] = {"kind": "counterfactual_evaluation"}
        paths.append(write(g, tmp_path / f"{ds}_s{s}.parquet"))
    got = pt._evaluation_tables(paths, None, 30)
    one = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True).drop(columns="model")
    sm = one[one["experiment"].isin(["single", "mutability"])].reset_index(drop=True)
    want = {"table1": pt.table1(sm), "table1_bootstrap": pt.table1_bootstrap(sm, n_boot=30), "table3": pt.table3(sm),
            "appendix_cost_unconstrained": pt.cost_table_unconstrained(sm), "ablation": pt.ablation(one)}
    for k, v in want.items():
        pd.testing.assert_frame_equal(got[k], v, check_exact=True)


@pytest.mark.parametrize("seeds", [(0, 1), (0,)])
def test_ablation_by_dataset_is_the_one_frame_table(seeds, monkeypatch):
    """One dataset at a time, the ablation table is the one-frame table bit for bit, its rows in the same order:
    datasets interleaved in the files, a dataset whose first kept rows come late, two names with one label, NaN
    metrics and one seed (nothing pooled)."""
    from ctbench.report.tables import ablation_parts
    from ctbench.report.tables.ablation_parts import ablation_by_dataset

    monkeypatch.setattr(ablation_parts, "dataset_label", lambda n: {"moons2": "Moon"}.get(n, pt.dataset_label(n)))
    monkeypatch.setattr(pt, "labelled", lambda d: d.assign(dataset=d["dataset"].map(ablation_parts.dataset_label)))
    monkeypatch.setattr(ablation_parts, "labelled", pt.labelled)
    df = _evals(2)
    df = df[df["seed"].isin(seeds)].reset_index(drop=True)
    df.loc[(df["dataset"] == "moons") & (df.index % 3 == 0), "dataset"] = "moons2"
    df.loc[(df["dataset"] == "lin_sep") & (df.index < 400), "valid"] = False
    abl = df[df["experiment"] == "ablation"].drop(columns="experiment").reset_index(drop=True)
    single = df[df["experiment"] == "single"].drop(columns="experiment").reset_index(drop=True)
    shared = pt.ablation_shared(abl, single)
    want = pt.ablation_pooled(pd.concat([abl, shared], ignore_index=True))
    got = ablation_by_dataset(abl, shared)
    assert set(want["dataset"]) == {"Moon", "LS", "my_data"} and len(want) == 3 * 4 * 2
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert ablation_by_dataset(abl.iloc[:0], shared).empty


def test_ipstar_groupings_and_ablation_rows_from_frames_without_the_experiment_column():
    """The IP* groupings of a single-only frame without ``experiment`` (the report's read) equal those of the
    mixed frame; ``ablation_shared`` returns the single frame itself when it keeps every row (no copy), else the
    rows it keeps."""
    rng = np.random.default_rng(3)
    df = _evals(3)
    df = df.assign(ip_star_run=rng.normal(0.1, 0.1, len(df)), ip_star_pooled=rng.normal(0.1, 0.1, len(df)))
    single = df[df["experiment"] == "single"].drop(columns="experiment").reset_index(drop=True)
    want = pt.ipstar_groupings(df, pt.PUBLISHED_DIR)
    assert len(want) == 3
    pd.testing.assert_frame_equal(pt.ipstar_groupings(single, pt.PUBLISHED_DIR), want, check_exact=True)
    abl = df[df["experiment"] == "ablation"]
    assert pt.ablation_shared(abl, single) is single
    some = pt.ablation_shared(abl.assign(objective="vanilla"), single)
    assert len(some) and set(some["objective"]) == {"full"}


def _old_table1_part(sub, metric, kind, label):
    """``table1_part`` before issue 21's per-dataset loop: the recipe on all rows at once."""
    from ctbench.evaluation.seeds import pool_seeds, seed_level
    from ctbench.report.tables.table1 import _cell_facts, reduction_table

    t = reduction_table(pool_seeds(sub), metric, kind=kind, label=label, avg_row=False)
    missing = [d for d in sub["dataset"].unique() if d not in set(t["dataset"])]
    if missing:
        t = pd.concat([t, pd.DataFrame({"dataset": missing, "metric": label})], ignore_index=True)
    t = t.merge(seed_level(sub, metric, kind, label), on="dataset", how="left")
    return t.merge(_cell_facts(sub, metric), on="dataset", how="left")


@pytest.mark.parametrize("seeds", [(0, 1), (1,)])
def test_table1_part_per_dataset_is_the_one_frame_recipe(seeds):
    """Table 1's rows computed one dataset at a time equal the recipe on all rows, bit for bit and in its order:
    datasets interleaved, one whose first valid rows come late, one without BL rows (shown empty), NaN metrics, one
    seed (nothing pooled), and a dataset of one seed among datasets of two."""
    from ctbench.report.tables.table1 import table1_part

    df = _evals(5)
    df = df[df["seed"].isin(seeds)].reset_index(drop=True)
    df.loc[(df["dataset"] == "lin_sep") & (df.index < 500), "valid"] = False
    extra = df[df["dataset"] == "moons"].assign(dataset="nobl")
    extra = extra[extra["objective"] != "vanilla"]
    one_seed = df[(df["dataset"] == "moons") & (df["seed"] == seeds[0])].assign(dataset="oneseed")
    df = pd.concat([df, extra, one_seed], ignore_index=True)
    for exp, metric, kind in (("single", "ip", "ip"), ("single", "ip_star", "ip_star"), ("mutability", "cost", "cost")):
        sub = df[df["experiment"] == exp].drop(columns="experiment").reset_index(drop=True)
        want = _old_table1_part(sub, metric, kind, "X")
        got = table1_part(sub, metric, kind, "X")
        assert len(want) == 5 and want["dataset"].iloc[-1] == "nobl"
        pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_ablation_from_arrow_tables_is_the_one_frame_table():
    """The report's Arrow path of the ablation table (one dataset's rows converted at a time) equals the one-frame
    table bit for bit, datasets interleaved; a null objective sends it back to the frames (None)."""
    import pyarrow as pa

    from ctbench.report.tables.ablation_parts import ablation_from_tables

    df = _evals(6)
    df.loc[(df["dataset"] == "moons") & (df.index < 900), "valid"] = False
    abl = df[df["experiment"] == "ablation"].drop(columns="experiment").reset_index(drop=True)
    single = df[df["experiment"] == "single"].drop(columns="experiment").reset_index(drop=True)
    want = pt.ablation_pooled(pd.concat([abl, pt.ablation_shared(abl, single)], ignore_index=True))
    table = lambda f: pa.Table.from_pandas(f, preserve_index=False)  # noqa: E731
    pd.testing.assert_frame_equal(ablation_from_tables(table(abl), table(single)), want, check_exact=True)
    only = pt.ablation_pooled(abl)
    pd.testing.assert_frame_equal(ablation_from_tables(table(abl), None), only, check_exact=True)
    assert ablation_from_tables(table(abl.assign(objective=None)), table(single)) is None


@pytest.mark.parametrize("seeds", [(0, 1), (1,)])
def test_ipstar_reductions_by_dataset_are_the_one_frame_rows(seeds):
    """The IP* groupings' per-dataset reductions are the one-frame table's rows (its user pivots on the dataset, so
    only the rows count, not their order)."""
    from ctbench.evaluation.aggregate import reduction_table
    from ctbench.evaluation.seeds import pool_seeds

    rng = np.random.default_rng(8)
    df = _evals(8)
    df = df[(df["experiment"] == "single") & df["seed"].isin(seeds)].reset_index(drop=True)
    df = df.assign(ip_star_run=rng.normal(0.1, 0.1, len(df)), ip_star_pooled=rng.normal(0.1, 0.1, len(df)))
    df.loc[df.index % 7 == 0, "ip_star_pooled"] = np.nan
    got = pt._reductions_by_dataset(df, ("ip_star_run", "ip_star_pooled"))
    for g, m in zip(got, ("ip_star_run", "ip_star_pooled"), strict=True):
        want = reduction_table(pool_seeds(df), m, kind="ip_star", label="IP*", avg_row=False)
        assert len(want) >= 2
        pd.testing.assert_frame_equal(g.sort_values("dataset").reset_index(drop=True),
                                      want.sort_values("dataset").reset_index(drop=True), check_exact=True)


@pytest.mark.parametrize("drop_seed", [False, True])
def test_one_seed_level_from_the_reduction_is_seed_level(drop_seed):
    """Table 1's seed-level columns of one training seed, taken from the cell's own reduction table (issue 21: the
    per-seed tables computed it twice), equal ``seed_level``'s, with or without a ``seed`` column."""
    from ctbench.evaluation.seeds import seed_level
    from ctbench.report.tables.table1 import _seed_level_of, reduction_table

    df = _evals(7)
    df = df[(df["seed"] == 1) & (df["experiment"] == "single")].reset_index(drop=True)
    if drop_seed:
        df = df.drop(columns="seed")
    for ds in ("moons", "my_data"):
        rows = df[df["dataset"] == ds]
        for metric in ("ip", "ip_star"):
            t = reduction_table(rows, metric, kind=metric, label="X", avg_row=False)
            pd.testing.assert_frame_equal(_seed_level_of(rows, t, False, metric, metric, "X"),
                                          seed_level(rows, metric, metric, "X"), check_exact=True)
