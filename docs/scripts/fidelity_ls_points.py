"""docs/fidelity_ls_gap.md, "Cause (b) measured": LS with the reference's own points (``blob_points: julia``) or
numpy's points around the same reference centres (``numpy``). Final LS models of ``single`` (CT + BL of the given
seeds, one population), the paper protocol with ``n_runs`` 25, Table 1's reduction recipe per seed.

Usage: ``python docs/scripts/fidelity_ls_points.py {julia|numpy} OUT_DIR [SEEDS, e.g. 0,1,2,3,4]``.
"""
import sys
from pathlib import Path

import pandas as pd

from ctbench.evaluation.aggregate import reduction_table
from ctbench.experiments import evaluation
from ctbench.paper_settings import model_config
from ctbench.training.pipeline import train_population_from_configs

variant, out = sys.argv[1], Path(sys.argv[2])
seeds = [int(s) for s in sys.argv[3].split(",")] if len(sys.argv) > 3 else [0, 1, 2, 3, 4]
params = {"blob_points": "julia"} if variant == "julia" else {}
out.mkdir(parents=True, exist_ok=True)
cfgs = {f"{obj}_s{s}": model_config("lin_sep", "single", obj, s, data_params=params)
        for s in seeds for obj in ("full", "vanilla")}
models = train_population_from_configs(cfgs)
rows = []
for s in seeds:
    paths = {}
    for obj in ("full", "vanilla"):
        m = models[f"{obj}_s{s}"]
        paths[obj] = str(m.save(out / f"{obj}_s{s}.pt"))
    df = evaluation.run({"models": paths, "experiment": "single", "settings": {"n_runs": 25}})
    df.to_parquet(out / f"eval_s{s}.parquet")
    for metric, kind, label in (("ip", "ip", "IP"), ("ip_star", "ip_star", "IP*")):
        t = reduction_table(df, metric, kind=kind, label=label, avg_row=False).iloc[0]
        rows.append({"variant": variant, "seed": s, "metric": label, "reduction_pct": t["reduction_pct"],
                     "ct_abs": t["ct_mean_abs"], "bl_abs": t["bl_mean_abs"], "significant": bool(t["significant"])})
res = pd.DataFrame(rows)
res.to_csv(out / "reductions.csv", index=False)
print(res.to_string())
print(res.groupby("metric")[["reduction_pct", "ct_abs", "bl_abs"]].mean().to_string())
