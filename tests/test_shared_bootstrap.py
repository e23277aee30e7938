"""Table 1's bootstrap with draws shared between metrics (issue 21): bit for bit the per-frame bootstrap."""

import numpy as np
import pandas as pd
import pytest

import ctbench.evaluation.aggregate as agg
from ctbench.evaluation import bootstrap_reduction
from ctbench.evaluation.seeds import pool_seeds
from ctbench.report.common import with_labels
from ctbench.report.tables import shared_bootstrap as sb
from ctbench.report.tables.paper_tables import dataset_seed, table1_bootstrap


def _evals(seed=0, datasets=("circles", "moons"), runs=6, n_ind=12, seeds=(0, 1), nan_cost=False):
    """Per-counterfactual rows of `single` and `mutability` with the same individuals (the paper's layout)."""
    rng = np.random.default_rng(seed)
    recs = []
    for exp in ("single", "mutability"):
        for ds in datasets:
            for s in seeds:
                for r in range(runs):
                    for lam in (0.1, 1.0, 5.0):
                        for obj in ("full", "vanilla"):
                            ip = rng.gamma(2.0, 1.0, n_ind)
                            cost = rng.gamma(3.0, 0.5, n_ind)
                            if nan_cost and ds == "moons" and exp == "mutability":
                                cost[rng.random(n_ind) < 0.2] = np.nan
                            valid = rng.random(n_ind) < 0.7
                            recs += [(ds, exp, s, obj, lam, r, bool(v), float(a), float(b))
                                     for v, a, b in zip(valid, ip, cost, strict=True)]
    df = pd.DataFrame(recs, columns=["dataset", "experiment", "seed", "objective", "lambda_energy", "run", "valid",
                                     "ip", "cost"])
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _old_table1_bootstrap(evals, n_boot, seed=2025):
    """``table1_bootstrap`` before the shared draws (a124d81): one ``bootstrap_reduction`` per (experiment, dataset)."""
    from ctbench.report.common import paper_sorted

    parts = []
    for exp, metric, kind, label in (("single", "ip", "ip", "IP"), ("mutability", "cost", "cost", "Cost")):
        sub = evals[evals["experiment"] == exp]
        for name, g in sub.groupby("dataset", sort=False, observed=True):
            parts.append(bootstrap_reduction(pool_seeds(with_labels(g)), metric, kind=kind, label=label,
                                             n_boot=n_boot, seed=dataset_seed(seed, str(name))))
    parts = [p for p in parts if not p.empty]
    return paper_sorted(pd.concat(parts, ignore_index=True)) if parts else pd.DataFrame()


@pytest.mark.parametrize("block", [200, 30, 10**6])
@pytest.mark.parametrize("nan_cost", [False, True])
def test_shared_bootstraps_are_bitwise_the_per_frame_bootstrap(block, nan_cost, monkeypatch):
    """Each frame's row equals ``bootstrap_reduction`` on it alone, exactly, whether the draws are shared (same
    strata) or not (NaN costs drop rows: other strata), for blocks of a few cells (equal cells summed down the
    block's axis), blocks smaller than a cell (bincount) and one block holding several replicates."""
    monkeypatch.setattr(agg, "_BLOCK", block)
    df = pool_seeds(_evals(nan_cost=nan_cost))
    calls = []
    real = sb._shared_sums
    monkeypatch.setattr(sb, "_shared_sums", lambda rng, pairs, *a: calls.append(len(pairs)) or real(rng, pairs, *a))
    for ds in ("circles", "moons"):
        jobs = [(df[(df["dataset"] == ds) & (df["experiment"] == "single")], "ip", "ip", "IP"),
                (df[(df["dataset"] == ds) & (df["experiment"] == "mutability")], "cost", "cost", "Cost")]
        got = sb.shared_bootstraps(jobs, n_boot=70, seed=7)
        for (frame, metric, kind, label), g in zip(jobs, got, strict=True):
            want = bootstrap_reduction(frame, metric, kind=kind, label=label, n_boot=70, seed=7)
            pd.testing.assert_frame_equal(g, want, check_exact=True)
    # shared draws where the strata agree, one stream per frame where they do not
    assert calls == ([2, 2] if not nan_cost else [2, 1, 1])


def test_shared_bootstraps_fall_back_for_empty_and_mixed_frames():
    df = pool_seeds(_evals(datasets=("circles", "moons"), runs=3))
    single = df[df["experiment"] == "single"]
    jobs = [(single, "ip", "ip", "IP"), (single.iloc[:0], "ip", "ip", "IP")]
    got = sb.shared_bootstraps(jobs, n_boot=20, seed=3)
    for (frame, metric, kind, label), g in zip(jobs, got, strict=True):
        pd.testing.assert_frame_equal(g, bootstrap_reduction(frame, metric, kind=kind, label=label, n_boot=20,
                                                             seed=3), check_exact=True)
    assert len(got[0]) == 2 and got[1].empty
    with pytest.raises(ValueError, match="n_boot"):
        sb.shared_bootstraps(jobs, n_boot=0)


@pytest.mark.parametrize("nan_cost", [False, True])
def test_table1_bootstrap_is_the_old_loop(nan_cost, monkeypatch):
    """The report's bootstrap table equals the loop of one bootstrap per (experiment, dataset) it replaced."""
    monkeypatch.setattr(agg, "_BLOCK", 300)
    evals = _evals(seed=4, datasets=("moons", "lin_sep", "my_data"), nan_cost=nan_cost)
    evals = evals[~((evals["dataset"] == "lin_sep") & (evals["experiment"] == "mutability"))]
    new = table1_bootstrap(evals, n_boot=50, draws="rows")
    old = _old_table1_bootstrap(evals, n_boot=50)
    assert len(new) == 5 and (new["draws"] == "rows").all()
    pd.testing.assert_frame_equal(new.drop(columns="draws"), old, check_exact=True)
