"""Would compiled per-row kernels buy issue 21's CPU-hour? numba against the torch paths, side by side.

    pip install numba            # not a project dependency: this script only
    PYTHONPATH=. python benchmarks/compiled_kernels.py [--groups 9,27] [--epochs 10] [--out results/compiled-kernels]

The stages that keep the paper above 3,600 CPU-s (grid chunks, CT × consistency, the final, retrain and fidelity
trainings) spend their time in two loops over small MLPs (2-32-2 on the synthetic data): the epoch's counterfactual
search and the mini-batch step (loss, hand-written backward, fused Adam). Both are a dozen torch operators on a few
thousand values, so the question was whether one compiled kernel per loop, a per-row loop in registers with no
operator dispatch, would run several times faster. Here both loops are written in numba and timed against the
torch code on the same inputs, in one process, one thread, alternating:

* **search**: every ``population_search`` call of a real LS population (ECCo, τ 0.5, T 30, the domain box; the
  run of ``ctbench bench --population``) is captured; the kernel (Generic/ECCo in feature space: forward, softmax,
  energy term, L1 cost, nascent ball, threshold stop, box clamp) re-runs each one. Agreement: the share of rows with
  the same number of steps and the largest counterfactual difference (float32; the kernel sums in another order).
* **step**: the kernel does one mini-batch's forward pass, CT loss (CE, divergence, ridge, adversarial CE), backward
  and Adam for all G members; torch's is ``batch_forward`` + ``batch_grad`` + ``_adam_step_all`` on the run's own
  mini-batch (the last epoch's first). Agreement: the kernel's weight gradient against ``batch_grad``'s (largest
  difference relative to the largest entry).

Each kernel is written for speed (inner loops over the hidden units, contiguous, ``fastmath`` so that numba
vectorises the reductions). Measured results go to ``results/compiled-kernels.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

try:
    import numba
    from numba import njit
except ImportError:  # pragma: no cover - the script's one extra
    sys.exit("benchmarks/compiled_kernels.py needs numba (pip install numba); it is not a project dependency")

import ctbench.cli  # noqa: F401  (the workflow's allocator settings, as in every job)
import ctbench.generators.population as gen_population
import ctbench.training.population_run as population_run
import ctbench.training.population_search as population_search_mod
from ctbench.experiments.bench_population import _case_data
from ctbench.generators import Convergence, make_generator
from ctbench.models import build_model
from ctbench.training import Objective, TrainParams
from ctbench.training.population import Member, train_population
from ctbench.training.population_loss import _inputs, batch_forward, batch_grad


# -- the kernels ---------------------------------------------------------------------------------------------------
@njit(cache=True, fastmath=True)
def search_kernel(x0, y, W1, b1, W2t, b2, eta, lam, eps, tau, T, thr, lenient, coef, ereg, lo, hi, valid,
                  cf, nas_out, steps, prob_out, mature, init):
    """population_search for one-hidden-layer MLPs in feature space, row by row (x0 (G, n, D); W1 (G, D, H);
    W2t (G, K, H); coef (G, P) = λ_egy·φ(t)); the outputs are written in place."""
    G, n, D = x0.shape
    H, K, P = W1.shape[2], W2t.shape[1], coef.shape[1]
    x = np.empty(D, np.float32)
    nas = np.empty(D, np.float32)
    h = np.empty(H, np.float32)
    lg = np.empty(K, np.float32)
    pr = np.empty(K, np.float32)
    dh = np.empty(H, np.float32)
    for g in range(G):
        for i in range(n):
            if not valid[g, i]:
                continue
            yi = y[g, i]
            x[:] = x0[g, i]
            nas[:] = x0[g, i]
            t = 0
            while True:
                h[:] = b1[g]
                for d in range(D):
                    xd = x[d]
                    for j in range(H):
                        h[j] += xd * W1[g, d, j]
                for j in range(H):
                    h[j] = max(h[j], np.float32(0.0))
                for k in range(K):
                    a = b2[g, k]
                    for j in range(H):
                        a += h[j] * W2t[g, k, j]
                    lg[k] = a
                mx = lg[0]
                for k in range(1, K):
                    mx = max(mx, lg[k])
                s = np.float32(0.0)
                for k in range(K):
                    pr[k] = math.exp(lg[k] - mx)
                    s += pr[k]
                for k in range(K):
                    pr[k] /= s
                p = pr[yi]
                if t > 0:
                    dist = np.float32(0.0)
                    for d in range(D):
                        dist = max(dist, abs(x[d] - x0[g, i, d]))
                    if dist <= eps[g]:
                        nas[:] = x
                passed = p >= tau[g]
                if t == 0:
                    init[g, i] = passed and thr[g]
                if (passed and thr[g]) or t >= T[g]:
                    cf[g, i] = x
                    nas_out[g, i] = nas
                    steps[g, i] = t
                    prob_out[g, i] = p
                    mature[g, i] = passed or lenient[g]
                    break
                pr[yi] -= 1.0
                c = coef[g, min(t, P - 1)]
                if c != 0.0:
                    pr[yi] -= c * (1 + 2 * ereg[g] * (-lg[yi]))
                dh[:] = 0.0
                for k in range(K):
                    for j in range(H):
                        dh[j] += W2t[g, k, j] * pr[k]
                for d in range(D):
                    a = np.float32(0.0)
                    for j in range(H):
                        if h[j] > 0:
                            a += W1[g, d, j] * dh[j]
                    diff = x[d] - x0[g, i, d]
                    a += lam[g] * (np.float32(1.0) if diff > 0 else (np.float32(-1.0) if diff < 0 else np.float32(0.0)))
                    v = x[d] - eta[g] * a
                    x[d] = min(max(v, lo[g, i, d]), hi[g, i, d])
                t += 1


@njit(cache=True, fastmath=True)
def _adam(f, gg, mm, vv, lr, bc1, bc2):
    for i in range(f.size):
        mm[i] = 0.9 * mm[i] + 0.1 * gg[i]
        vv[i] = 0.999 * vv[i] + 0.001 * gg[i] * gg[i]
        f[i] -= lr * (mm[i] / bc1) / (math.sqrt(vv[i] / bc2) + 1e-8)


@njit(cache=True, fastmath=True)
def step_kernel(X, y, nb, m, tgt, W1, b1, W2t, b2, lam4, gW1, gb1, gW2t, gb2, opt, lr, t, update):
    """One CT mini-batch for G one-hidden-layer MLPs: X (G, nb + 3m, D) = batch, x_ae, x', x⁺ rows; y (G, nb + m)
    labels of the batch and x_ae rows; tgt (G, m) = y⁺. Gradient into gW1 … gb2; Adam (``opt``: moments) if
    ``update``."""
    G, R, D = X.shape
    H, K = W1.shape[2], W2t.shape[1]
    h = np.empty(H, np.float32)
    lg = np.empty(K, np.float32)
    dl = np.empty(K, np.float32)
    dh = np.empty(H, np.float32)
    for g in range(G):
        gW1[g] = 0
        gb1[g] = 0
        gW2t[g] = 0
        gb2[g] = 0
        for r in range(R):
            h[:] = b1[g]
            for d in range(D):
                xd = X[g, r, d]
                for j in range(H):
                    h[j] += xd * W1[g, d, j]
            for j in range(H):
                h[j] = max(h[j], np.float32(0.0))
            for k in range(K):
                a = b2[g, k]
                for j in range(H):
                    a += h[j] * W2t[g, k, j]
                lg[k] = a
            if r < nb + m:  # a cross-entropy row: the batch (clf), then x_ae (adv)
                mx = lg[0]
                for k in range(1, K):
                    mx = max(mx, lg[k])
                s = np.float32(0.0)
                for k in range(K):
                    dl[k] = math.exp(lg[k] - mx)
                    s += dl[k]
                w = lam4[g, 0] / nb if r < nb else lam4[g, 3] / m
                for k in range(K):
                    dl[k] = w * (dl[k] / s - (1.0 if k == y[g, r] else 0.0))
            else:  # x' (+div, ridge) or x⁺ (−div, ridge) at the target logit
                dl[:] = 0.0
                q = r - nb - m
                tk = tgt[g, q if q < m else q - m]
                dl[tk] = (lam4[g, 1] * (1.0 if q < m else -1.0) + lam4[g, 2] * 2 * lg[tk]) / m
            dh[:] = 0.0
            for k in range(K):
                gb2[g, k] += dl[k]
                dk = dl[k]
                for j in range(H):
                    gW2t[g, k, j] += h[j] * dk
                    dh[j] += W2t[g, k, j] * dk
            for j in range(H):
                if h[j] <= 0:
                    dh[j] = 0.0
                gb1[g, j] += dh[j]
            for d in range(D):
                xd = X[g, r, d]
                for j in range(H):
                    gW1[g, d, j] += xd * dh[j]
    if update:
        bc1, bc2 = 1 - 0.9 ** t, 1 - 0.999 ** t
        _adam(W1.ravel(), gW1.ravel(), opt[0], opt[1], lr, bc1, bc2)
        _adam(W2t.ravel(), gW2t.ravel(), opt[2], opt[3], lr, bc1, bc2)
        _adam(b1.ravel(), gb1.ravel(), opt[4], opt[5], lr, bc1, bc2)
        _adam(b2.ravel(), gb2.ravel(), opt[6], opt[7], lr, bc1, bc2)


# -- capture: a real LS population, its searches and its last epoch's first mini-batch ---------------------------
def train_and_capture(G: int, epochs: int):
    X, y, cons, tp, tau, lam_reg = _case_data("lin_sep")
    calls, last, torch_s = [], {}, {"search": 0.0, "step": 0.0, "steps": 0}
    orig_search = population_search_mod.population_search

    def spy_search(model, x, target, settings, constraints=None, valid=None, compact_below=0.8, latent=None):
        t0 = time.process_time()
        res = orig_search(model, x, target, settings, constraints, valid, compact_below, latent)
        torch_s["search"] += time.process_time() - t0
        calls.append(dict(model=model, x=x.clone(), target=target.clone(), settings=settings,
                          constraints=constraints, valid=None if valid is None else valid.clone()))
        return res

    def spy_forward(run, i, order, cf):
        if i == 0:  # the epoch's first mini-batch (a full one; the last may hold a single row)
            last.update(run=run, i=i, order=order, cf=cf)
        return batch_forward(run, i, order, cf)

    population_search_mod.population_search = spy_search
    population_run.batch_forward = spy_forward
    try:
        members = [Member(build_model({"type": "mlp"}, 2, 2, seed=s), Objective("full", lambda_reg=lam_reg),
                          TrainParams(epochs=epochs, seed=s, **tp), make_generator({"type": "ecco"}),
                          Convergence("threshold", tau, 30), name=str(s)) for s in range(G)]
        torch.set_num_threads(1)
        train_population(members, X, y, constraints=cons)
    finally:
        population_search_mod.population_search = orig_search
        population_run.batch_forward = batch_forward
    return calls, last


def _np(t):
    return t.detach().cpu().numpy()


def search_args(c):
    m, x, s, cons = c["model"], c["x"], c["settings"], c["constraints"]
    G, n, D = x.shape
    (W1, b1), (W2, b2) = m.layers()
    lo, hi = cons.row_bounds(x, cons.codes(x.device))
    lo = np.broadcast_to(_np(lo.to(x.dtype)), (G, n, D)) if lo is not None else np.full((G, n, D), -np.inf, np.float32)
    hi = np.broadcast_to(_np(hi.to(x.dtype)), (G, n, D)) if hi is not None else np.full((G, n, D), np.inf, np.float32)
    coef = (s.lambda_energy[:, None] * s.phi).to(x.dtype)
    valid = np.ones((G, n), np.bool_) if c["valid"] is None else _np(c["valid"])
    args = (_np(x), _np(c["target"]), _np(W1).copy(), _np(b1).copy(), np.ascontiguousarray(_np(W2).transpose(0, 2, 1)),
            _np(b2).copy(), _np(s.step), _np(s.lambda_cost), _np(s.epsilon), _np(s.tau), _np(s.max_iter),
            _np(s.threshold), _np(s.lenient), _np(coef), _np(s.energy_reg), lo, hi, valid)
    out = (np.empty((G, n, D), np.float32), np.empty((G, n, D), np.float32), np.zeros((G, n), np.int64),
           np.zeros((G, n), np.float32), np.zeros((G, n), np.bool_), np.zeros((G, n), np.bool_))
    return args, out


def bench_search(calls, reps: int) -> dict:
    same_steps = rows = 0
    max_diff = 0.0
    prepared = [search_args(c) for c in calls]
    search_kernel(*prepared[0][0], *prepared[0][1])  # compile (or load from numba's cache)
    for c, (args, out) in zip(calls, prepared, strict=True):
        ref = gen_population.population_search(c["model"], c["x"], c["target"], c["settings"], c["constraints"],
                                               c["valid"])
        search_kernel(*args, *out)
        v = args[-1]
        same_steps += int((out[2] == _np(ref.steps))[v].sum())
        rows += int(v.sum())
        max_diff = max(max_diff, float(np.abs(out[0] - _np(ref.counterfactual))[v].max()))
    t_torch, t_numba = [], []
    for _ in range(reps):  # alternating, so that load hits both alike
        t0 = time.process_time()
        for c in calls:
            gen_population.population_search(c["model"], c["x"], c["target"], c["settings"], c["constraints"],
                                             c["valid"])
        t_torch.append(time.process_time() - t0)
        t0 = time.process_time()
        for args, out in prepared:
            search_kernel(*args, *out)
        t_numba.append(time.process_time() - t0)
    mean_steps = float(np.mean([_np(c["settings"].max_iter).mean() for c in calls]))
    return dict(calls=len(calls), rows=rows, same_steps=same_steps / rows, max_cf_diff=max_diff,
                torch_cpu_s=min(t_torch), numba_cpu_s=min(t_numba), ratio=min(t_torch) / min(t_numba),
                max_iter=mean_steps)


def bench_step(last, n: int, reps: int) -> dict:
    run, i, order, cf = last["run"], last["i"], last["order"], last["cf"]
    xb, yb, bmask, m, tuples = _inputs(run, i, order, cf)
    assert m and bmask is None and tuples[5] is None, "the captured batch is a full batch with tuples"
    x_ae, x_cf, x_plus, t_plus, y_ae, _ = tuples
    G, nb, D = xb.shape
    (W1, b1), (W2, b2) = run.wb
    lam4 = torch.where(run.use4 & run.all_parts, run.lam4, 0.0)
    X = np.ascontiguousarray(_np(torch.cat([xb, x_ae, x_cf, x_plus], 1)))
    Y = _np(torch.cat([yb, y_ae], 1))
    k_args = [X, Y, nb, m, _np(t_plus), _np(W1).copy(), _np(b1).reshape(G, -1).copy(),
              np.ascontiguousarray(_np(W2).transpose(0, 2, 1)), _np(b2).reshape(G, -1).copy(), _np(lam4)]
    grads = [np.zeros_like(k_args[5]), np.zeros_like(k_args[6]), np.zeros_like(k_args[7]), np.zeros_like(k_args[8])]
    opt = np.zeros((8, k_args[5].size + k_args[7].size), np.float32)
    step_kernel(*k_args, *grads, opt, 1e-3, 1, False)
    H = k_args[5].shape[2]
    ref = batch_grad(run, batch_forward(run, i, order, cf)[3], None)  # (G, P): W0, b0, W1, b1 flattened
    mine = np.concatenate([grads[0].reshape(G, -1), grads[1], grads[2].transpose(0, 2, 1).reshape(G, -1),
                           grads[3]], 1)
    r = _np(ref)
    rel = float(np.abs(mine - r).max() / np.abs(r).max())
    t_torch, t_numba = [], []
    for _ in range(reps):
        t0 = time.process_time()
        for _ in range(n):
            total, parts, have, tape = batch_forward(run, i, order, cf)
            bool(torch.isfinite(total).all())
            run._adam_step_all(run._grad_of(tape, None))
        t_torch.append((time.process_time() - t0) / n)
        t0 = time.process_time()
        for s in range(n):
            step_kernel(*k_args, *grads, opt, 1e-3, s + 1, True)
        t_numba.append((time.process_time() - t0) / n)
    return dict(G=G, nb=nb, m=m, D=D, H=H, grad_rel_max_diff=rel, torch_us=min(t_torch) * 1e6,
                numba_us=min(t_numba) * 1e6, ratio=min(t_torch) / min(t_numba))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", default="9,27", help="population sizes G (comma-separated)")
    ap.add_argument("--epochs", type=int, default=10, help="epochs of the captured LS population")
    ap.add_argument("--reps", type=int, default=5, help="alternating repetitions (the minimum is reported)")
    ap.add_argument("--steps", type=int, default=1000, help="mini-batch steps per timed repetition")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "compiled-kernels"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    rows = []
    for G in (int(g) for g in a.groups.split(",")):
        calls, last = train_and_capture(G, a.epochs)
        s = bench_search(calls, a.reps)
        st = bench_step(last, a.steps, a.reps)
        rows.append(dict(G=G, search=s, step=st))
        print(f"G={G}: search torch {s['torch_cpu_s']:.3f} s, numba {s['numba_cpu_s']:.3f} s ({s['ratio']:.2f}×; "
              f"steps equal on {s['same_steps']:.4f} of {s['rows']} rows, max |Δx'| {s['max_cf_diff']:.1e}); "
              f"step torch {st['torch_us']:.0f} µs, numba {st['numba_us']:.0f} µs ({st['ratio']:.2f}×; "
              f"gradient rel. diff {st['grad_rel_max_diff']:.1e})", flush=True)
    meta = dict(torch=torch.__version__, numba=numba.__version__, numpy=np.__version__,
                python=platform.python_version(), machine=platform.machine(), load_before=os.getloadavg()[0],
                epochs=a.epochs, reps=a.reps,
                steps=a.steps, when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    out = Path(a.out)
    out.with_suffix(".json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1) + "\n")
    md = ["| G | search: torch CPU-s | numba CPU-s | ratio | rows with equal steps | max abs Δx' | step: torch µs |"
          " numba µs | ratio | gradient rel. diff |", "|" + "---|" * 10]
    for r in rows:
        s, st = r["search"], r["step"]
        md.append(f"| {r['G']} | {s['torch_cpu_s']:.3f} | {s['numba_cpu_s']:.3f} | {s['ratio']:.2f}× | "
                  f"{s['same_steps']:.4f} of {s['rows']} | {s['max_cf_diff']:.1e} | {st['torch_us']:.0f} | "
                  f"{st['numba_us']:.0f} | {st['ratio']:.2f}× | {st['grad_rel_max_diff']:.1e} |")
    md.append("")
    md.append(f"LS population (2-32-2, ECCo, τ 0.5, T 30, batch 30, nce 1000), {a.epochs} epochs captured; one thread; "
              f"CPU seconds, the minimum of {a.reps} alternating repetitions. {json.dumps(meta)}")
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print(f"wrote {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
