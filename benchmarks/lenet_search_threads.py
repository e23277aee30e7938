"""Whether LeNet's counterfactual search (the CT epoch's 94%) gives bitwise the same results at 1, 2, 4 intra-op
threads on the real shapes, and what each costs (issue 21 (b); results in ``results/lenet-search-threads.md``).

The search of ``lenet_train`` at the final MNIST settings (ECCo, τ = 0.5, ``rows`` factuals, at most ``steps``
steps; the paper: 5,000 rows, 30 steps) on the initial LeNet (seed 0: every row runs all its steps) and on real
MNIST training images; each thread count's counterfactuals, nascent examples, steps and probabilities are hashed.
Then one training-loss gradient (batch 1000) at each thread count: the weight update's bits.

    CTBENCH_DATA=../shared/data python benchmarks/lenet_search_threads.py [rows] [steps] [threads...]
"""

import hashlib
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).parent))
from lenet_search_setup import search_problem  # noqa: E402

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 4
counts = [int(a) for a in sys.argv[3:]] or [1, 2, 4]


def digest(*ts):
    h = hashlib.sha256()
    for t in ts:
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


print(f"load average {os.getloadavg()}, rows {rows}, steps {steps}, threads {counts}", flush=True)
p, model, xf, target, conv = search_problem(rows, steps)
X = torch.as_tensor(p.data.X_train, dtype=torch.float32)
print(f"generator {p.generator.params()}, convergence {conv}, dtype {X.dtype}", flush=True)
for n in counts:
    torch.set_num_threads(n)
    t0, c0 = time.perf_counter(), time.process_time()
    r = p.generator.search(model, xf, target, p.cons, conv, torch.Generator().manual_seed(1))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"search threads={n}: sha {digest(r.counterfactual, r.nascent, r.steps, r.prob_target, r.mature)} "
          f"wall {wall:.2f} s cpu {cpu:.2f} s mean steps {r.steps.float().mean():.1f}", flush=True)
xb, yb = X[:1000], torch.as_tensor(p.data.y_train[:1000], dtype=torch.long)
for n in counts:
    torch.set_num_threads(n)
    model.zero_grad()
    F.cross_entropy(model(xb), yb).backward()
    print(f"weight gradient threads={n}: sha {digest(*(q.grad for q in model.parameters()))}", flush=True)
print(f"load average {os.getloadavg()}")
