"""Is a LeNet search step row-independent, bit for bit? (issue 21, stretch: could the CT epoch's search of 5,000
factuals run in row chunks to lower LeNet training's 2.9 GB peak without changing a bit?)

The committed LeNet CT model, one thread, 5,000 rows of MNIST shape: the logits and the input gradient of a
per-row loss (what a search step computes) for the whole batch, then for the same rows in chunks of each size; each
chunking is compared bitwise with the whole batch. ``random`` inputs (uniform in [0, 1]) or the first rows of the
MNIST training split (``--data``).

    python benchmarks/lenet_rows_bitwise.py results/paper/lenet/mnist/full_s0.pt
"""

from __future__ import annotations

import argparse
import sys

import torch


def step(model, x, y):
    x = x.clone().requires_grad_(True)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y, reduction="sum")
    (grad,) = torch.autograd.grad(loss, x)
    return logits.detach(), grad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--chunks", type=int, nargs="+", default=[1, 2, 3, 4, 5, 7, 8, 16, 33, 64, 500, 1000, 2500])
    a = ap.parse_args()
    torch.set_num_threads(1)
    from ctbench.training.pipeline import load_model

    model = load_model(a.model).model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(a.rows, 784, generator=g)
    y = torch.randint(0, 10, (a.rows,), generator=g)
    full_logits, full_grad = step(model, x, y)
    print(f"torch {torch.__version__}, mkldnn {torch.backends.mkldnn.enabled}, rows {a.rows}")
    print("| chunk rows | rows compared | logits | input gradient |\n|---|---|---|---|")
    for c in a.chunks:
        n = min(a.rows, max(c * 64, (a.rows // c) * c))  # at least 64 chunks of the small sizes, whole chunks only
        parts = [step(model, x[i:i + c], y[i:i + c]) for i in range(0, n, c)]
        lg, gr = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])

        def verdict(u, v):
            return "bitwise" if torch.equal(u, v) else f"differ (max abs {float((u - v).abs().max()):.2g})"

        print(f"| {c} | {n} | {verdict(lg, full_logits[:n])} | {verdict(gr, full_grad[:n])} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
