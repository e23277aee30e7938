"""SNS's ball: App. B.3's "0.8 multiplied by the largest size of the ball used for the baseline Min-ε PGD" read as
Table 2's largest bound (the study) or as the largest of PGD's ten bounds that some factual needed; on a population
pickled by train.py (datasets' study scalings), with the study's search settings (authors' PGD step and box):

    python benchmarks/black2022_causes/sns_radius.py credit_default_b22 20 zscore_all 1000
    python benchmarks/black2022_causes/sns_radius.py german_credit 20 zscore_all
    python benchmarks/black2022_causes/sns_radius.py heloc_b22 20 loader 1000
"""
import json
import sys
from dataclasses import replace

import torch
from ctg_features import load_population

from ctbench.experiments.consistency_search import SearchContext, evaluate, search_methods

ds, n, scaling = sys.argv[1], sys.argv[2], sys.argv[3]
k = int(sys.argv[4]) if len(sys.argv) > 4 else None
data, cons, base, retr, a, rows, x, target = load_population(ds, n, "per_second", scaling, k)
ctx = SearchContext(a.pgd_max_eps, 0.8 * a.pgd_max_eps, "paper", a.l1_step, a.l2_step, a.latent_radius,
                    data.X_train, None, None, 0, elastic_net_box="art", pgd_step_rule="code", search_box="scalar")
found, _ = search_methods(base, x, target, cons, ["min_eps_pgd"], ctx)
cf = found["min_eps_pgd"].counterfactual
with torch.no_grad():
    ok = base(cf).argmax(1) == target
d = (cf - x).norm(dim=1)[ok]
level = a.pgd_max_eps / 10
used = float(torch.ceil(d.max() / level - 1e-6) * level)
print(ds, "PGD cost max", round(float(d.max()), 3), "median", round(float(d.median()), 3), "largest level used", used,
      flush=True)



def summ(df):
    ok = df[df.valid]
    return dict(success=round(float(df.valid.mean()), 3), l2=round(float(ok.cost_l2.mean()), 3),
                iv_loo=round(float(ok.iv_loo.mean()), 3), iv_rs=round(float(ok.iv_rs.mean()), 3))
for radius in (0.8 * a.pgd_max_eps, 0.8 * used):
    c = replace(ctx, sns_radius=radius)
    for m in ("min_l1", "min_l2", "min_eps_pgd"):
        f, _ = search_methods(base, x, target, cons, [m, m + "+sns"], c)
        ev = {k: summ(evaluate(base, retr, {name: f[name]}, rows, lipschitz_radius=0.01, lipschitz_samples=1))
              for k, name in (("base", m), ("sns", m + "+sns"))}
        print("radius", round(radius, 3), m, json.dumps(ev), flush=True)
