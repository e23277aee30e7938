"""Paired timing of the evaluation kernels of issue 21 against the kernels they replaced (kept as references in
``tests/test_eval_speed_equivalence.py``): IP, IP* and integrated gradients, old and new alternately in one process,
one torch thread, CPU seconds (``time.process_time``; the machine is shared, so the load is printed with each line).

    python benchmarks/eval_kernels.py [--reps 3] [--out benchmarks/results/eval-kernels-cpu1.md]

Sizes are those of one paper evaluation job's model and λ (§7.1: 100 runs × n_individuals per family; the IP
reference set is the test split) and of one attribution round on MNIST (2,500 samples, 50 steps).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from functools import partial
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]


def _reference():
    spec = importlib.util.spec_from_file_location("ref", ROOT / "tests" / "test_eval_speed_equivalence.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cpu(fn):
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def _load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def cases():
    from ctbench.evaluation.metrics import _group_ids, implausibility, ip_star

    ref = _reference()
    rng = np.random.default_rng(0)
    # (name, n counterfactuals, D, reference rows, classes)
    for name, n, d, n_ref, n_cls in (("tabular D=108 (Adult-size test split)", 10_000, 108, 9_824, 2),
                                     ("MNIST D=784", 2_500, 784, 10_000, 10),
                                     ("synthetic D=2", 25_000, 2, 900, 2)):
        X = rng.random((n_ref, d), dtype=np.float32)
        y = rng.integers(0, n_cls, n_ref)
        xcf = torch.as_tensor(rng.random((n, d), dtype=np.float32))
        t = torch.as_tensor(rng.integers(0, n_cls, n))
        yield (f"IP, {name}, {n} CF", partial(ref._implausibility_pool_cdist, xcf, t, X, y, k=1000, generator=1),
               partial(implausibility, xcf, t, X, y, k=1000, generator=1))
        keys = np.repeat(np.arange(100), n // 100)[:n]  # 100 runs: groups per (run, factual, target)
        gid = _group_ids(keys, t.numpy())
        yield (f"IP*, {name}, {n} CF, per-run groups",
               partial(ref._ip_star_per_group_copy, xcf, gid, t, X, y, 5.0, seed=2),
               partial(ip_star, xcf, keys, t, X, y, 5.0, seed=2))
    try:
        from ctbench.evaluation.integrated_gradients import integrated_gradients
        from ctbench.models import MLP

        model = MLP(784, 10, 32, generator=torch.Generator().manual_seed(0))
        Xm = torch.rand(2_500, 784)
        ym = torch.randint(0, 10, (2_500,))
        base = torch.rand(2_500, 784) * 2 - 1
        if hasattr(ref, "_ig_autograd"):
            yield ("IG, MNIST MLP, one round (2,500 × 51 points)",
                   lambda: ref._ig_autograd(model, Xm, ym, base, steps=50),
                   lambda: integrated_gradients(model, Xm, ym, base, steps=50))
    except ImportError:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    lines = ["| kernel | old CPU s | new CPU s | old/new | max abs diff | load (1 min) |", "|---|---|---|---|---|---|"]
    for name, old, new in cases():
        to, tn = [], []
        for _ in range(args.reps):
            a, ro = _cpu(old)
            b, rn = _cpu(new)
            to.append(a)
            tn.append(b)
        ro, rn = (r[1] if isinstance(r, tuple) else r for r in (ro, rn))
        diff = float((ro.double() - rn.double()).nan_to_num().abs().max())
        row = (f"| {name} | {np.median(to):.3f} | {np.median(tn):.3f} | {np.median(to) / np.median(tn):.1f}× | "
               f"{diff:.2g} | {_load()} |")
        print(row, flush=True)
        lines.append(row)
    text = (f"torch {torch.__version__}, 1 thread, medians of {args.reps} paired repetitions "
            f"(`python benchmarks/eval_kernels.py --reps {args.reps}`)\n\n" + "\n".join(lines) + "\n")
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
