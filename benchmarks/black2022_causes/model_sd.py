"""Table 3's SD is a spread over the retrained models: each model's invalidation rate over the valid counterfactuals,
then mean ± SD over the models (the study's files keep only each counterfactual's rate over the models)."""
import pickle
import sys

import torch

from ctbench.experiments.consistency import ARCHITECTURES, _targets
from ctbench.experiments.invalidation import stacked_labels
from ctbench.generators import make_method

ds, n = sys.argv[1], sys.argv[2]
P = pickle.load(open(f"/tmp/bg/{ds}_{n}.pkl", "rb"))
data, cons, base, retr = P["data"], P["cons"], P["base"], P["retr"]
torch.set_num_threads(1)
a = ARCHITECTURES[ds]
x = torch.as_tensor(data.X_test, dtype=torch.float32)
t = _targets(base, x, data.n_classes, 0)
for name, kw in (("min_eps_pgd", dict(max_epsilon=a.pgd_max_eps, seed=0)),
                 ("min_l1", dict(learning_rate=a.l1_step, box="art"))):
    cf = make_method(name, **kw).search(base, x, t, cons, None, torch.Generator().manual_seed(0)).counterfactual
    with torch.no_grad():
        lab = base(cf).argmax(1)
    ok = lab == t
    for s in ("loo", "rs"):
        per_model = (stacked_labels(retr[s], cf[ok]) != lab[ok][None, :]).double().mean(1)
        print(ds, name, s, f"per-model IV mean {per_model.mean():.3f} SD {per_model.std():.3f} over {len(retr[s])}")
