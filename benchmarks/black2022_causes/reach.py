"""How far the base model's other class lies from the factuals, per scaling: a bound on what costs a scaling allows.

For each factual (the study's rows: all of German Credit's 200, a seeded 1,000 of Taiwanese Credit's validation
split), the L2 distance to the nearest and to the 20th nearest training row that the base model labels as the
factual's target class (Looveren et al.'s prototype is the 20th, App. B.3), and the median L2 norm of the training
rows (App. B.3's rule for the largest Min-ε PGD bound). A minimum-cost search rarely ends much farther away than the
nearest target-class training row, so a published mean cost well above these distances cannot come from data
scaled this way. Reads the pickles of train.py.

    python reach.py german_credit 20 loader,zscore_all
    python reach.py credit_default_b22 20 loader,zscore,zscore_all
"""
import pickle
import sys

import numpy as np
import torch
from ctg_features import pickle_path

from ctbench.experiments.consistency import _factual_rows, _targets

ds, n, scalings = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
k_factuals = 1000 if ds == "credit_default_b22" else None
for scaling in scalings:
    P = pickle.load(open(pickle_path(ds, n, "per_second", scaling), "rb"))
    data, base = P["data"], P["base"]
    rows = _factual_rows(len(data.y_test), k_factuals, 0)
    x = torch.as_tensor(data.X_test[rows], dtype=torch.float32)
    X = torch.as_tensor(data.X_train, dtype=torch.float32)
    target = _targets(base, x, data.n_classes, 0)
    with torch.no_grad():
        label = base(X).argmax(1)
    near, k20 = [], []
    for c in target.unique():
        q, pool = x[target == c], X[label == c]
        d = torch.cdist(q.double(), pool.double()).sort(1).values
        near.append(d[:, 0])
        k20.append(d[:, min(19, d.shape[1] - 1)])
    near, k20 = torch.cat(near).numpy(), torch.cat(k20).numpy()
    med = float(np.median(np.linalg.norm(data.X_train, axis=1)))
    print(f"{ds} scaling {scaling}: factuals {len(rows)}, nearest target-class training row L2 mean "
          f"{near.mean():.3f} median {np.median(near):.3f}; 20th nearest mean {k20.mean():.3f} median "
          f"{np.median(k20):.3f}; median training-row L2 norm {med:.3f}", flush=True)
