"""Speed and sanity of the consistency study's methods on one real-size batch (one run, no repetitions).

A base MLP in the paper's HELOC architecture (100-32, App. B.2) is trained briefly on ``heloc_b22`` (random data of
the same shape when the raw file is absent); then every method of :data:`ctbench.generators.CONSISTENCY_METHODS`
searches counterfactuals for the whole test split (2,615 rows, the paper's validation split) with target = the other
class. Reported per method: wall seconds, counterfactuals per second, validity, mean L2 cost, and the mean
integrated score ∫σ_t(t·x')dt (20-point grid) that SNS ascends.

    python benchmarks/consistency_speed.py [--threads 1] [--out benchmarks/results/consistency-speed-cpu1.md]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import torch

from ctbench.constraints import Constraints
from ctbench.data import load_dataset
from ctbench.generators import CONSISTENCY_METHODS, VAE, make_method
from ctbench.generators.pgd import median_norm
from ctbench.generators.sns import integrated_score
from ctbench.models import build_model


def _data():
    try:
        ds = load_dataset("heloc_b22", cache_dir=False)
        return ds.X_train, ds.y_train, ds.X_test, ds.y_test, ds.domain, "heloc_b22"
    except (FileNotFoundError, ValueError):
        rng = np.random.default_rng(0)
        X = rng.random((10459, 39)).astype(np.float32)
        y = (X[:, :5].sum(1) > 2.5).astype(np.int64)
        return X[:7844], y[:7844], X[7844:], y[7844:], ([0.0] * 39, [1.0] * 39), "random 10,459 × 39"


def _train(X, y, seed=0, epochs=20):
    torch.manual_seed(seed)
    model = build_model({"type": "mlp", "hidden": 100, "layers": 1}, X.shape[1], 2, seed=seed)
    model = torch.nn.Sequential(model[0], model[1], torch.nn.Linear(100, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for idx in torch.randperm(len(yt), generator=g).split(128):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(Xt[idx]), yt[idx]).backward()
            opt.step()
    return model.eval()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="benchmarks/results/consistency-speed-cpu1.md")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    X_train, y_train, X_test, y_test, domain, source = _data()
    t0 = time.perf_counter()
    model = _train(X_train, y_train)
    t_train = time.perf_counter() - t0
    x = torch.as_tensor(X_test)
    acc = (model(x).argmax(1).numpy() == y_test).mean() if y_test is not None else float("nan")
    target = 1 - model(x).argmax(1)
    cons = Constraints.build(x.shape[1], domain=domain)
    eps_max = median_norm(X_train)
    vae = VAE(x.shape[1], seed=0)
    vae.fit(X_train, epochs=5, seed=0)
    sns = {"radius": 0.8 * eps_max, "fidelity": "paper"}
    extra = {"min_eps_pgd": {"max_epsilon": eps_max}, "latent_random": {"vae": vae}, "prototype": {"X_train": X_train}}
    rows = []
    for name in CONSISTENCY_METHODS:
        kw = dict(extra.get(name.removesuffix("+sns"), {}))
        gen = make_method(name, sns=sns, **kw) if name.endswith("+sns") else make_method(name, **kw)
        t = time.perf_counter()
        res = gen.search(model, x, target, cons)
        wall = time.perf_counter() - t
        ok = res.mature
        cost = (res.counterfactual - x).norm(dim=1)[ok].mean().item() if ok.any() else float("nan")
        score = integrated_score(model, res.counterfactual[ok], target[ok], 20).mean().item() if ok.any() else 0
        rows.append((name, wall, len(x) / wall, ok.float().mean().item(), cost, score))
        print(f"{name:22s} {wall:7.2f} s  valid {rows[-1][3]:.3f}  L2 {cost:.3f}  IG {score:.3f}", flush=True)
    # SNS alone, reference settings (authors' code: 100 steps × 20 grid points) vs paper (200 × 10), same starts
    base = make_method("min_l2").search(model, x, target, cons)
    for mode in ("reference", "paper"):
        gen = make_method("min_l2+sns", sns={"radius": 0.8 * eps_max, "fidelity": mode}).sns
        t = time.perf_counter()
        gen.refine(model, base, cons)
        wall = time.perf_counter() - t
        rows.append((f"SNS only ({mode}: {gen.max_steps} steps × {gen.grid_points} points)", wall, len(x) / wall,
                     float("nan"), float("nan"), float("nan")))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"# Consistency methods: one batch of {len(x)} rows ({source}), {args.threads} thread(s)", "",
        f"code {commit}, torch {torch.__version__}, load average {os.getloadavg()[0]:.1f} at the start of the write, "
        f"base MLP 100-32 trained in {t_train:.1f} s (20 epochs, test accuracy {acc:.3f}); "
        f"Min-ε PGD largest bound = median training norm = {eps_max:.3f}; SNS radius 0.8 × that, paper settings "
        "in the method rows.", "",
        "| method | wall s | CF/s | valid | mean L2 cost (valid) | mean integrated score (valid) |",
        "|---|---|---|---|---|---|",
    ]
    for name, wall, rate, valid, cost, score in rows:
        lines.append(f"| {name} | {wall:.2f} | {rate:,.0f} | {valid:.3f} | {cost:.3f} | {score:.3f} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines).replace("| nan ", "| – ") + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
