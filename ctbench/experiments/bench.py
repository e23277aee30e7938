"""Benchmarks of the core (``ctbench bench``): search throughput and CT training wall time.

``ctbench bench`` (:mod:`ctbench.cli.bench_cmds`) writes the results as JSON and Markdown to
``benchmarks/results/`` with the machine and versions, so the numbers quoted in the README can be traced to a run.
Targets (DESIGN §7): ≥ 100k counterfactuals/s for a tabular MLP on 2 CPU threads (≥ 1M/s on an H100); one synthetic
CT run with the paper's final settings ≤ 10 s.
"""

from __future__ import annotations

import platform
import time
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..generators import Convergence, make_generator
from ..io import provenance
from ..models import build_model


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
    from ..constraints import infer_domain
    from ..data import Dataset, load_dataset
    from ..training.pipeline import train_from_config

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


def evaluation_time(dataset: str, epochs: int = 100, n_runs: int = 100, device: str = "cpu") -> dict[str, Any]:
    """Wall time of the paper's full counterfactual evaluation of one CT model (5 λ × n_runs × n_individuals), the
    model trained and searched on ``device``."""
    from ..data import load_dataset
    from ..data.registry import family
    from ..evaluation.protocol import EvalProtocol, evaluate_counterfactuals
    from ..paper_settings import model_config
    from ..training.pipeline import train_from_config

    data = load_dataset(dataset)
    cfg = model_config(dataset, "single", "full", epochs=epochs, threads=torch.get_num_threads(), device=device)
    ct = train_from_config(cfg, data=data)
    protocol = EvalProtocol.reference(family(dataset), n_runs=n_runs)
    t0 = time.perf_counter()
    df = evaluate_counterfactuals({"CT": ct}, data.X_test, data.y_test, protocol, ct.fidelity,
                                  n_classes=data.n_classes, categorical_groups=data.categorical_groups,
                                  dataset=dataset)
    _sync(torch.device(device))
    wall = time.perf_counter() - t0
    return {"bench": "evaluate", "dataset": dataset, "n_runs": n_runs, "n_individuals": protocol.n_individuals,
            "lambdas": len(protocol.lambdas), "counterfactuals": len(df), "seconds": wall,
            "search_seconds": float(df.groupby("lambda_energy")["seconds"].first().sum()),
            "validity": float(df["valid"].mean()), "device": device}


def cases(device: str = "cpu", quick: bool = False) -> list[dict[str, Any]]:
    """The benchmark cases of one ``ctbench bench`` run (the sizes of DESIGN §7; ``quick``: small sizes)."""
    batches = [1_000, 4_000] if quick else [1_000, 4_000, 16_000, 64_000]
    out = [{"bench": "search", "n_features": D, "n_classes": 2, "batch": B, "device": device}
           for D in (12, 108) for B in batches]
    out += [{"bench": "search", "n_features": 784, "n_classes": 10, "batch": B, "device": device}
            for B in ([1_000] if quick else [1_000, 4_000])]
    out.append({"bench": "search", "n_features": 108, "n_classes": 2, "batch": batches[-1], "kind": "threshold",
                "device": device})
    epochs = 5 if quick else 100
    out += [{"bench": "train", "dataset": d, "device": device, "epochs": epochs} for d in ("lin_sep", "adult_size")]
    out += [{"bench": "evaluate", "dataset": d, "epochs": epochs, "n_runs": 10 if quick else 100, "device": device}
            for d in ("lin_sep", "adult")]
    return out


def jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The cases a config's ``bench`` block asks for (``device``, ``quick``; the workflow runs no benchmark, so a
    workflow config without the block gets the full CPU suite of ``ctbench bench``)."""
    block = config.get("bench") or {}
    return cases(str(block.get("device", "cpu")), bool(block.get("quick", False)))


def _result(case: dict[str, Any]) -> dict[str, Any]:
    kw = {k: v for k, v in case.items() if k != "bench"}
    if case["bench"] == "search":
        return search_throughput(**kw)
    if case["bench"] == "train":
        return training_time(kw["dataset"], kw["device"], kw["epochs"])
    try:
        return evaluation_time(**kw)
    except (FileNotFoundError, ValueError) as err:  # real data absent: say so in the results
        if case["dataset"] == "lin_sep":
            raise
        return {"bench": "evaluate", "dataset": case["dataset"], "skipped": str(err).splitlines()[0]}


def run(job: dict[str, Any]) -> pd.DataFrame:
    """One benchmark case (an item of :func:`jobs`) as a one-row table."""
    return pd.DataFrame([_result(job)])


def suite(device: str = "cpu", threads: int = 2, quick: bool = False) -> dict[str, Any]:
    """Every case of :func:`cases` on ``threads`` CPU threads, with the machine and versions (``ctbench bench``)."""
    torch.set_num_threads(threads)
    rows = [_result(c) for c in cases(device, quick)]
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
