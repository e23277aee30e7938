"""Re-run the searches under candidate differences on one small trained population; print success, cost, IV.

``--factuals K``: a seeded K of the validation split, drawn as the study draws ``n_factuals`` (seed 0); default all.
``--order file``: the population that train.py trained with ``--order file``.
"""
import json
import pickle
import sys
import time

import torch
from ctg_features import factuals_arg, features_arg, option_arg, pickle_path
from scaling import scaling_arg

from ctbench.constraints import Constraints
from ctbench.experiments.consistency import ARCHITECTURES, _factual_rows, _targets
from ctbench.experiments.consistency_search import evaluate
from ctbench.generators import make_method

argv, features = features_arg(sys.argv[1:])
argv, scaling = scaling_arg(argv)
argv, k = factuals_arg(argv)
argv, order = option_arg(argv, "--order", "reshuffled")
ds, n = argv[0], argv[1]
which = argv[2].split(",")
P = pickle.load(open(pickle_path(ds, n, features, scaling, order), "rb"))
data, cons, base, retr = P["data"], P["cons"], P["base"], P["retr"]
torch.set_num_threads(1)
a = ARCHITECTURES[ds]
rows = _factual_rows(len(data.y_test), k, 0)
x = torch.as_tensor(data.X_test[rows], dtype=torch.float32)
print("scaling", scaling, "order", order, "factuals", len(rows), "of", len(data.y_test), flush=True)
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
 "latent": ("latent_random", dict(radius=a.latent_radius)),
 # the authors' PGD box: foolbox bounds = one scalar range, the training data's overall min and max
 # (attack_utils.get_boundary_points: clamp = [np.min(clamp[0]), np.max(clamp[1])]), not each feature's own
 "pgd_scalar": ("min_eps_pgd", dict(max_epsilon=a.pgd_max_eps, seed=0)),
 # the study's default under the reference fidelity: the authors' step and their box
 "pgd_code_scalar": ("min_eps_pgd", dict(max_epsilon=a.pgd_max_eps, seed=0, step_rule="code")),
}
SCALAR_BOX = {"pgd_scalar", "pgd_code_scalar"}
scalar_cons = Constraints.build(data.n_features, domain=([float(X.min())] * data.n_features,
                                                         [float(X.max())] * data.n_features))
out = {}
for v in which:
    name, kw = V[v]
    if name == "latent_random":  # the study's VAE: fit_cached(X_train, vae_epochs 100, seed 0)
        from ctbench.generators.vae import fit_cached
        kw = dict(kw, vae=fit_cached(X, epochs=100, seed=0))
    g = make_method(name, **kw)
    t = time.process_time()
    r = g.search(base, x, target, scalar_cons if v in SCALAR_BOX else cons, None, torch.Generator().manual_seed(0))
    df = evaluate(base, retr, {name: r}, rows, lipschitz_radius=0.01, lipschitz_samples=1)
    ok = df[df.valid]
    out[v] = dict(success=round(float(df.valid.mean()), 3), l2=round(float(ok.cost_l2.mean()), 3),
                  l2sd=round(float(ok.cost_l2.std()), 3), l1=round(float(ok.cost_l1.mean()), 3),
                  l1sd=round(float(ok.cost_l1.std()), 3), iv_loo=round(float(ok.iv_loo.mean()), 3),
                  iv_rs=round(float(ok.iv_rs.mean()), 3), cpu=round(time.process_time() - t, 1))
    print(v, json.dumps(out[v]), flush=True)
