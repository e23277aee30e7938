"""Per-counterfactual metrics of the CT evaluation (reference/ct_reference.md §7.3).

Every function accepts torch tensors or numpy arrays (rows = counterfactuals; image inputs of any trailing shape are
flattened to one feature vector per row) and returns torch tensors on the device of the main input. All computations
are vectorised: the only Python loops run over target classes (``implausibility``) or over groups (``ip_star``).

Sign convention: every metric here is a non-negative *distance* (smaller = better). The authors' harness stores
plausibility as ``−IP`` and IP* as ``−max(MMD², 0)``; :func:`ctbench.evaluation.aggregate.paper_value` applies that
convention where the aggregation recipe needs it (it cancels in the paper's ratios).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import torch

__all__ = [
    "cost_l1",
    "implausibility",
    "ip_star",
    "mmd2_unbiased",
    "redundancy",
    "strict_validity",
    "validity",
]

#: default memory budget of one chunk of a distance matrix (bytes)
CHUNK_BYTES = 64 * 2**20
#: IP gathers each counterfactual's drawn reference rows when the class pool has at least this many times K rows
GATHER_FACTOR = 3
#: size of IP's buffer of gathered rows (bytes; small enough to stay in cache)
GATHER_BYTES = 2 * 2**20


def _tensor(a: Any, device: torch.device | None = None, dtype: torch.dtype | None = None) -> torch.Tensor:
    if not isinstance(a, torch.Tensor):
        arr = np.asarray(a)
        t = torch.as_tensor(arr if arr.flags.writeable else arr.copy())
    else:
        t = a
    if device is not None or dtype is not None:
        t = t.to(device=device if device is not None else t.device, dtype=dtype if dtype is not None else t.dtype)
    return t


def _rows(a: Any, device: torch.device | None = None, dtype: torch.dtype | None = torch.float64) -> torch.Tensor:
    """2-D view (n, d) of a batch of inputs of any trailing shape."""
    t = _tensor(a, device, dtype)
    if t.ndim == 1:
        t = t[:, None]
    return t.reshape(t.shape[0], math.prod(t.shape[1:]))


def _labels(a: Any, device: torch.device | None = None) -> torch.Tensor:
    return _tensor(a, device).reshape(-1).long()


def _generator(generator: torch.Generator | int | None) -> torch.Generator | None:
    if generator is None or isinstance(generator, torch.Generator):
        return generator
    g = torch.Generator()
    g.manual_seed(int(generator))
    return g


# ----------------------------------------------------------------------------------------------------------- validity
def validity(probs_or_logits: Any, target: Any) -> torch.Tensor:
    """Label-flip validity (CE.jl v1.4.6): ``argmax_c M(x')_c == y⁺``; bool tensor of shape (n,).

    Softmax is monotone, so probabilities and logits give the same answer.
    """
    s = _tensor(probs_or_logits)
    return s.argmax(dim=-1) == _labels(target, s.device)


def strict_validity(p_target: Any, tau: float) -> torch.Tensor:
    """``validity_strict``: the target-class probability reaches the threshold, ``p(y⁺|x') ≥ τ``; bool (n,)."""
    return _tensor(p_target) >= tau


# ------------------------------------------------------------------------------------------------ cost / redundancy
def cost_l1(x: Any, x_cf: Any) -> torch.Tensor:
    """Cost (``distance``): ``‖x' − x‖₁`` per row, in the model's input space; float64 (n,)."""
    xc = _rows(x_cf)
    return (xc - _rows(x, xc.device)).abs().sum(dim=1)


def redundancy(x: Any, x_cf: Any, tol: float = 1e-5) -> torch.Tensor:
    """Share of features left (numerically) unchanged, ``mean_d [|x'_d − x_d| < tol]``; float64 (n,)."""
    xc = _rows(x_cf)
    return ((xc - _rows(x, xc.device)).abs() < tol).double().mean(dim=1)


# --------------------------------------------------------------------------------------------------- implausibility
def implausibility(x_cf: Any, target: Any, X_ref: Any, y_ref: Any, k: int = 1000,
                   generator: torch.Generator | int | None = None, chunk_bytes: int = CHUNK_BYTES) -> torch.Tensor:
    """IP (``plausibility_distance_from_target``, §7.3): mean L1 distance to K random target-class reference points.

    For each counterfactual ``x'_i`` with target ``t_i``: draw ``K = min(N_ref, k)`` indices *with replacement*
    (a fresh draw per counterfactual) from the reference rows whose true label is ``t_i``, where ``N_ref`` is the
    size of the *whole* reference set (the harness's behaviour, so K = 900 for a 900-row test set); return
    ``(1/K) Σ_k ‖x'_i − x⁺_k‖₁``. Rows whose target has no reference row get NaN.

    Vectorised per target class. Where the class pool is large against K (≥ ``3·K`` rows, e.g. a tabular test
    split's 4,912 rows against K = 1,000), each counterfactual's K drawn rows are gathered (``index_select`` into a
    reused buffer of ≈ 2 MB that stays in cache) and ``torch.cdist(p=1)`` is taken batch-wise (row i against its
    own K rows): K/N_class of the distances (measured 2.2× at D = 108, issue 21). Otherwise (MNIST: ≈ 1,000 rows
    per class against K = 1,000) the L1 distance matrix to the whole pool is gathered at the drawn indices, in row
    chunks of at most ``chunk_bytes``. Both give the same numbers bit for bit (the same ``cdist`` kernel, a sequential
    sum over the features, on the same pairs; tested).
    Indices are drawn on the CPU with ``generator`` (a ``torch.Generator``, an int seed, or None = global RNG),
    class by class in increasing label order, rows in input order. Returns float64 (n,).
    """
    xc = _rows(x_cf)
    dev = xc.device
    t = _labels(target, dev)
    Xr = _rows(X_ref, dev)
    yr = _labels(y_ref, dev)
    n_ref, d = Xr.shape
    K = min(n_ref, int(k))
    gen = _generator(generator)
    out = torch.full((xc.shape[0],), math.nan, dtype=torch.float64, device=dev)
    if K == 0:
        return out
    for c in torch.unique(t).tolist():
        rows = torch.nonzero(t == c).flatten()
        pool = Xr[yr == c]
        if pool.shape[0] == 0:
            continue
        gathered = pool.shape[0] >= GATHER_FACTOR * K
        if gathered:
            step = max(1, GATHER_BYTES // (8 * K * d))
            buf = torch.empty((min(step, rows.numel()) * K, d), dtype=torch.float64, device=dev)
        else:
            # bytes of one row of a chunk: its distance row, its K draws and gathered values, its input row
            # (cdist(p=1) does not materialise the n×m×d differences)
            step = max(1, int(chunk_bytes // (8 * (pool.shape[0] + 2 * K + d))))
        for s in range(0, rows.numel(), step):  # chunks bound memory; each chunk is one vectorised op
            r = rows[s:s + step]
            # the chunk's draws, in row order (the CPU stream does not depend on the chunking; tested)
            idx = torch.randint(pool.shape[0], (r.numel(), K), generator=gen).to(dev)
            if gathered:
                drawn = torch.index_select(pool, 0, idx.reshape(-1), out=buf[:r.numel() * K])
                out[r] = torch.cdist(xc[r].unsqueeze(1), drawn.view(r.numel(), K, d), p=1.0).squeeze(1).mean(dim=1)
            else:
                out[r] = torch.cdist(xc[r], pool, p=1.0).gather(1, idx).mean(dim=1)
    return out


# --------------------------------------------------------------------------------------------------------------- MMD
def _sqdist(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    # exact differences (no ‖a‖²+‖b‖²−2ab cancellation), so that k(a,a) = 1 and near-equal kernels stay accurate
    return torch.cdist(A, B, p=2.0, compute_mode="donot_use_mm_for_euclid_dist").square()


def mmd2_unbiased(X: Any, Y: Any, length_scale: float) -> float:
    """Unbiased squared MMD with the Gaussian kernel ``k(a, b) = exp(−‖a − b‖² / (2ℓ²))`` (§7.3)::

        MMD² = Σ_{i≠j} k(x_i, x_j) / (m(m−1)) + Σ_{i≠j} k(y_i, y_j) / (n(n−1)) − 2 Σ_{i,j} k(x_i, y_j) / (mn)

    ``X``: (m, d), ``Y``: (n, d) (rows = samples). The unbiased estimate can be negative. Returns NaN when
    m < 2 or n < 2 (the within-sample sums are undefined). Computed in float64.
    """
    A = _rows(X)
    B = _rows(Y, A.device)
    m, n = A.shape[0], B.shape[0]
    if m < 2 or n < 2:
        return math.nan
    g = 1.0 / (2.0 * float(length_scale) ** 2)
    kxx = torch.exp(-g * _sqdist(A, A))
    kyy = torch.exp(-g * _sqdist(B, B))
    kxy = torch.exp(-g * _sqdist(A, B))
    sxx = kxx.sum() - kxx.diagonal().sum()
    syy = kyy.sum() - kyy.diagonal().sum()
    return float(sxx / (m * (m - 1)) + syy / (n * (n - 1)) - 2.0 * kxy.sum() / (m * n))


def _group_ids(group_keys: Any, target: np.ndarray) -> np.ndarray:
    """Dense group id per row for the key columns plus the target (groups ordered by sorted key values)."""
    if isinstance(group_keys, pd.Series):
        keys = group_keys.to_frame().reset_index(drop=True)
    elif isinstance(group_keys, pd.DataFrame):
        keys = group_keys.reset_index(drop=True)
    else:
        arr = np.asarray(group_keys)
        keys = pd.DataFrame(arr.reshape(arr.shape[0], -1) if arr.ndim != 1 else arr[:, None])
    keys = keys.copy()
    keys.columns = [f"k{i}" for i in range(keys.shape[1])]
    keys["__target__"] = target
    return keys.groupby(list(keys.columns), sort=True, dropna=False).ngroup().to_numpy()


def ip_star(x_cf: Any, group_keys: Any, target: Any, X_ref: Any, y_ref: Any, length_scale: float,
            n_sub: int = 100, seed: int | torch.Generator = 2025) -> tuple[torch.Tensor, torch.Tensor]:
    """Grouped IP* (``MMD`` measure, §7.3 and §11.15); returns ``(clamped, raw)`` float64 tensors of shape (n,).

    Rows (counterfactuals, valid or not, all runs pooled) are grouped by ``group_keys`` *and* ``target``;
    ``group_keys`` is a DataFrame/Series or an (n,) / (n, g) array that identifies one evaluation config and the
    explained model plus the factual label — e.g. ``frame[["objective", "lambda_energy", "factual"]]`` for one
    dataset (do not include ``run``: the reference pools all runs). For each group, in sorted key order:
    X' = its counterfactuals, X⁺ = all reference rows whose true label equals the group's target; each side is
    subsampled to at most ``n_sub`` rows without replacement (X' first, then X⁺) with one generator seeded with
    ``seed`` and shared by all groups (the harness uses ``Xoshiro(2025)``; streams differ, the procedure is the
    same); ``raw = mmd2_unbiased(X', X⁺, length_scale)`` and ``clamped = max(raw, 0)`` are written to every row of
    the group (NaN where a side has fewer than 2 rows). ``length_scale``: 5.0 in the harness, 0.5 in the paper
    (``Fidelity.mmd_length_scale``).
    """
    xc = _rows(x_cf)
    dev = xc.device
    t = _labels(target, dev)
    Xr = _rows(X_ref, dev, dtype=None)
    yr = _labels(y_ref, dev)
    gid = _tensor(_group_ids(group_keys, t.cpu().numpy()), dev)
    if gid.numel() != xc.shape[0]:
        raise ValueError(f"group_keys has {gid.numel()} rows, x_cf has {xc.shape[0]}")
    gen = _generator(seed)
    raw = torch.full((xc.shape[0],), math.nan, dtype=torch.float64, device=dev)
    # each class's reference rows indexed once; a group gathers only its ≤ n_sub subsampled rows (in float64), not
    # a float64 copy of the whole class pool per group (issue 21: ≈ 21% of an evaluation job). Same rows, same order.
    members = {}
    order = torch.argsort(gid, stable=True)
    counts = torch.bincount(gid)
    starts = torch.cumsum(counts, 0) - counts
    for g in torch.nonzero(counts).flatten().tolist():
        rows = order[starts[g]:starts[g] + counts[g]]
        c = int(t[rows[0]])
        if c not in members:
            members[c] = torch.nonzero(yr == c).flatten()
        pool_idx = members[c]
        if rows.numel() > n_sub:
            rows_s = rows[torch.randperm(rows.numel(), generator=gen)[:n_sub].to(dev)]
        else:
            rows_s = rows
        if pool_idx.numel() > n_sub:
            pool_idx = pool_idx[torch.randperm(pool_idx.numel(), generator=gen)[:n_sub].to(dev)]
        raw[rows] = mmd2_unbiased(xc[rows_s], Xr[pool_idx].to(torch.float64), length_scale)
    return raw.clamp(min=0.0), raw
