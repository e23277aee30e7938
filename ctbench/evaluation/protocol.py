"""The paper's counterfactual evaluation protocol (reference §7.1–7.3), batched.

For each test-time energy penalty λ_egy (one evaluation per λ, each with its own draw, as the authors ran it;
``fidelity.redraw_per_lambda``), each model and all runs at once: factual/target label pairs are drawn once (or per
run, ``fidelity.redraw_pairs_per_run``); per model and run, individuals are drawn with replacement among the
evaluation points the model *predicts* as the factual class; one ECCo search (λ_cst = 0, T = 50, τ = 0.95
unconstrained / 0.5 constrained) explains all n_runs × n_individuals rows; then every per-counterfactual metric.
The result is a tidy frame, one row per counterfactual.
"""

from __future__ import annotations

import time
import zlib
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..constraints import Constraints
from ..fidelity import Fidelity
from ..generators import Convergence, make_generator
from .metrics import cost_l1, implausibility, ip_star, redundancy, validity

# the settings live in a torch-free module (the CLI and the switch catalogue read them without loading torch)
from .settings import EvalProtocol


def draw_pairs(n_classes: int, n_individuals: int, n_runs: int, redraw: bool,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Factual labels f ~ U(classes) and targets t ~ U(classes ∖ {f}), shape (n_runs, n_individuals)."""
    shape = (n_runs if redraw else 1, n_individuals)
    f = rng.integers(0, n_classes, size=shape)
    t = (f + rng.integers(1, n_classes, size=shape)) % n_classes
    if not redraw:
        f, t = np.repeat(f, n_runs, 0), np.repeat(t, n_runs, 0)
    return f, t


def draw_individuals(predicted: np.ndarray, factual: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each factual label, a uniform evaluation index among points predicted as that class (−1 if none)."""
    out = np.full(factual.shape, -1, dtype=np.int64)
    for c in np.unique(factual):
        pool = np.flatnonzero(predicted == c)
        where = factual == c
        if len(pool):
            out[where] = pool[rng.integers(0, len(pool), size=int(where.sum()))]
    return out


def model_key(name: str) -> int:
    """A stable integer for a model's name: its random streams depend on who it is, not on which other models
    share the evaluation (so ``full`` gets the same rows in ``single`` and in ``ablation``)."""
    return zlib.crc32(name.encode())


def evaluate_counterfactuals(models: dict[str, Any], X_eval: Any, y_eval: Any, protocol: EvalProtocol,
                             fidelity: Fidelity, *, n_classes: int, categorical_groups: list[list[int]] | None = None,
                             mutability: Any = None, dataset: str = "", progress: bool = False,
                             with_ip_star: bool = True) -> pd.DataFrame:
    """Evaluate trained models (name → :class:`ctbench.api.TrainedModel`) on one evaluation set.

    With ``protocol.constrained`` every model is searched under ``mutability`` (e.g. the dataset's protected
    features, as a list of immutable indices) — the same constraints for CT and BL, whatever each was trained
    with; without it, each model's own training mutability is used.

    Random draws: label pairs per λ (``fidelity.redraw_per_lambda``, the authors' one evaluation per λ) or once,
    shared by all models; individuals, IP's x⁺ draws and IP*'s subsamples from streams keyed by the protocol seed,
    the λ and the model's *name* (:func:`model_key`), so a model's rows do not depend on the other models.

    Columns: dataset, model, objective, lambda_energy, run, individual, index, factual, target, valid,
    valid_strict, p_target, mature, steps, cost, ip, ip_star, ip_star_raw, ip_star_run, ip_star_pooled, redundancy.
    ``ip_star`` is ``ip_star_run`` (groups per run) or ``ip_star_pooled`` (pooled over runs) as
    ``protocol.ip_star_per_run`` says; both are kept.

    ``with_ip_star=False`` leaves IP* and its columns out, for callers that do not read it (the grid chunks: ≈ 60%
    of an MNIST grid evaluation, issue 21); every other column is the same bit for bit (IP*'s subsamples come from
    a random stream of its own).
    """
    X = torch.as_tensor(np.asarray(X_eval), dtype=torch.float32)
    y = np.asarray(y_eval)
    yt = torch.as_tensor(y)
    draws = {}
    for li in range(len(protocol.lambdas)):
        key = li if fidelity.redraw_per_lambda else 0
        if key not in draws:
            draws[key] = draw_pairs(n_classes, protocol.n_individuals, protocol.n_runs, fidelity.redraw_pairs_per_run,
                                    np.random.default_rng([protocol.seed, 0, key]))
    groups = categorical_groups if fidelity.snap_categorical_at_eval else None
    conv = Convergence("threshold", protocol.tau, protocol.max_iter)
    frames = []
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(models) * len(protocol.lambdas), desc=f"evaluate {dataset}", unit="search")
    for name, trained in models.items():
        mk = model_key(name)
        model = trained.model.eval()
        dev = next(model.parameters()).device
        predicted = trained.predict(X.numpy())
        cons = trained.constraints
        cons = Constraints.build(
            X.shape[1],
            domain=None if cons.lower is None else (cons.lower.tolist(), cons.upper.tolist()),
            mutability=(mutability if mutability is not None else cons.mutability) if protocol.constrained else None,
            categorical_groups=groups)
        objective = trained.meta.get("objective_effective", {}).get("name", trained.config["objective"]["name"])
        m_frames, m_cfs = [], []
        for li, lam in enumerate(protocol.lambdas):
            t0 = time.perf_counter()
            key = li if fidelity.redraw_per_lambda else 0
            fact, targ = draws[key]
            idx = draw_individuals(predicted, fact, np.random.default_rng([protocol.seed, 1, key, mk]))
            ok = idx.reshape(-1) >= 0
            flat_idx = idx.reshape(-1)[ok]
            run = np.repeat(np.arange(protocol.n_runs), protocol.n_individuals)[ok]
            individual = np.tile(np.arange(protocol.n_individuals), protocol.n_runs)[ok]
            f_flat, t_flat = fact.reshape(-1)[ok], targ.reshape(-1)[ok]
            x0 = X[flat_idx].to(dev)
            tgt = torch.as_tensor(t_flat, device=dev)
            gen = make_generator({"type": "ecco", "lambda_cost": protocol.lambda_cost, "lambda_energy": lam},
                                 fidelity)
            res = gen.search(model, x0, tgt, cons, conv)
            with torch.no_grad():
                probs = torch.softmax(model(res.counterfactual), 1)
            ip_seed = int(np.random.default_rng([protocol.seed, 2, li, mk]).integers(2**31))
            ip = implausibility(res.counterfactual, tgt, X, yt, k=protocol.ip_k, generator=ip_seed)
            m_frames.append(pd.DataFrame({
                "dataset": dataset, "model": name, "objective": objective, "lambda_energy": lam, "run": run,
                "individual": individual, "index": flat_idx, "factual": f_flat, "target": t_flat,
                "valid": validity(probs, tgt).cpu().numpy(),
                "valid_strict": (res.prob_target >= protocol.tau).cpu().numpy(),
                "p_target": res.prob_target.cpu().numpy(), "mature": res.mature.cpu().numpy(),
                "steps": res.steps.cpu().numpy(), "cost": cost_l1(x0, res.counterfactual).cpu().numpy(),
                "ip": ip.cpu().numpy(), "redundancy": redundancy(x0, res.counterfactual).cpu().numpy(),
                "seconds": time.perf_counter() - t0,
            }))
            m_cfs.append(res.counterfactual.cpu())
            if bar is not None:
                bar.update()
        out = pd.concat(m_frames, ignore_index=True)
        if not with_ip_star:
            frames.append(out)
            continue
        cf = torch.cat(m_cfs)
        for col, keys in (("run", ["lambda_energy", "factual", "run"]), ("pooled", ["lambda_energy", "factual"])):
            seed = int(np.random.default_rng([protocol.seed, 3, mk]).integers(2**62))
            clamped, raw = ip_star(cf, out[keys], out["target"].to_numpy(), X, yt, fidelity.mmd_length_scale,
                                   n_sub=protocol.mmd_n_sub, seed=seed)
            out[f"ip_star_{col}"] = clamped.cpu().numpy()
            out[f"ip_star_raw_{col}"] = raw.cpu().numpy()
        chosen = "run" if protocol.ip_star_per_run else "pooled"
        out["ip_star"] = out[f"ip_star_{chosen}"]
        out["ip_star_raw"] = out.pop(f"ip_star_raw_{chosen}")
        out = out.drop(columns=[c for c in out.columns if c.startswith("ip_star_raw_")])
        frames.append(out)
    if bar is not None:
        bar.close()
    return pd.concat(frames, ignore_index=True)


def performance(models: dict[str, Any], X: Any, y: Any, n_classes: int) -> pd.DataFrame:
    """Accuracy and macro F1 of each model on (X, y)."""
    from .robustness import accuracy, macro_f1

    Xt = torch.as_tensor(np.asarray(X), dtype=torch.float32)
    yt = torch.as_tensor(np.asarray(y), dtype=torch.long)
    rows = []
    for name, trained in models.items():
        m = trained.model.eval()
        rows.append({"model": name, "objective": trained.meta.get("objective_effective", {}).get("name"),
                     "accuracy": accuracy(m, Xt, yt), "macro_f1": macro_f1(m, Xt, yt, n_classes=n_classes)})
    return pd.DataFrame(rows)
