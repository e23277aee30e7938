"""Re-evaluate the committed OL models (CT and BL per training seed) under one evaluation-side difference at a time;
one row per (variant, seed) to ``benchmarks/results/ol-causes.csv`` (issue 25, items 4 and 2).

usage: python benchmarks/ol_causes/evaluate.py MODELS_ROOT SEEDS [N_RUNS] [OUT]
  MODELS_ROOT: the committed paper run's results folder (CT ``models/single/over/full_sS.pt``, BL
  ``models/baseline/over/vanilla_sS.pt``; seeds ≥ 5 under ``retrain/``); SEEDS e.g. 0-9.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from common import cli_args, evaluate_pair, summarise, with_switches  # noqa: E402

from ctbench.constraints import Constraints, infer_domain  # noqa: E402
from ctbench.data import load_dataset  # noqa: E402
from ctbench.training.pipeline import load_model  # noqa: E402

#: variant → (what changes, where the alternative comes from, basis: code / paper / diagnostic)
VARIANTS = {
    "as run": ("nothing: the committed protocol (τ 0.95, T 50, η 0.1, λ_cst 0, box μ ± 2σ ∪ range, ℓ 5, IP* per run)",
               "the authors' code as ported", "code"),
    "IP* pooled over runs": ("IP* groups pooled over the 100 runs (same counterfactuals)",
                             "literal reading of CE.jl compute_divergence (reference §7.3)", "code"),
    "MMD length-scale 0.5": ("Gaussian-kernel length-scale of the IP* MMD 0.5 instead of 5.0",
                             "paper text (reference §11.15)", "paper"),
    "MMD on whole groups": ("IP* MMD on every counterfactual of a group and every test point of the target class "
                            "of the run (no 100-row subsamples; n_sub 1000 ≥ every per-run group and class)",
                            "paper appendix: MMD on the entire subset with y = y⁺ (reference §7.3)", "paper"),
    "step size 0.25": ("counterfactual search step η 0.25 instead of 0.1", "paper text (reference §11.1)", "paper"),
    "test-time λ_cst 0.001": ("ℓ1 cost penalty 0.001 in the test-time ECCo search instead of 0",
                              "paper text: all generators penalise the ℓ1 distance (reference §4.1)", "paper"),
    "box μ ± 3σ": ("evaluation box μ ± 3σ ∪ observed range instead of μ ± 2σ", "paper text (reference §11.2)",
                   "paper"),
    "validity p ≥ τ": ("validity counted as p(y⁺) ≥ τ = 0.95 instead of an argmax flip (same counterfactuals)",
                       "CE.jl validity_strict (reference §7.3)", "diagnostic"),
    "individuals by true label": ("individuals drawn among test points whose true label is the factual class, not "
                                  "the predicted one", "none: the code draws by predicted label (reference §7.2)",
                                  "diagnostic"),
}


def seeds_of(spec: str) -> list[int]:
    lo, _, hi = spec.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def models_of(root: Path, seed: int) -> dict:
    base = root if seed < 5 else root / "retrain"
    return {"full": load_model(base / f"models/single/over/full_s{seed}.pt"),
            "vanilla": load_model(base / f"models/baseline/over/vanilla_s{seed}.pt")}


def rows_for(models: dict, seed: int, n_runs: int) -> list[dict]:
    fid = models["full"].fidelity
    data = load_dataset("over", fidelity=fid)
    out = []

    def add(variant, df, **kw):
        out.append({"variant": variant, "what": VARIANTS[variant][0], "source": VARIANTS[variant][1],
                    "basis": VARIANTS[variant][2], "seed": seed, "n_runs": n_runs, **summarise(df, **kw)})

    base = evaluate_pair(models, n_runs, data=data)
    add("as run", base)
    add("IP* pooled over runs", base, ip_star="ip_star_pooled")
    add("validity p ≥ τ", base, validity="valid_strict")
    add("MMD length-scale 0.5", evaluate_pair(models, n_runs, data=data,
                                              fidelity=with_switches(fid, mmd_length_scale=0.5)))
    add("MMD on whole groups", evaluate_pair(models, n_runs, data=data, protocol={"mmd_n_sub": 1000}))
    add("step size 0.25", evaluate_pair(models, n_runs, data=data, fidelity=with_switches(fid, ce_step_size=0.25)))
    add("test-time λ_cst 0.001", evaluate_pair(models, n_runs, data=data, protocol={"lambda_cost": 0.001}))
    lo, hi = infer_domain(np.vstack([data.X_train, data.X_val]), n_sigma=3.0)
    box3 = {k: _with_box(m, lo, hi) for k, m in models.items()}
    add("box μ ± 3σ", evaluate_pair(box3, n_runs, data=data))
    add("individuals by true label", evaluate_pair(models, n_runs, data=data, true_label_individuals=True))
    return out


def _with_box(trained, lo, hi):
    import dataclasses
    return dataclasses.replace(trained, constraints=Constraints.build(len(lo), domain=(lo, hi)))


def main(argv: list[str]) -> None:
    root, seeds, n_runs, out = cli_args(argv, __doc__, 100, "ol-causes.csv")
    rows = []
    for s in seeds:
        t = time.process_time()
        rows += rows_for(models_of(root, s), s, n_runs)
        print(f"seed {s}: {time.process_time() - t:.1f} CPU-s", flush=True)
        pd.DataFrame(rows).to_csv(out, index=False, float_format="%.6g")


if __name__ == "__main__":
    main(sys.argv[1:])
