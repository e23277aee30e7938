"""Diagnostic for OL's unconstrained validity: every test-time search on OL runs all T = 50 steps (none reaches
τ = 0.95), so validity measures how far 50 steps carry a counterfactual. This sweeps the step size η of the
committed models' evaluation search and reports each model's logit slope |∇ₓ(z₁ − z₀)| on the test points (the
speed of the search per unit η), beside the Bayes-optimal slope ‖μ₁ − μ₀‖ / σ² of the data's two Gaussians; one row
per (η, seed) to ``benchmarks/results/ol-causes-step.csv``. Not a fidelity change: the code's η is 0.1.

usage: python benchmarks/ol_causes/step_sweep.py MODELS_ROOT SEEDS [N_RUNS] [OUT]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import cli_args, evaluate_pair, with_switches  # noqa: E402
from evaluate import models_of  # noqa: E402

from ctbench.data import load_dataset  # noqa: E402
from ctbench.data.synthetic import julia_blob_centers  # noqa: E402

STEPS = (0.1, 0.125, 0.15, 0.175, 0.2, 0.25)
SIGMA = 2.0  # OL's cluster_std (reference §6.1)


def logit_slope(trained, X) -> float:
    """Median over the test points of ‖∇ₓ(z₁ − z₀)‖₂ (logit units per unit of input)."""
    x = torch.as_tensor(np.asarray(X), dtype=torch.float32).requires_grad_(True)
    z = trained.model.eval()(x)
    (g,) = torch.autograd.grad((z[:, 1] - z[:, 0]).sum(), x)
    return float(g.norm(dim=1).median())


def main(argv: list[str]) -> None:
    root, seeds, n_runs, out = cli_args(argv, __doc__, 25, "ol-causes-step.csv")
    c = np.asarray(julia_blob_centers(), dtype=float)
    bayes_slope = float(np.linalg.norm(c[1] - c[0]) / SIGMA**2)
    rows = []
    for s in seeds:
        models = models_of(root, s)
        fid = models["full"].fidelity
        data = load_dataset("over", fidelity=fid)
        slopes = {k: logit_slope(m, data.X_test) for k, m in models.items()}
        for eta in STEPS:
            df = evaluate_pair(models, n_runs, data=data, fidelity=with_switches(fid, ce_step_size=eta))
            v = df.groupby(["objective", "run", "lambda_energy"])["valid"].mean().groupby("objective").mean()
            full_t = (df["steps"] >= 50).groupby(df["objective"]).mean()  # searches that used all T = 50 steps
            rows.append({"seed": s, "step_size": eta, "n_runs": n_runs, "ct_validity": float(v["full"]),
                         "bl_validity": float(v["vanilla"]), "ct_share_all_steps": float(full_t["full"]),
                         "bl_share_all_steps": float(full_t["vanilla"]), "ct_logit_slope": slopes["full"],
                         "bl_logit_slope": slopes["vanilla"], "bayes_logit_slope": bayes_slope})
        print(f"seed {s}: slopes CT {slopes['full']:.3f} BL {slopes['vanilla']:.3f} (Bayes {bayes_slope:.3f})",
              flush=True)
        pd.DataFrame(rows).to_csv(out, index=False, float_format="%.6g")


if __name__ == "__main__":
    main(sys.argv[1:])
