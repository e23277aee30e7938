"""Hand-made evaluation files of one training seed, as `ctbench evaluate` writes them (a CSV and its sidecar naming
the seed), for the tests of the per-seed ledger (test_claims_seeds, test_seed_gaps)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd


def eval_file(folder: Path, dataset: str, seed: int, reduction: float, experiment: str = "single",
              cost_follows_ip: bool = False) -> str:
    """10 runs × 20 individuals, every counterfactual valid: BL's IP 10 ± 1%, CT's scaled by 1 − reduction/100
    (``cost_follows_ip``: the cost too, else 1). Named ``{dataset}_s{seed}.csv``, with the experiment in front
    unless it is ``single``."""
    rng = np.random.default_rng(seed)
    rows = []
    for run in range(10):
        for obj, scale in (("full", 1 - reduction / 100), ("vanilla", 1.0)):
            ip = 10.0 * scale * (1 + 0.01 * rng.standard_normal(20))
            rows.append(pd.DataFrame({"dataset": dataset, "experiment": experiment, "seed": seed, "model": obj,
                                      "objective": obj, "lambda_energy": 0.5, "run": run, "individual": range(20),
                                      "valid": True, "ip": ip, "ip_star": ip / 10,
                                      "cost": ip if cost_follows_ip else 1.0}))
    path = folder / (f"{dataset}_s{seed}.csv" if experiment == "single" else f"{experiment}_{dataset}_s{seed}.csv")
    pd.concat(rows, ignore_index=True).to_csv(path, index=False)
    side = {"kind": "counterfactual_evaluation", "experiment": experiment, "dataset": dataset,
            "fidelity": {"mode": "reference"},
            "models": {o: {"seed": seed, "provenance": {"git_commit": "0" * 40}} for o in ("full", "vanilla")},
            "provenance": {"git_commit": "0" * 40},
            "performance": [{"model": o, "objective": o, "accuracy": 1.0, "macro_f1": 1.0}
                            for o in ("full", "vanilla")]}
    Path(f"{path}.json").write_text(json.dumps(side))
    return str(path)
