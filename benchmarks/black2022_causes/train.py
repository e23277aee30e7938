"""Train a small population (base + n RS + n LOO) once, as the consistency study does; pickle it.

``--features counts`` builds CTG from the count columns (ctg_features.py); default: the loader's per-second rates.
``--scaling zscore_all|zscore`` rescales German/Taiwanese Credit (scaling.py); default: the loader's scaling.
``--order file`` trains every member on the rows in file order each epoch (``fidelity.shuffle_batches`` off), so a LOO
member's batches are the base's with one row left out; default ``reshuffled`` (the study's: Keras'
``shuffle=True``, a fresh permutation per epoch from the member's seed; for a LOO member a different permutation of
n - 1 rows)."""
import pickle
import sys
import time
from dataclasses import replace

import numpy as np
import torch
from ctg_features import features_arg, option_arg, pickle_path, use
from scaling import scaling_arg
from scaling import use as use_scaling

from ctbench.experiments import consistency as C
from ctbench.experiments.invalidation import retraining_plan
from ctbench.training.population import train_population

argv, features = features_arg(sys.argv[1:])
argv, scaling = scaling_arg(argv)
argv, order = option_arg(argv, "--order", "reshuffled")
if order not in ("reshuffled", "file"):
    raise SystemExit(f"--order must be reshuffled or file, got {order!r}")
use(features)
use_scaling(scaling)
ds, n = argv[0], int(argv[1])
s = C.resolve_settings({"n_models": n}, "black2022")
data, cons, fid, members, ecco, plan, info = C._members(
    "black2022", ds, 0, s, lambda nt: retraining_plan(0, n, nt, ["rs", "loo"]))
fid = replace(fid, shuffle_batches=order == "reshuffled")
torch.set_num_threads(1)
t = time.process_time()
ms = members["base"]
res = train_population(ms, data.X_train, data.y_train, constraints=cons, fidelity=fid, n_classes=data.n_classes,
                       log_accuracy=False)
base, retr, failed = C._split(res, ms)
print("train cpu", time.process_time() - t, "failed", failed)
with torch.no_grad():
    acc = (base(torch.as_tensor(data.X_test)).argmax(1).numpy() == data.y_test).mean()
norms = np.linalg.norm(data.X_train, axis=1)
print("features", features, "scaling", scaling, "order", order, "n_features", data.n_features, "base test accuracy",
      round(float(acc), 4), "n_test", len(data.y_test), "median training L2 norm", round(float(np.median(norms)), 3))
pickle.dump({"data": data, "cons": cons, "base": base, "retr": retr},
            open(pickle_path(ds, n, features, scaling, order), "wb"))
