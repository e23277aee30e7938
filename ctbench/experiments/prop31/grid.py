"""Batched runs of the closed-form arm over (setting, seed): one row per run with every arm's coefficients."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from .closed_form import ARMS, TrainConfig, fit_arms, relative_sensitivity
from .simulation import IMM, MUT, Setting, check_assumptions, simulate


@contextlib.contextmanager
def torch_threads(n: int | None):
    """Temporarily set torch's intra-op threads (``None``: leave them). The tensors here are small (~10⁴–10⁶
    elements per op), where extra threads cost more than they bring, especially on a shared machine."""
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_grid(grid: Iterable[Setting], seeds: Iterable[int], cfg: TrainConfig | None = None,
             checkpoints: Sequence[int] | None = None, baseline: bool = True,
             max_elements: int = 1_000_000, threads: int | None = 1) -> pd.DataFrame:
    """Fit both arms (and the CE-only baseline) for every (setting, seed); one row each with the sensitivities.

    Columns: the setting's parameters, ``seed``, ``iteration``; per arm a ∈ {u: unprotected, p: protected,
    bl: baseline} ``w_imm_a``, ``w_mut_a`` (w = Θ[y⁺] − Θ[y⁻]) and ``rs_a`` = |w_imm| / |w_mut|; ``ratio`` =
    rs_p / rs_u, ``lowered`` = rs_p < rs_u (the proposition's claim), ``lowered_bl`` = rs_p < rs_bl (the
    reference point of practice: protected CT against a conventionally trained model), ``acc_u``, ``acc_p``,
    ``acc_bl`` (training accuracy, final iteration only) and ``assumptions_hold`` (population check of the setting).
    With ``checkpoints`` (multiples of ``cfg.record_every``), one row per (setting, seed, checkpoint) read off the
    paths. All arms of a seed share data, initialisation and random draws. ``threads``: see :func:`torch_threads`.
    ``max_elements`` bounds a chunk of runs fitted as one batch (rows do not interact: the same bits at any size);
    at 1M the paper grid's job peaks at 1.2 GB, at 4M at 2.2 GB, for about 5% more CPU (issue 21).
    """
    with torch_threads(threads):
        return _run_grid(list(grid), [int(s) for s in seeds], cfg or TrainConfig(), checkpoints, baseline,
                         max_elements)


def _run_grid(grid: list[Setting], seeds: list[int], cfg: TrainConfig, checkpoints: Sequence[int] | None,
              baseline: bool, max_elements: int) -> pd.DataFrame:
    at = sorted(set(checkpoints or []) | {cfg.n_iter})
    arms = ARMS if baseline else ARMS[:2]
    jobs = [(i, s, seed) for i, s in enumerate(grid) for seed in seeds]
    rows: list[dict] = []
    for n in sorted({s.n for s in grid}):
        group = [j for j in jobs if j[1].n == n]
        chunk = max(1, max_elements // (len(arms) * 2 * n * 2))
        for start in range(0, len(group), chunk):
            part = group[start:start + chunk]
            datas = [simulate(s, seed) for _, s, seed in part]
            outs = fit_arms(datas, cfg, arms)
            iters = outs[0]["iters"].tolist()
            missing = [a for a in at if a not in iters]
            if missing:
                raise ValueError(f"run_grid: checkpoints {missing} were not recorded (record_every="
                                 f"{cfg.record_every}, n_iter={cfg.n_iter})")
            path = [o["path"].numpy() for o in outs]
            acc = [o["accuracy"].numpy() for o in outs]
            for k, (i, s, seed) in enumerate(part):
                base = {"setting_id": i, **s.row(), "seed": seed,
                        "assumptions_hold": all(check_assumptions(s).values())}
                for step in at:
                    r = iters.index(step)
                    row = {**base, "iteration": step}
                    for j, arm in enumerate(arms):
                        w = path[j][k, r]
                        row |= {f"w_imm_{arm}": w[IMM], f"w_mut_{arm}": w[MUT],
                                f"rs_{arm}": float(relative_sensitivity(w))}
                    row["ratio"] = row["rs_p"] / row["rs_u"] if row["rs_u"] > 0 else np.nan
                    row["lowered"] = bool(row["rs_p"] < row["rs_u"])
                    if "bl" in arms:
                        row["lowered_bl"] = bool(row["rs_p"] < row["rs_bl"])
                    for j, arm in enumerate(arms):
                        row[f"acc_{arm}"] = float(acc[j][k]) if step == cfg.n_iter else np.nan
                    rows.append(row)
    df = pd.DataFrame(rows)
    return df.sort_values(["iteration", "setting_id", "seed"], kind="stable").reset_index(drop=True)

