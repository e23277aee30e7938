"""CTG population trained by a plain loop (Adam 1e-3, batch 16, 100 epochs, reshuffled each epoch, App. B.2) under
two losses: torch's CE on logits (ours) and Keras' CE on softmax probabilities clipped to [1e-7, 1 - 1e-7]
(categorical_crossentropy, from_logits=False). Then base-model logit margins, Min-L1/L2/PGD success, cost, IV."""
import pickle
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from ctbench.experiments.consistency import _targets
from ctbench.experiments.consistency_search import evaluate
from ctbench.generators import make_method
from ctbench.models import build_model

P = pickle.load(open("/tmp/bg/cardiotocography_20.pkl", "rb"))
data, cons = P["data"], P["cons"]
torch.set_num_threads(1)
Xtr = torch.as_tensor(data.X_train, dtype=torch.float32)
ytr = torch.as_tensor(data.y_train).long()
loss_kind, n = sys.argv[1], int(sys.argv[2])
def loss_fn(z, y):
    if loss_kind == "torch":
        return F.cross_entropy(z, y)
    p = torch.softmax(z, 1).clamp(1e-7, 1 - 1e-7)
    return -torch.log(p.gather(1, y[:, None])).mean()
def train(seed, rows):
    m = build_model({"type": "mlp", "hidden": [100, 32, 16]}, data.n_features, 2, seed=seed)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3, eps=1e-7)
    g = torch.Generator().manual_seed(seed)
    X, y = Xtr[rows], ytr[rows]
    for _ in range(100):
        perm = torch.randperm(len(rows), generator=g)
        for a in range(0, len(rows), 16):
            b = perm[a:a + 16]
            opt.zero_grad()
            loss_fn(m(X[b]), y[b]).backward()
            opt.step()
    return m.eval()
t0 = time.process_time()
allr = np.arange(len(ytr))
base = train(0, allr)
rs = [train(1000 + i, allr) for i in range(1, n + 1)]
loo_rows = np.random.default_rng([0, 11]).choice(len(ytr), n, replace=False)
loo = [train(0, np.delete(allr, r)) for r in loo_rows]
print(loss_kind, "train cpu", round(time.process_time() - t0, 1))
x = torch.as_tensor(data.X_test, dtype=torch.float32)
t = _targets(base, x, 2, 0)
with torch.no_grad():
    z = base(x)
    margin = (z.gather(1, (1 - t)[:, None]) - z.gather(1, t[:, None])).squeeze(1).numpy()
    acc = (base(x).argmax(1).numpy() == data.y_test).mean()
print(loss_kind, f"acc {acc:.3f} margin median {np.median(margin):.1f} share>=15 {(margin >= 15).mean():.2f}")
for name, kw in (("min_l1", dict(learning_rate=0.05, box="art")), ("min_l2", dict(learning_rate=0.01, box="art")),
                 ("min_eps_pgd", dict(max_epsilon=0.2, seed=0)), ("prototype", dict(X_train=data.X_train))):
    r = make_method(name, **kw).search(base, x, t, cons, None, torch.Generator().manual_seed(0))
    df = evaluate(base, {"rs": rs, "loo": loo}, {name: r}, np.arange(len(x)), lipschitz_radius=0.01,
                  lipschitz_samples=1)
    ok = df[df.valid]
    print(loss_kind, name, f"success {df.valid.mean():.3f} l2 {ok.cost_l2.mean():.3f} l1 {ok.cost_l1.mean():.3f} "
          f"iv_loo {ok.iv_loo.mean():.3f} iv_rs {ok.iv_rs.mean():.3f}", flush=True)
