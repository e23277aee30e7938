"""LeNet CT's weight update in ``training.grad_chunks`` row chunks (issue 21; results in
``results/lenet-grad-chunks.md``): the paper's final MNIST LeNet CT trained for ``epochs`` epochs by ``ctbench
train`` in this process, once per (K, N) pair given as ``K:N`` (K = grad_chunks, N = --search-threads), with the
trainer's epoch search and its chunked step timed apart. Runs inside the command line, as the workflow does: its
allocator settings (one malloc arena, freed memory kept) change what a big batch costs, and outside them a whole
batch looks ≈ 2× slower than chunks of it (fresh pages faulted in), which the workflow never sees.

    CTBENCH_DATA=../shared/data python benchmarks/lenet_grad_chunks.py OUTDIR [epochs] [K:N ...]
"""

import collections
import json
import os
import sys
import time
from pathlib import Path

import torch
from weights_digest import state_dict_sha256

from ctbench.cli import main  # first: the command line's allocator settings, before numpy starts threads
from ctbench.paper_settings import model_config
from ctbench.training import trainer

out = Path(sys.argv[1])
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
pairs = [tuple(int(v) for v in a.split(":")) for a in sys.argv[3:]] or [(1, 1), (4, 1), (1, 2), (2, 2), (4, 2), (8, 2)]
out.mkdir(parents=True, exist_ok=True)
seconds: collections.Counter = collections.Counter()


def timed(name, fn):
    def run(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            seconds[name] += time.perf_counter() - t0
    return run


trainer.generate_epoch_counterfactuals = timed("search", trainer.generate_epoch_counterfactuals)
trainer.chunked_loss_and_grads = timed("chunked_step", trainer.chunked_loss_and_grads)
print(f"load average {os.getloadavg()}, {epochs} epoch(s), (grad_chunks, search threads) {pairs}", flush=True)
for k, n in pairs:
    seconds.clear()
    cfg = model_config("mnist", "single", "full", 0, epochs=epochs,
                       overrides={"model": {"type": "lenet"}, "training.grad_chunks": k})
    path = out / f"lenet_full_k{k}_n{n}.pt"
    assert main(["train", "--config-json", json.dumps(cfg), "--out", str(path), "--quiet",
                 "--search-threads", str(n)]) == 0
    blob = torch.load(path, weights_only=True)
    log = blob["meta"]["log"]
    total = sum(log["seconds"])
    print(json.dumps({"grad_chunks": k, "search_threads": n, "weights_sha256": state_dict_sha256(blob)[:16],
                      "epochs_s": round(total, 2), "search_s": round(seconds["search"], 2),
                      # K = 1 takes the whole-batch path, not timed apart: the rest of the epoch stands for it
                      "step_s": round(seconds["chunked_step"], 2) if k > 1 else None,
                      "rest_s": round(total - seconds["search"] - seconds["chunked_step"], 2)}), flush=True)
print(f"load average {os.getloadavg()}")
