"""One LeNet CT model at the final MNIST settings trained for ``epochs`` epochs by ``ctbench train`` at one thread,
then with ``--search-threads N`` for each N given: the weights' sha256 (state dict) must be the same, and the
sidecar's per-epoch wall and search seconds say what the threads bought (issue 21 (b); results in
``results/lenet-search-threads.md``). Run with the allocator settings of ``malloc_lenet_epoch.sh``.

    CTBENCH_DATA=../shared/data python benchmarks/lenet_search_threads_epoch.py OUTDIR [epochs] [N...]
"""

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch
from weights_digest import state_dict_sha256

from ctbench.paper_settings import model_config

out = Path(sys.argv[1])
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
counts = [int(a) for a in sys.argv[3:]] or [2]
out.mkdir(parents=True, exist_ok=True)
cfg = json.dumps(model_config("mnist", "single", "full", 0, epochs=epochs, overrides={"model": {"type": "lenet"}}))
print(f"load average {os.getloadavg()}, {epochs} epoch(s), search threads {[None, *counts]}", flush=True)
for n in [None, *counts]:
    path = out / f"lenet_full_st{n or 0}.pt"
    extra = [] if n is None else ["--search-threads", str(n)]
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ctbench", "train", "--config-json", cfg, "--out", str(path), "--quiet",
                    *extra], check=True)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    blob = torch.load(path, weights_only=True)
    log = blob["meta"]["log"]
    print(json.dumps({"search_threads": n, "weights_sha256": state_dict_sha256(blob)[:16],
                      "wall": round(time.perf_counter() - t0, 1),
                      "cpu": round(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime, 1),
                      "epoch_seconds": [round(s, 1) for s in log["seconds"]],
                      "search_seconds": [round(s, 1) for s in log["search_seconds"]],
                      "mean_steps": log["mean_steps"], "meta_search_threads": blob["meta"].get("search_threads")}),
          flush=True)
print(f"load average {os.getloadavg()}")
