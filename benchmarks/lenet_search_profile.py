"""Where LeNet's counterfactual search spends its time per step (issue 21 (a); results in
``results/lenet-search-threads.md``): torch.profiler over one search at the final MNIST settings on the initial
LeNet (seed 0), ``rows`` real MNIST training images, at most ``steps`` steps, one thread; prints the top operators.

    CTBENCH_DATA=../shared/data OMP_NUM_THREADS=1 python benchmarks/lenet_search_profile.py [rows] [steps]
"""

import os
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).parent))
from lenet_search_setup import search_problem  # noqa: E402

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 4
torch.set_num_threads(1)
print(f"load average {os.getloadavg()}, rows {rows}, steps {steps}", flush=True)
p, model, xf, target, conv = search_problem(rows, steps)
with profile(activities=[ProfilerActivity.CPU]) as prof:
    p.generator.search(model, xf, target, p.cons, conv, torch.Generator().manual_seed(1))
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=40))
