"""Train a small CTG population (base + n RS + n LOO) once, as the consistency study does; pickle it.

``--features counts`` builds CTG from the count columns (ctg_features.py); default: the loader's per-second rates."""
import pickle
import sys
import time

import torch
from ctg_features import features_arg, pickle_path, use

from ctbench.experiments import consistency as C
from ctbench.experiments.invalidation import retraining_plan
from ctbench.training.population import train_population

argv, features = features_arg(sys.argv[1:])
use(features)
ds, n = argv[0], int(argv[1])
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
with torch.no_grad():
    acc = (base(torch.as_tensor(data.X_test)).argmax(1).numpy() == data.y_test).mean()
print("features", features, "base test accuracy", round(float(acc), 4), "n_test", len(data.y_test))
pickle.dump({"data": data, "cons": cons, "base": base, "retr": retr}, open(pickle_path(ds, n, features), "wb"))
