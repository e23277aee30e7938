"""LeNet's search with its input gradient by hand (``ctbench.generators.lenet_grad``) against autograd's, on the
same rows in one process (issue 21, branch ``lenet-cpu``; results in ``results/lenet-cpu.md``).

The committed LeNet CT job's generator, convergence and constraints (its sidecar's config), a model's weights
(``--model``: the committed 100-epoch CT model, whose searches retire rows after ≈ 13 steps; or ``init``: the
untrained LeNet of seed 0, whose searches run all 30 steps), ``--rows`` real MNIST training images and targets ≠ the
prediction drawn with seed 0; each path searched ``--repeats`` times, alternating, one thread; CPU seconds by
``time.process_time``. Every field of the two results (counterfactual, nascent point, steps, probability, maturity,
initial validity) is compared bit for bit.

    CTBENCH_DATA=/work/shared/data OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/lenet_grad_pair.py \\
        --sidecar /work/regen2/results/paper/lenet/mnist/full_s0.pt.json --model MODEL.pt|init --rows 5000
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from ctbench.generators import base
from ctbench.runtime import keep_freed_memory
from ctbench.shape_caches import no_shape_caches
from ctbench.training.pipeline import prepare_training

FIELDS = ("counterfactual", "nascent", "steps", "prob_target", "mature", "initially_valid")


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32) if t.dtype == torch.float32 else t


def search(p, model, xf, target, hand: bool):
    real = base.lenet_layers
    if not hand:
        base.lenet_layers = lambda model: None
    try:
        t0 = time.process_time()
        res = p.generator.search(model, xf, target, p.cons, p.conv, torch.Generator().manual_seed(1))
        return res, time.process_time() - t0
    finally:
        base.lenet_layers = real


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sidecar", type=Path, required=True)
    ap.add_argument("--model", required=True, help="a model file, or 'init' (the untrained LeNet of the config)")
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, help="append one JSON line of the results")
    a = ap.parse_args()
    keep_freed_memory()
    no_shape_caches()
    torch.set_num_threads(1)
    cfg = json.loads(a.sidecar.read_text())["config"]
    p = prepare_training({**cfg, "threads": 1})
    model = p.model
    if a.model != "init":
        model.load_state_dict(torch.load(a.model, map_location="cpu", weights_only=False)["state_dict"])
    model.eval()
    X = torch.as_tensor(p.data.X_train, dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    xf = X[torch.randperm(X.shape[0], generator=gen)[:a.rows]]
    with torch.no_grad():
        target = (model(xf).argmax(1) + 1 + torch.randint(0, 9, (a.rows,), generator=gen)) % 10
    load = os.getloadavg()[0]
    cpu = {"autograd": [], "by_hand": []}
    results = {}
    for _ in range(a.repeats):
        for name, hand in (("autograd", False), ("by_hand", True)):
            res, s = search(p, model, xf, target, hand)
            cpu[name].append(round(s, 2))
            results[name] = res
    same = {f: torch.equal(bits(getattr(results["autograd"], f)), bits(getattr(results["by_hand"], f)))
            for f in FIELDS}
    row = {"model": a.model, "rows": a.rows, "mean_steps": float(results["autograd"].steps.float().mean()),
           "share_mature": float(results["autograd"].mature.float().mean()), "cpu_s": cpu,
           "ratio": round(min(cpu["by_hand"]) / min(cpu["autograd"]), 3), "bitwise": same,
           "load_1min": [load, os.getloadavg()[0]], "at": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
    print(json.dumps(row))
    if a.out:
        with a.out.open("a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
