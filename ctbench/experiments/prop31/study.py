"""The Proposition 3.1 check (``ctbench prop31``): runs both arms; :func:`ctbench.cli.study_cmds.write_prop31`
writes the report files:

``prop31_summary.csv`` and ``prop31_violations.csv`` (closed-form arm: default grid, checkpoints, training variants,
broken assumptions), ``prop31_settings.csv`` (one row per arm and setting, checks and negative controls, with both
reference points; what the book's prose and the claims ledger read), ``prop31_trainer_runs.csv`` (the trainer
arm's runs) and the figures ``prop31_paths`` and ``prop31_sensitivity`` (PNG and PDF), each written atomically.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import pandas as pd

from .closed_form import TrainConfig, coefficient_paths
from .grid import run_grid, torch_threads
from .simulation import VIOLATIONS, Setting, check_assumptions, default_grid, violation_grid
from .stats import closed_form_runs, setting_row, summary
from .trainer_arm import TrainerArmConfig, default_settings, run_trainer_arm

CHECKPOINTS = (50, 100, 200)
#: the closed-form arm's negative control: the violation kind where the proviso fails
CLOSED_FORM_CONTROL = "mutable_not_discriminative"


def variants(long_iter: int = 800) -> dict[str, TrainConfig]:
    """Training variants for the sensitivity analysis (each changes one thing from the default)."""
    return {
        "default": TrainConfig(),
        "no_energy_ridge": TrainConfig(lambda_reg=0.0),
        "x_prime_is_factual_T0": TrainConfig(max_iter=0),
        "tau_0.5": TrainConfig(tau=0.5),
        "replace_immature": TrainConfig(replace_immature=True),
        f"steps_{long_iter}": TrainConfig(n_iter=long_iter),
        "fixed_target": TrainConfig(targets="fixed"),
        f"fixed_target_steps_{long_iter}": TrainConfig(targets="fixed", n_iter=long_iter),
    }


def _summary_table(df: pd.DataFrame, variant_rows: pd.DataFrame | None = None) -> pd.DataFrame:
    final = df[df["iteration"] == df["iteration"].max()]
    parts = [summary(final).assign(by="all", group="all")]
    for col in ("n", "gap_imm", "gap_mut"):
        s = summary(final, col)
        parts.append(s.assign(by=col, group=s.pop(col).map(lambda v: f"{v:g}")))
    sig = final["sigma_imm"].map("{:g}".format) + "/" + final["sigma_mut"].map("{:g}".format)
    s = summary(final.assign(sigma=sig), "sigma")
    parts.append(s.assign(by="sigma_imm/sigma_mut", group=s.pop("sigma")))
    s = summary(df, "iteration")
    parts.append(s.assign(by="iteration", group=s.pop("iteration").map(str)))
    if variant_rows is not None:
        parts.append(variant_rows)
    out = pd.concat(parts, ignore_index=True)
    return out[["by", "group"] + [c for c in out.columns if c not in ("by", "group")]]


def settings_table(grid_runs: pd.DataFrame, violation_runs: pd.DataFrame, trainer_runs: pd.DataFrame) -> pd.DataFrame:
    """``prop31_settings.csv``: one row per (arm, setting) with its role (``check`` where the proposition's proviso
    holds, ``negative_control`` where it fails), both reference points (:func:`.stats.setting_row`) and, for the
    negative controls, ``conclusion_fails`` (the share below the unprotected arm is not above chance)."""
    final = grid_runs[grid_runs["iteration"] == grid_runs["iteration"].max()]
    cf = [("default_grid", final, "check"),
          (CLOSED_FORM_CONTROL, violation_runs[violation_runs["kind"] == CLOSED_FORM_CONTROL], "negative_control")]
    rows = []
    for name, runs, role in cf:
        if runs.empty:
            continue
        rows.append({"case": f"closed_form:{name}", "arm": "closed_form", "setting": name, "K": 2, "D": 2,
                     "n": ",".join(str(v) for v in sorted(runs["n"].unique())), "proviso": role == "check",
                     "role": role, "failed": 0, **setting_row(closed_form_runs(runs))})
    for name, runs in trainer_runs.groupby("setting", sort=False):
        ok = runs[~runs["failed"]]
        first = runs.iloc[0]
        rows.append({"case": f"trainer:{name}", "arm": "trainer", "setting": name, "K": int(first["K"]),
                     "D": int(first["D"]), "n": str(int(first["n"])), "proviso": bool(first["proviso"]),
                     "role": first["role"], "epochs": int(first["epochs"]), "lr": float(first["lr"]),
                     "failed": int(runs["failed"].sum()), **setting_row(ok)})
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("holds_vs_u") + 1, "conclusion_fails",
               [(not h) if r == "negative_control" else None for h, r in zip(out["holds_vs_u"], out["role"],
                                                                              strict=True)])
    return out


def jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """One job (the whole check) when a workflow config's ``prop31`` block is enabled; ``quick``: fewer seeds and
    settings."""
    block = config.get("prop31") or {}
    return [{"quick": bool(block.get("quick", False))}] if block.get("enabled", True) else []


def run(job: dict[str, Any]) -> pd.DataFrame:
    """:func:`check` with the job's settings (``quick``, and optionally ``seeds``, ``cfg``, ``trainer_cfg``)."""
    return check(**job)


def check(quick: bool = False, cfg: TrainConfig | None = None, seeds: Sequence[int] | None = None,
          threads: int | None = 1, trainer_cfg: TrainerArmConfig | None = None) -> pd.DataFrame:
    """Run both arms; return ``prop31_summary.csv``'s table, the other tables and the figures' data in its ``attrs``
    (``violations``, ``settings``, ``trainer_runs``, ``paths``, ``final``, ``viol``, ``log``).

    ``prop31_summary.csv``: share lowered with Wilson 95% interval on the default grid, overall (``by = all``), per
    n, gap and σ, per training checkpoint (``by = iteration``) and per training variant on the clean gap grid
    (``by = variant``). ``prop31_violations.csv``: the same per violated assumption (``kind``). ``seeds`` apply to
    both arms (default 20, ``quick`` 5); ``threads``: see :func:`.grid.torch_threads`. ``ctbench prop31``
    (:func:`ctbench.cli.study_cmds.write_prop31`) writes the files and draws the figures.
    """
    with torch_threads(threads):
        tcfg = trainer_cfg or (TrainerArmConfig(epochs=20) if quick else TrainerArmConfig())
        return _check(quick, cfg or TrainConfig(), seeds, tcfg)


def _check(quick: bool, cfg: TrainConfig, seeds: Sequence[int] | None, tcfg: TrainerArmConfig) -> pd.DataFrame:
    seeds = list(seeds) if seeds is not None else list(range(5 if quick else 20))
    t0, c0 = time.perf_counter(), time.process_time()
    df = run_grid(default_grid(quick), seeds, cfg, checkpoints=[c for c in CHECKPOINTS if c < cfg.n_iter])
    viol = run_grid(violation_grid(quick), seeds, cfg)
    clean = [s for s in violation_grid(quick) if s.kind == "clean"]
    vrows = []
    for name, vcfg in variants(200 if quick else 800).items():
        s = summary(run_grid(clean, seeds, vcfg, baseline=False))
        vrows.append(s.assign(by="variant", group=name))
    c1 = time.process_time()
    trainer = run_trainer_arm(default_settings(quick), seeds, tcfg)
    c2 = time.process_time()
    vsum = summary(viol, "kind")
    vsum["kind"] = pd.Categorical(vsum["kind"], list(VIOLATIONS), ordered=True)
    vsum = vsum.sort_values("kind").reset_index(drop=True)
    flags = {k: check_assumptions(next(s for s in violation_grid(quick) if s.kind == k)) for k in VIOLATIONS}
    vsum.insert(1, "broken_assumptions", vsum["kind"].map(
        lambda k: ";".join(a for a, ok in flags[k].items() if not ok) or "none").astype(str))
    table = _summary_table(df, pd.concat(vrows, ignore_index=True))
    rep = Setting.from_gaps(1.0, 1.0, n=200)
    paths = coefficient_paths(rep, seeds[:10], cfg)
    final = df[df["iteration"] == cfg.n_iter]
    log = (f"prop31: closed-form arm {len(final)} runs (default grid) + {len(viol)} (violations) + variants, "
           f"{c1 - c0:.1f} CPU s; trainer arm {len(trainer)} runs x 3 arms, {c2 - c1:.1f} CPU s; total "
           f"{time.process_time() - c0:.1f} CPU s, {time.perf_counter() - t0:.1f} s wall; closed-form config "
           f"{asdict(cfg)}; trainer config {asdict(tcfg)}")
    table.attrs.update(violations=vsum, settings=settings_table(df, viol, trainer), trainer_runs=trainer,
                       paths=paths, final=final, viol=viol, log=log)
    return table
