"""Search throughput, old vs new, side by side in one process: ``python benchmarks/search_speed.py [--rev REV]``.

The old search is the ECCo generator of ``ctbench/generators/`` at git revision REV (default 1c062fe, before the
closed-form MLP path), loaded from ``git show`` into throw-away modules; the new one is the working tree's.
Settings are those of ``ctbench.experiments.bench.search_throughput`` (ECCo, λ_cst 0.001, λ_egy 5, MLP 32, T = 30,
max_iter; one threshold row, τ = 0.75).
Runs alternate old/new and the best of N is kept, because the machine may be shared. Each pair is also checked to
give the same counterfactuals (up to float32 round-off).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ctbench.generators import Convergence, make_generator  # noqa: E402
from ctbench.models import build_model  # noqa: E402

SIZES = [(12, 2, [1_000, 4_000, 16_000, 64_000], "max_iter"), (108, 2, [1_000, 4_000, 16_000, 64_000], "max_iter"),
         (784, 10, [1_000, 4_000], "max_iter"), (108, 2, [64_000], "threshold")]


def old_ecco(rev: str):
    """ECCoGenerator class as of ``rev``: its generators/{base,ecco,mlp_grad,mlp_search}.py (those that exist there)
    in throw-away modules; everything else is the working tree's."""
    names = [n for n in ("mlp_grad", "base", "mlp_search", "ecco")
             if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}:ctbench/generators/{n}.py"],
                               capture_output=True).returncode == 0]
    mods = {}
    for name in names:
        src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:ctbench/generators/{name}.py"],
                             check=True, capture_output=True, text=True).stdout
        for other in names:
            src = src.replace(f"from .{other} import", f"from ._old_{other} import")
        full = f"ctbench.generators._old_{name}"
        spec = importlib.util.spec_from_loader(full, loader=None)
        mod = importlib.util.module_from_spec(spec)
        mod.__package__ = "ctbench.generators"
        sys.modules[full] = mod
        exec(compile(src, f"{rev}:{name}.py", "exec"), mod.__dict__)
        mods[name] = mod
    return mods["ecco"].ECCoGenerator


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", default="1c062fe")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", type=int, nargs="*", help="feature counts D to run (default: all)")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: process CPU time (steadier on a busy machine; with one thread only)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.clock == "cpu" and args.threads != 1:
        ap.error("--clock cpu needs --threads 1 (CPU time of several threads counts their waiting)")
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    new = make_generator({"type": "ecco", "lambda_cost": 0.001, "lambda_energy": 5.0})
    old = old_ecco(args.rev)(**{k: v for k, v in new.params().items() if k != "type"})
    load_before = os.getloadavg()
    rows = []
    for D, K, batches, kind in SIZES:
        conv = Convergence(kind, 0.75, 30)
        if args.only and D not in args.only:
            continue
        model = build_model({"type": "mlp"}, D, K, seed=0)
        for B in batches:
            x = torch.randn(B, D, generator=torch.Generator().manual_seed(0))
            with torch.no_grad():
                target = (model(x).argmax(1) + 1) % K
            best = {"old": float("inf"), "new": float("inf")}
            res = {}
            for gen in (old, new):  # warm-up
                gen.search(model, x[:256], target[:256], convergence=conv)
            for _ in range(args.rounds):
                for key, gen in (("old", old), ("new", new)):
                    t0 = clock()
                    res[key] = gen.search(model, x, target, convergence=conv)
                    best[key] = min(best[key], clock() - t0)
            diff = float((res["old"].counterfactual - res["new"].counterfactual).abs().max())
            rows.append((D, K, B, kind, B / best["old"], B / best["new"], diff))
            print(f"D={D} K={K} batch={B} {kind}: old {B / best['old']:,.0f}/s new {B / best['new']:,.0f}/s "
                  f"×{best['old'] / best['new']:.2f} (max |Δ cf| {diff:.1e})", flush=True)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    lines = [f"# Counterfactual search throughput: {args.rev} (old) vs working tree (new)", "",
             f"ECCo, λ_cst 0.001, λ_egy 5, MLP 32, T = 30 (τ = 0.75 for threshold), {args.threads} torch threads, "
             f"best of {args.rounds} alternating rounds ({args.clock} clock), torch {torch.__version__}.", "",
             f"Load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; "
             f"`uptime` after: {uptime}", "",
             "| D | K | batch | convergence | old CF/s | new CF/s | new/old | max abs Δ counterfactual |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {D} | {K} | {B:,} | {c} | {o:,.0f} | {n:,.0f} | {n / o:.2f} | {d:.1e} |"
              for D, K, B, c, o, n, d in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
