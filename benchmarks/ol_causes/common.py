"""Shared by the OL cause scripts: evaluate one (CT, BL) pair of OL models under a variant of the paper protocol
and summarise it the way Table 1 (IP*) and Table 3 (validity) do, per training seed."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ctbench.data import load_dataset
from ctbench.evaluation.aggregate import per_run_means, reduction_table
from ctbench.evaluation.protocol import EvalProtocol, evaluate_counterfactuals

#: the published values this study is about (../shared/reference/published/, final version)
PUBLISHED = {"ct_validity": 0.86, "bl_validity": 0.98, "ip_star_reduction_pct": -27.7, "ip_star_pm": 14.59,
             "ip_star_significant": False, "ip_star_ct": 0.12, "ip_star_bl": 0.09, "ip_star_lb": -0.01,
             "ip_star_ub": 0.05}


IP_STAR_KEYS = ["ip_star_reduction_pct", "ip_star_pm", "ip_star_significant", "ip_star_lb", "ip_star_ub",
                "ip_star_ct", "ip_star_bl", "ip_star_delta_mean", "ip_star_delta_sd"]


class TrueLabelIndividuals:
    """A trained model whose ``predict`` returns the evaluation set's true labels, so that the protocol draws each
    individual among the points whose *true* label is the factual class (diagnostic; the code draws among the
    points the model *predicts* as that class, reference §7.2)."""

    def __init__(self, trained, y):
        self._trained, self._y = trained, np.asarray(y)

    def __getattr__(self, name):
        return getattr(self._trained, name)

    def predict(self, X):
        if len(X) != len(self._y):
            raise ValueError(f"predict on {len(X)} rows, but the true labels are for {len(self._y)}")
        return self._y


def evaluate_pair(models: dict, n_runs: int, *, fidelity=None, protocol: dict | None = None,
                  true_label_individuals: bool = False, data=None) -> pd.DataFrame:
    """One row per counterfactual of both models under the paper's OL protocol with ``n_runs`` runs; ``fidelity``
    replaces the models' own switches (evaluation-side ones matter here), ``protocol`` overrides settings."""
    fid = fidelity or next(iter(models.values())).fidelity
    data = data or load_dataset("over", fidelity=fid)
    prot = EvalProtocol.reference("synthetic", n_runs=n_runs, **(protocol or {}))
    if true_label_individuals:
        models = {k: TrueLabelIndividuals(m, data.y_test) for k, m in models.items()}
    return evaluate_counterfactuals(models, data.X_test, data.y_test, prot, fid, n_classes=data.n_classes,
                                    dataset="OL")


def summarise(df: pd.DataFrame, *, ip_star: str = "ip_star", validity: str = "valid") -> dict:
    """Table 3's validity (mean over runs and λ of the mean validity, each model) and Table 1's IP* cell (§7.4)
    with the spread of the per-run differences Δ_r = |m(r, CT)| − |m(r, BL)| that decides the star."""
    v = df.groupby(["objective", "run", "lambda_energy"])[validity].mean().groupby("objective").mean()
    out = {"ct_validity": float(v["full"]), "bl_validity": float(v["vanilla"])}
    d = df.assign(valid=df[validity].astype(bool), ip_star=df[ip_star])
    t = reduction_table(d, "ip_star", kind="ip_star", avg_row=False)
    if t.empty:  # no run with valid counterfactuals of both models (e.g. validity p ≥ τ on OL): IP* undefined
        return {**out, **{k: np.nan for k in IP_STAR_KEYS}}
    t = t.iloc[0]
    pr = per_run_means(d, "ip_star", kind="ip_star").pivot_table(index="run", columns="objective", values="value")
    delta = (pr["full"].abs() - pr["vanilla"].abs()).dropna()
    return {**out, "ip_star_reduction_pct": float(t["reduction_pct"]), "ip_star_pm": float(t["pm"]),
            "ip_star_significant": bool(t["significant"]), "ip_star_lb": float(t["lb"]),
            "ip_star_ub": float(t["ub"]), "ip_star_ct": float(t["ct_mean_abs"]),
            "ip_star_bl": float(t["bl_mean_abs"]), "ip_star_delta_mean": float(delta.mean()),
            "ip_star_delta_sd": float(delta.std(ddof=1))}


def with_switches(fid, **changes):
    """The models' resolved switches with ``changes`` (e.g. ``ce_step_size=0.25``)."""
    return dataclasses.replace(fid, **changes)


def cli_args(argv: list[str], doc: str, default_runs: int, result: str):
    """The scripts' shared command line ``RESULTS SEEDS [N_RUNS [OUT]]``: the paper set's results folder, the seeds
    (``0-9`` or ``0,2,5``), the evaluation runs and the CSV to write (default ``benchmarks/results/<result>``); one
    thread, as the paper jobs run. Returns (root, seeds, n_runs, out)."""
    from pathlib import Path

    import torch
    from evaluate import seeds_of

    if len(argv) < 2:
        raise SystemExit(doc)
    root, seeds = Path(argv[0]), seeds_of(argv[1])
    n_runs = int(argv[2]) if len(argv) > 2 else default_runs
    out = Path(argv[3]) if len(argv) > 3 else Path(__file__).parents[1] / "results" / result
    torch.set_num_threads(1)
    return root, seeds, n_runs, out
