"""docs/fidelity_ls_gap.md, "Moons: the authors' own points": the final Moons vanilla (BL) models of ``single`` on
the reference's own points (``points: julia``) or numpy's (``numpy``, the default: reproduces the committed BL
models), one population per variant. Prints test accuracy, the last epoch's loss and its fall over the last 10
epochs per seed, and writes them to OUT_DIR/moons_<variant>.csv.

Usage: ``python docs/scripts/fidelity_moons_points.py {julia|numpy} OUT_DIR [SEEDS, e.g. 0,1,2,3,4]``.
"""
import sys
from pathlib import Path

import pandas as pd

from ctbench.paper_settings import model_config
from ctbench.training.pipeline import train_population_from_configs

variant, out = sys.argv[1], Path(sys.argv[2])
if variant not in ("julia", "numpy"):
    raise SystemExit(f"variant must be julia or numpy, got {variant!r}")
seeds = [int(s) for s in sys.argv[3].split(",")] if len(sys.argv) > 3 else [0, 1, 2, 3, 4]
out.mkdir(parents=True, exist_ok=True)
cfgs = {f"vanilla_s{s}": model_config("moons", "single", "vanilla", s, data_params={"points": variant})
        for s in seeds}
models = train_population_from_configs(cfgs)
rows = []
for s in seeds:
    m = models[f"vanilla_s{s}"]
    loss = m.log["loss"].to_numpy()
    rows.append({"variant": variant, "seed": s, "acc_test": m.meta["acc_test"],
                 "acc_train": float(m.log["acc_train"].iloc[-1]), "epochs": len(loss),
                 "loss_last": float(loss[-1]), "loss_fall_last10": float(loss[-11] - loss[-1])})
res = pd.DataFrame(rows)
res.to_csv(out / f"moons_{variant}.csv", index=False)
print(res.to_string())
print(f"mean test accuracy {res['acc_test'].mean():.4f}")
