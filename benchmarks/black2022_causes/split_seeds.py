"""Is CTG's Min-ℓ1 failure a property of one split? Base models on other data seeds (the row order and so the
train/validation split; the paper's is unknown), per-second rates and counts: test accuracy, median logit margin,
Min-ℓ1 / Min-ℓ2 success and Min-ε PGD success at ε ≤ 0.2 on the whole validation split."""
import sys

import numpy as np
import torch
from ctg_features import use

from ctbench.experiments import consistency as C
from ctbench.experiments.consistency import ARCHITECTURES, _targets
from ctbench.experiments.invalidation import retraining_plan
from ctbench.generators import make_method
from ctbench.training.population import train_population

torch.set_num_threads(1)
a = ARCHITECTURES["cardiotocography"]
for features in sys.argv[2].split(","):
    use(features)
    for seed in (int(v) for v in sys.argv[1].split(",")):
        s = C.resolve_settings({"n_models": 1}, "black2022")
        s["data_params"] = {"seed": seed}
        data, cons, fid, members, *_ = C._members(
            "black2022", "cardiotocography", 0, s, lambda nt: retraining_plan(0, 1, nt, ["rs"]))
        res = train_population(members["base"][:1], data.X_train, data.y_train, constraints=cons, fidelity=fid,
                               n_classes=2, log_accuracy=False)
        base = C._split(res, members["base"][:1])[0]
        x = torch.as_tensor(data.X_test)
        t = _targets(base, x, 2, 0)
        with torch.no_grad():
            z = base(x)
        acc = float((z.argmax(1).numpy() == data.y_test).mean())
        margin = float(np.median((z.gather(1, (1 - t)[:, None]) - z.gather(1, t[:, None])).numpy()))
        out = {}
        for name, kw in (("min_l1", dict(learning_rate=a.l1_step, box="art")),
                         ("min_l2", dict(learning_rate=a.l2_step, box="art")),
                         ("min_eps_pgd", dict(max_epsilon=a.pgd_max_eps, seed=0))):
            r = make_method(name, **kw).search(base, x, t, cons, None, torch.Generator().manual_seed(0))
            with torch.no_grad():
                out[name] = round(float((base(r.counterfactual).argmax(1) == t).float().mean()), 3)
        print(features, "data seed", seed, "test accuracy", round(acc, 3), "median margin", round(margin, 1),
              "success", out, flush=True)
