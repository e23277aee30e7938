"""Re-run CTG's searches under candidate differences on one small trained population; print success, cost, IV."""
import json
import pickle
import sys
import time

import numpy as np
import torch
from ctg_features import features_arg, pickle_path

from ctbench.experiments.consistency import ARCHITECTURES, _targets
from ctbench.experiments.consistency_search import evaluate
from ctbench.generators import make_method

argv, features = features_arg(sys.argv[1:])
ds, n = argv[0], argv[1]
which = argv[2].split(",")
P = pickle.load(open(pickle_path(ds, n, features), "rb"))
data, cons, base, retr = P["data"], P["cons"], P["base"], P["retr"]
torch.set_num_threads(1)
a = ARCHITECTURES[ds]
x = torch.as_tensor(data.X_test, dtype=torch.float32)
X = data.X_train
target = _targets(base, x, data.n_classes, 0)
V = {
 "pgd_paper": ("min_eps_pgd", dict(max_epsilon=a.pgd_max_eps, seed=0)),
 "pgd_code": ("min_eps_pgd", dict(max_epsilon=a.pgd_max_eps, seed=0, step_rule="code")),
 "l1_100": ("min_l1", dict(learning_rate=a.l1_step, box="art")),
 "l1_40": ("min_l1", dict(learning_rate=a.l1_step, box="art", max_iter=40)),
 "l2_100": ("min_l2", dict(learning_rate=a.l2_step, box="art")),
 "l2_40": ("min_l2", dict(learning_rate=a.l2_step, box="art", max_iter=40)),
 "proto": ("prototype", dict(X_train=X)),
 "proto_k1": ("prototype", dict(X_train=X, k=1)),
}
out = {}
for v in which:
    name, kw = V[v]
    g = make_method(name, **kw)
    t = time.process_time()
    r = g.search(base, x, target, cons, None, torch.Generator().manual_seed(0))
    df = evaluate(base, retr, {name: r}, np.arange(len(x)), lipschitz_radius=0.01, lipschitz_samples=1)
    ok = df[df.valid]
    out[v] = dict(success=round(float(df.valid.mean()), 3), l2=round(float(ok.cost_l2.mean()), 3),
                  l2sd=round(float(ok.cost_l2.std()), 3), l1=round(float(ok.cost_l1.mean()), 3),
                  l1sd=round(float(ok.cost_l1.std()), 3), iv_loo=round(float(ok.iv_loo.mean()), 3),
                  iv_rs=round(float(ok.iv_rs.mean()), 3), cpu=round(time.process_time() - t, 1))
    print(v, json.dumps(out[v]), flush=True)
