"""Train a small CTG population (base + n RS + n LOO) once, as the consistency study does; pickle it."""
import pickle
import sys
import time

import torch

from ctbench.experiments import consistency as C
from ctbench.experiments.invalidation import retraining_plan
from ctbench.training.population import train_population

ds, n = sys.argv[1], int(sys.argv[2])
s = C.resolve_settings({"n_models": n}, "black2022")
data, cons, fid, members, ecco, plan, info = C._members(
    "black2022", ds, 0, s, lambda nt: retraining_plan(0, n, nt, ["rs", "loo"]))
torch.set_num_threads(1)
t = time.process_time()
ms = members["base"]
res = train_population(ms, data.X_train, data.y_train, constraints=cons, fidelity=fid, n_classes=data.n_classes,
                       log_accuracy=False)
base, retr, failed = C._split(res, ms)
print("train cpu", time.process_time() - t, "failed", failed)
pickle.dump({"data": data, "cons": cons, "base": base, "retr": retr}, open(f"/tmp/bg/{ds}_{n}.pkl", "wb"))
