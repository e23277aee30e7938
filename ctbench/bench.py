"""Benchmarks of the core (``ctbench bench``): search throughput and CT training wall time.

Results are written as JSON and Markdown to ``benchmarks/results/`` with the machine and versions, so the numbers
quoted in the README can be traced to a run. Targets (DESIGN §7): ≥ 100k counterfactuals/s for a tabular MLP on 2
CPU threads (≥ 1M/s on an H100); one synthetic CT run with the paper's final settings ≤ 10 s.
"""

from __future__ import annotations

import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .generators import Convergence, make_generator
from .io import atomic_write_json, atomic_write_text, provenance
from .models import build_model


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def search_throughput(n_features: int, n_classes: int, batch: int, T: int = 30, kind: str = "max_iter",
                      device: str = "cpu", repeats: int = 3) -> dict[str, Any]:
    """Counterfactuals per second of a batched ECCo search (training settings) on an MLP 32."""
    dev = torch.device(device)
    g = torch.Generator().manual_seed(0)
    model = build_model({"type": "mlp"}, n_features, n_classes, seed=0).to(dev)
    x = torch.randn(batch, n_features, generator=g).to(dev)
    with torch.no_grad():
        target = ((model(x).argmax(1) + 1) % n_classes)
    gen = make_generator({"type": "ecco", "lambda_cost": 0.001, "lambda_energy": 5.0})
    conv = Convergence(kind, 0.75, T)
    gen.search(model, x[: min(batch, 256)], target[: min(batch, 256)], convergence=conv)  # warm-up
    times, steps = [], 0.0
    for _ in range(repeats):
        _sync(dev)
        t0 = time.perf_counter()
        res = gen.search(model, x, target, convergence=conv)
        _sync(dev)
        times.append(time.perf_counter() - t0)
        steps = float(res.steps.float().mean())
    best = min(times)
    return {"bench": "search", "n_features": n_features, "n_classes": n_classes, "batch": batch, "T": T,
            "convergence": kind, "mean_steps": steps, "seconds": best, "cf_per_s": batch / best,
            "device": device}


def training_time(which: str, device: str = "cpu", epochs: int = 100) -> dict[str, Any]:
    """Wall time of one CT training run with the paper's final settings (LS) or at Adult size (random data)."""
    from .api import train_from_config
    from .constraints import infer_domain
    from .data import Dataset, load_dataset

    if which == "lin_sep":
        cfg = {"data": {"name": "lin_sep"}, "device": device, "training": {"epochs": epochs}}
        data = load_dataset("lin_sep")
    else:  # Adult size: 26,049 rows × 108 features, batch 1000, nce 5000, τ 0.75, λ_reg 0.25
        rng = np.random.default_rng(0)
        n, D = 26_049, 108
        w = rng.normal(size=D)
        X = rng.normal(size=(n + 6_512, D)).astype(np.float32)
        y = (X @ w + rng.normal(size=len(X)) > 0).astype(np.int64)
        data = Dataset("adult_size_random", X[:25_049], y[:25_049], X[25_049:n], y[25_049:n], X[n:], y[n:],
                       [f"x{i}" for i in range(D)], 2, infer_domain(X[:n]))
        cfg = {"device": device, "training": {"epochs": epochs, "batch_size": 1000, "nce": 5000},
               "objective": {"lambda_reg": 0.25}, "convergence": {"tau": 0.75}}
    cfg["threads"] = torch.get_num_threads()
    t0 = time.perf_counter()
    trained = train_from_config(cfg, data=data)
    wall = time.perf_counter() - t0
    log = trained.log
    return {"bench": "train", "dataset": which, "epochs": epochs, "seconds": wall,
            "search_seconds": float(log["search_seconds"].sum()), "acc_test": trained.meta["acc_test"],
            "final_share_mature": float(log["share_mature"].iloc[-1]), "device": device}


def evaluation_time(dataset: str, epochs: int = 100, n_runs: int = 100) -> dict[str, Any]:
    """Wall time of the paper's full counterfactual evaluation of one CT model (5 λ × n_runs × n_individuals)."""
    from .api import train_from_config
    from .data import available, load_dataset
    from .evaluation.protocol import EvalProtocol, evaluate_counterfactuals
    from .paper_settings import model_config

    data = load_dataset(dataset)
    cfg = model_config(dataset, "single", "full", epochs=epochs, threads=torch.get_num_threads())
    ct = train_from_config(cfg, data=data)
    family = available()[dataset]["family"]
    protocol = EvalProtocol.reference(family, n_runs=n_runs)
    t0 = time.perf_counter()
    df = evaluate_counterfactuals({"CT": ct}, data.X_test, data.y_test, protocol, ct.fidelity,
                                  n_classes=data.n_classes, categorical_groups=data.categorical_groups,
                                  dataset=dataset)
    wall = time.perf_counter() - t0
    return {"bench": "evaluate", "dataset": dataset, "n_runs": n_runs, "n_individuals": protocol.n_individuals,
            "lambdas": len(protocol.lambdas), "counterfactuals": len(df), "seconds": wall,
            "search_seconds": float(df.groupby("lambda_energy")["seconds"].first().sum()),
            "validity": float(df["valid"].mean())}


def run(device: str = "cpu", threads: int = 2, quick: bool = False) -> dict[str, Any]:
    torch.set_num_threads(threads)
    rows = []
    batches = [1_000, 4_000] if quick else [1_000, 4_000, 16_000, 64_000]
    for D in (12, 108):
        for B in batches:
            rows.append(search_throughput(D, 2, B, device=device))
    for B in ([1_000] if quick else [1_000, 4_000]):
        rows.append(search_throughput(784, 10, B, device=device))
    rows.append(search_throughput(108, 2, batches[-1], kind="threshold", device=device))
    epochs = 5 if quick else 100
    rows.append(training_time("lin_sep", device, epochs))
    rows.append(training_time("adult_size", device, epochs))
    if device == "cpu":
        rows.append(evaluation_time("lin_sep", epochs=epochs, n_runs=10 if quick else 100))
        try:
            rows.append(evaluation_time("adult", epochs=epochs, n_runs=10 if quick else 100))
        except (FileNotFoundError, ValueError) as err:  # real data absent: say so in the results
            rows.append({"bench": "evaluate", "dataset": "adult", "skipped": str(err).splitlines()[0]})
    machine = platform.processor() or platform.machine()
    if device.startswith("cuda"):
        machine = torch.cuda.get_device_name(0)
    return {"device": device, "threads": threads, "quick": quick, "machine": machine,
            "provenance": provenance(), "results": rows}


def to_markdown(report: dict[str, Any]) -> str:
    lines = [f"# ctbench core benchmark ({report['device']}, {report['threads']} CPU threads, {report['machine']})",
             "", f"ctbench {report['provenance']['ctbench_version']} at {report['provenance']['git_commit']}, "
             f"torch {report['provenance']['torch']}" + (" — QUICK sizes" if report["quick"] else ""), "",
             "## Counterfactual search (ECCo, training settings, MLP 32)", "",
             "| D | K | batch | T | convergence | mean steps | seconds | counterfactuals/s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        if r["bench"] == "search":
            lines.append(f"| {r['n_features']} | {r['n_classes']} | {r['batch']:,} | {r['T']} | {r['convergence']} | "
                         f"{r['mean_steps']:.1f} | {r['seconds']:.3f} | {r['cf_per_s']:,.0f} |")
    lines += ["", "## One CT training run (paper's final settings)", "",
              "| data | epochs | wall seconds | of which search | test accuracy | final share mature |",
              "|---|---|---|---|---|---|"]
    for r in report["results"]:
        if r["bench"] == "train":
            lines.append(f"| {r['dataset']} | {r['epochs']} | {r['seconds']:.1f} | {r['search_seconds']:.1f} | "
                         f"{r['acc_test']:.3f} | {r['final_share_mature']:.3f} |")
    ev = [r for r in report["results"] if r["bench"] == "evaluate"]
    if ev:
        lines += ["", "## Full counterfactual evaluation of one model (reference protocol)", "",
                  "| data | λ values | runs | individuals | counterfactuals | wall seconds | of which search "
                  "| validity |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in ev:
            if "skipped" in r:
                lines.append(f"| {r['dataset']} | skipped: {r['skipped']} | | | | | | |")
            else:
                lines.append(f"| {r['dataset']} | {r['lambdas']} | {r['n_runs']} | {r['n_individuals']} | "
                             f"{r['counterfactuals']:,} | {r['seconds']:.1f} | {r['search_seconds']:.1f} | "
                             f"{r['validity']:.3f} |")
    return "\n".join(lines) + "\n"


def main(args) -> int:
    report = run(args.device, args.threads, args.quick)
    out = Path(args.out)
    tag = ("cuda" if args.device.startswith("cuda") else f"cpu{args.threads}") + ("-quick" if args.quick else "")
    atomic_write_json(out / f"core-{tag}.json", report)
    md = to_markdown(report)
    atomic_write_text(out / f"core-{tag}.md", md)
    print(md)
    return 0
