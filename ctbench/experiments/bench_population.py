"""Benchmark: G single-model CT runs in a loop against one population of G (``ctbench bench --population``).

Each case runs in its own Python process (one torch thread), so wall time, CPU time and peak memory (max RSS) are
the case's own; loop and population cases of the same G run back to back, alternating, so that load on a shared
machine hits both sides alike. Two data sets: LS (the paper's synthetic setting: 2 features, batch 30, nce 1000,
τ 0.5) and an Adult-size random table (26,049 × 108, batch 1000, nce 5000, τ 0.75, λ_reg 0.25).
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from typing import Any

import numpy as np
import torch

from ..io import provenance


def _case_data(dataset: str):
    from ..constraints import Constraints, infer_domain
    from ..data import load_dataset

    if dataset == "lin_sep":
        d = load_dataset("lin_sep")
        return d.X_train, d.y_train, Constraints.build(2, domain=d.domain), dict(batch_size=30, nce=1000), 0.5, 0.01
    rng = np.random.default_rng(0)
    n, D = 26_049, 108
    w = rng.normal(size=D)
    X = rng.normal(size=(n, D)).astype(np.float32)
    y = (X @ w + rng.normal(size=n) > 0).astype(np.int64)
    return X, y, Constraints.build(D, domain=infer_domain(X)), dict(batch_size=1000, nce=5000), 0.75, 0.25


def run_case(dataset: str, G: int, mode: str, epochs: int, device: str = "cpu") -> dict[str, Any]:
    """Train G CT models (seeds 0..G-1) in a loop or as one population on ``device``; wall/CPU seconds and peak
    RSS (and peak GPU memory on CUDA)."""
    import resource

    from ..generators import Convergence, make_generator
    from ..models import build_model
    from ..training import Objective, TrainParams, train
    from ..training.population import Member, train_population

    torch.set_num_threads(1)
    X, y, cons, tp, tau, lam_reg = _case_data(dataset)
    D = X.shape[1]

    def member(seed):
        return Member(build_model({"type": "mlp"}, D, 2, seed=seed), Objective("full", lambda_reg=lam_reg),
                      TrainParams(epochs=epochs, seed=seed, **tp), make_generator({"type": "ecco"}),
                      Convergence("threshold", tau, 30), name=str(seed))

    # warm-up of both code paths (imports, allocator, first-call dispatch) on a few rows, outside the timing
    warm = Member(build_model({"type": "mlp"}, D, 2, seed=0), Objective("full"), TrainParams(
        epochs=1, batch_size=50, nce=50), make_generator({"type": "ecco"}), Convergence("threshold", tau, 5))
    train(warm.model, X[:200], y[:200], objective=warm.objective, generator=warm.generator, params=warm.params,
          constraints=cons, convergence=warm.convergence, device=device)
    train_population([warm], X[:200], y[:200], constraints=cons, device=device)
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    w0, c0 = time.perf_counter(), time.process_time()
    if mode == "loop":
        for s in range(G):
            m = member(s)
            train(m.model, X, y, objective=m.objective, generator=m.generator, params=m.params, constraints=cons,
                  convergence=m.convergence, device=device)
    else:
        results = train_population([member(s) for s in range(G)], X, y, constraints=cons, device=device)
        assert all(r.ok for r in results)
    if cuda:
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"dataset": dataset, "G": G, "mode": mode, "epochs": epochs, "wall_s": wall, "cpu_s": cpu,
            "peak_rss_mb": rss / 1024, "rss_before_mb": rss0 / 1024, "device": device,
            "peak_gpu_mb": torch.cuda.max_memory_allocated() / 2**20 if cuda else None}


def _subprocess_case(dataset: str, G: int, mode: str, epochs: int, device: str = "cpu") -> dict[str, Any]:
    code = (f"import json; from ctbench.experiments.bench_population import run_case; "
            f"print(json.dumps(run_case({dataset!r}, {G}, {mode!r}, {epochs}, {device!r})))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def suite(sizes=None, epochs: dict[str, int] | None = None, quick: bool = False,
          device: str = "cpu") -> dict[str, Any]:
    """Loop vs population at each G. On CUDA the default is G = 1, 9, 36 and fewer epochs (a lent GPU's minutes are
    few, and a loop of 100 small models on a GPU measures kernel launches only)."""
    cuda = device.startswith("cuda")
    sizes = sizes or ((1, 9, 36) if cuda else (1, 9, 36, 100))
    epochs = epochs or ({"lin_sep": 2, "adult_size": 1} if quick else
                        {"lin_sep": 5, "adult_size": 2} if cuda else {"lin_sep": 30, "adult_size": 5})
    rows = []
    for dataset in ("lin_sep", "adult_size"):
        for G in sizes:
            for mode in ("loop", "population"):
                rows.append(_subprocess_case(dataset, G, mode, epochs[dataset], device))
                print(json.dumps(rows[-1]), file=sys.stderr)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    machine = torch.cuda.get_device_name(0) if cuda else platform.processor() or platform.machine()
    return {"threads": 1, "epochs": epochs, "machine": machine, "device": device,
            "loadavg_after": load, "provenance": provenance(), "results": rows}


def to_markdown(report: dict[str, Any]) -> str:
    p = report["provenance"]
    lines = [f"# Population vs loop ({report.get('device', 'cpu')}, 1 torch thread per process, {report['machine']})",
             "",
             f"ctbench {p['ctbench_version']} at {p['git_commit']}, torch {p['torch']}; epochs per model: "
             f"{report['epochs']} (early epochs search more, so the ratio at 100 epochs differs somewhat); load "
             f"average after the run {' '.join(report['loadavg_after'])}.", "",
             "| data | G | loop wall s | population wall s | speed-up (wall) | loop CPU s | population CPU s | "
             "loop peak RSS MB | population peak RSS MB |", "|---|---|---|---|---|---|---|---|---|"]
    by = {(r["dataset"], r["G"], r["mode"]): r for r in report["results"]}
    for dataset, G in dict.fromkeys((r["dataset"], r["G"]) for r in report["results"]):
        lo, po = by[(dataset, G, "loop")], by[(dataset, G, "population")]
        lines.append(f"| {dataset} | {G} | {lo['wall_s']:.1f} | {po['wall_s']:.1f} | "
                     f"{lo['wall_s'] / po['wall_s']:.1f}× | {lo['cpu_s']:.1f} | {po['cpu_s']:.1f} | "
                     f"{lo['peak_rss_mb']:.0f} | {po['peak_rss_mb']:.0f} |")
    return "\n".join(lines) + "\n"
