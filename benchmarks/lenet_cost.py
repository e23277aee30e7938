"""What one LeNet-5 CT and BL model on MNIST costs at the final MNIST settings (batch 1000, nce 5000, 30 search steps,
one thread): train each alone for a few epochs and print wall and CPU seconds, per-epoch wall and search seconds and
the mean search steps (the ``lenet`` stage's cost, issue 24 item 1; results in ``results/lenet-cost-cpu1.md``).

    CTBENCH_DATA=../shared/data OMP_NUM_THREADS=1 python benchmarks/lenet_cost.py 2
    python benchmarks/lenet_cost.py EPOCHS [DEVICE [THREADS]]   # e.g. 1 cuda, or 1 cpu 16 (benchmarks/device_run.sh)
"""

import json
import os
import sys
import time

import torch

from ctbench.paper_settings import model_config
from ctbench.training.pipeline import train_from_config

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
device = sys.argv[2] if len(sys.argv) > 2 else "cpu"
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 1
print(f"load average {os.getloadavg()}, {epochs} epochs, {device}, {threads} threads", flush=True)
for obj in ("vanilla", "full"):
    cfg = model_config("mnist", "single", obj, 0, epochs=epochs, threads=threads, device=device,
                       overrides={"model": {"type": "lenet"}})
    t0, c0 = time.perf_counter(), time.process_time()
    r = train_from_config(cfg)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    print(obj, json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                           "train_seconds": r.meta["train_seconds"], "epoch_seconds": r.log["seconds"].tolist(),
                           "search_seconds": r.log["search_seconds"].tolist() if "search_seconds" in r.log else None,
                           "mean_steps": r.log["mean_steps"].tolist(), "acc_test": r.meta["acc_test"],
                           "threads": torch.get_num_threads(), "device": device}), flush=True)
print(f"load average {os.getloadavg()}")
