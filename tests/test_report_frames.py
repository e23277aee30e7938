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
    monkeypatch.setattr(pt, "with_labels", lambda d: d.assign(dataset=d["dataset"].map(ablation_parts.dataset_label)))
    monkeypatch.setattr(ablation_parts, "with_labels", pt.with_labels)
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
