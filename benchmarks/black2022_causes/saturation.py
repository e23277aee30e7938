"""Is Min-L1/L2's failure on CTG the saturated factuals? Logit margin of the base model per factual vs success."""
import pickle
import sys

import numpy as np
import torch
from ctg_features import features_arg, pickle_path

from ctbench.experiments.consistency import _targets
from ctbench.generators import make_method

P = pickle.load(open(pickle_path("cardiotocography", 20, features_arg(sys.argv[1:])[1]), "rb"))
data, cons, base = P["data"], P["cons"], P["base"]
torch.set_num_threads(1)
x = torch.as_tensor(data.X_test, dtype=torch.float32)
t = _targets(base, x, 2, 0)
with torch.no_grad():
    z = base(x)
    margin = (z.gather(1, (1 - t)[:, None]) - z.gather(1, t[:, None])).squeeze(1).numpy()
for name, kw in (("min_l1", dict(learning_rate=0.05, box="art")), ("min_l2", dict(learning_rate=0.01, box="art"))):
    r = make_method(name, **kw).search(base, x, t, cons, None, torch.Generator().manual_seed(0))
    with torch.no_grad():
        ok = (base(r.counterfactual).argmax(1) == t).numpy()
    for lo, hi in ((0, 5), (5, 10), (10, 15), (15, 1e9)):
        m = (margin >= lo) & (margin < hi)
        print(name, f"logit margin [{lo},{hi}) n={m.sum()} success={ok[m].mean() if m.any() else float('nan'):.2f}")
print("median margin", np.median(margin), "target=1 share", t.float().mean().item())
