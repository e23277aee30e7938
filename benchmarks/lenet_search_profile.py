"""Where LeNet's counterfactual search spends its time per step (issue 21 (a); results in
``results/lenet-search-threads.md``): torch.profiler over one search at the final MNIST settings on the initial
LeNet (seed 0), ``rows`` real MNIST training images, at most ``steps`` steps, one thread; prints the top operators.

    CTBENCH_DATA=../shared/data OMP_NUM_THREADS=1 python benchmarks/lenet_search_profile.py [rows] [steps]
"""

import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from ctbench.generators.base import Convergence
from ctbench.paper_settings import model_config
from ctbench.training.pipeline import prepare_training

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 4
torch.set_num_threads(1)
print(f"load average {os.getloadavg()}, rows {rows}, steps {steps}", flush=True)
p = prepare_training(model_config("mnist", "single", "full", 0, epochs=1, overrides={"model": {"type": "lenet"}}))
X, model = torch.as_tensor(p.data.X_train, dtype=torch.float32), p.model
gen = torch.Generator().manual_seed(0)
xf = X[torch.randperm(X.shape[0], generator=gen)[:rows]]
with torch.no_grad():
    target = (model(xf).argmax(1) + 1 + torch.randint(0, 9, (rows,), generator=gen)) % 10
conv = Convergence(p.conv.kind, p.conv.tau, steps)
with profile(activities=[ProfilerActivity.CPU]) as prof:
    p.generator.search(model, xf, target, p.cons, conv, torch.Generator().manual_seed(1))
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=40))
