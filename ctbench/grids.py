"""The appendix grid searches (Notes 3–8) and the tuning stage (Notes 9–12) as library code.

Reference: ``ct_reference.md`` §8.1 (Note 1 defaults), §8.2 (the grids), §7.1 last bullet (grid evaluations), §1.9
(share of mature counterfactuals per epoch).

* :data:`GRIDS` — what each Note varies; everything else is the Note 1 default (:data:`NOTE1`), the batch size is the
  dataset's (``paper_settings.FINAL``). Values can be replaced from a config dict (smaller grids for quick/smoke).
* :func:`grid_points` — the CT points (objective ``full``) of a grid, each with a readable, filesystem-safe id
  (``tau0.75_egy5_T25_ecco``) usable as a Snakemake wildcard.
* :func:`baseline_key` — the vanilla (BL) model does not depend on generator or penalty parameters, so it is trained
  **once** per (dataset, seed, key) and shared by every point; the key holds only the parameters that matter to BL
  (``epochs`` in ``training_params``; nothing elsewhere → ``"bl"``). The reference retrains BL in every cell
  (§11.9); with a shared BL every point of a grid is compared with the same baseline.
* :func:`point_config` / :func:`baseline_config` — ``ctbench train`` configs (built with
  ``paper_settings.model_config``).
* :func:`run_chunk` — trains the CT models of a chunk of points (one process), evaluates each with the shared BL
  under the grid protocol (:data:`GRID_EVAL`: training data = train+val, τ 0.95, T 50, 100 individuals, 5 runs,
  λ_egy ∈ {0.1, 0.5, 1, 5, 10}, test-time ECCo with λ_cst 0) and writes one row per (point, test-time λ_egy) plus a
  long per-epoch CSV of the share of mature CEs.
* :func:`select_best` / :func:`write_best` — the tuning stage's choice of (τ, λ_reg) per dataset (rule below).
* :func:`add_cli` — ``ctbench grid points | baseline | run | figures`` and ``ctbench tune select``.

CE step size of ``tune_lr`` (Note 11): the reference builds the search optimiser without arguments, so the grid's
learning rate was never used and every point searched with η = 0.1 (§1.7, §11.1). Here the grid value is applied
only when ``apply_step_size`` says so; by default (``None``) that is the case in the ``paper`` fidelity mode, and in
``reference`` mode the step stays the fidelity's ``ce_step_size`` (0.1 unless a fidelity override changes it). Every
row records the nominal ``step_size`` and the ``step_size_effective``.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import ConfigError
from .paper_settings import SYNTHETIC, model_config

#: grid parameter → (dotted key of the ``ctbench train`` config, label in point ids; "" = the value itself)
PARAMS: dict[str, tuple[str, str]] = {
    "generator": ("generator.type", ""),
    "tau": ("convergence.tau", "tau"),
    "lambda_energy": ("generator.lambda_energy", "egy"),  # training-time energy penalty of ECCo
    "max_iter": ("convergence.max_iter", "T"),
    "lambda_cost": ("generator.lambda_cost", "cst"),
    "lambda_clf": ("objective.lambda_clf", "clf"),
    "lambda_adv": ("objective.lambda_adv", "adv"),
    "lambda_div": ("objective.lambda_div", "div"),
    "lambda_reg": ("objective.lambda_reg", "reg"),
    "burnin": ("training.burnin", "burnin"),
    "nce": ("training.nce", "nce"),
    "epochs": ("training.epochs", "ep"),
    "step_size": ("generator.step_size", "lr"),  # CE search step ("learning rate"); see the module docstring
}

#: appendix Note 1 (``TrainingParams``/``GeneratorParams`` defaults, reference §8.1). ``step_size`` None = the
#: fidelity's ``ce_step_size``: Note 1 lists 0.25, which the reference code never used (0.1, §1.7) and which is
#: exactly the ``paper`` mode's value; only ``tune_lr`` (or ``{"fixed": {"step_size": x}}``) sets a step.
NOTE1: dict[str, Any] = {
    "generator": "ecco", "tau": 0.75, "lambda_energy": 5.0, "max_iter": 30, "lambda_cost": 0.001,
    "lambda_clf": 1.0, "lambda_adv": 0.25, "lambda_div": 0.5, "lambda_reg": 0.1,
    "burnin": 0.0, "nce": 1000, "epochs": 100, "step_size": None,
}

ALL_DATASETS = ("lin_sep", "circles", "moons", "over", "adult", "california_housing", "credit_default", "gmsc",
                "mnist")
GENERATORS = ("ecco", "generic", "revise")

#: the grids of appendix Notes 3, 5, 7, 9, 11 (evaluation settings: Notes 4, 6, 8, 10, 12 = :data:`GRID_EVAL`)
GRIDS: dict[str, dict[str, Any]] = {
    "gen_params": {
        "note": 3, "title": "Generator parameters", "datasets": SYNTHETIC,
        "params": {"tau": (0.75, 0.9, 0.95), "lambda_energy": (0.1, 0.5, 5.0, 10.0, 20.0), "max_iter": (5, 25, 50),
                   "generator": GENERATORS},
        "fixed": {}, "baseline": (),
    },
    "penalties": {
        "note": 5, "title": "Penalty strengths", "datasets": SYNTHETIC,
        "params": {"lambda_adv": (0.1, 0.25, 1.0), "lambda_div": (0.01, 0.1, 1.0),
                   "lambda_reg": (0.0, 0.01, 0.1, 0.25, 0.5), "generator": GENERATORS},
        "fixed": {}, "baseline": (),
    },
    "training_params": {
        "note": 7, "title": "Other training parameters", "datasets": SYNTHETIC,
        "params": {"burnin": (0.0, 0.5), "nce": (100, 1000), "epochs": (50, 100), "generator": GENERATORS},
        "fixed": {}, "baseline": ("epochs",),
    },
    "tune": {
        "note": 9, "title": "Key-parameter tuning", "datasets": ALL_DATASETS,
        "params": {"tau": (0.5, 0.75, 0.9), "lambda_reg": (0.1, 0.25, 0.5)},
        "fixed": {"generator": "ecco", "nce": 1000}, "baseline": (),
    },
    "tune_lr": {
        "note": 11, "title": "Learning rate (CE step size) tuning", "datasets": ALL_DATASETS,
        "params": {"step_size": (0.1, 0.5, 1.0), "lambda_reg": (0.01, 0.1, 0.5)},
        "fixed": {"generator": "ecco", "tau": 0.5, "nce": 1000}, "baseline": (),
    },
}

#: keys of a grid's config block that are not grid parameters (read by the workflow, ignored here)
META_KEYS = {"datasets", "seeds", "chunk_size", "eval", "fixed", "enabled", "note", "title"}

#: the grid evaluation protocol (Note 2 ``CounterfactualParams`` defaults + §7.1 last bullet)
GRID_EVAL: dict[str, Any] = {
    "lambdas": (0.1, 0.5, 1.0, 5.0, 10.0), "n_individuals": 100, "n_runs": 5, "tau": 0.95, "max_iter": 50,
    "lambda_cost": 0.0, "split": "train", "seed": 0,
}

_SAFE = re.compile(r"^[A-Za-z0-9._-]+$")


# -- grid definitions ------------------------------------------------------------------------------------------------
def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return f"{float(v):g}"
    return str(v)


def _norm_value(name: str, v: Any, where: str = "") -> Any:
    """A grid value checked by the rule of the config setting it sets (:data:`ctbench.checks.RULES`: type and
    range, e.g. τ in (0, 1]), so a bad grid value fails when the grid is defined, not inside a job."""
    from .checks import check_value

    where = where or f"grid parameter {name}"
    if v is None and name == "step_size":
        return None
    if name == "generator":
        v = str(v).lower()
        if v not in GENERATORS:
            raise ConfigError(f"{where}: {v!r} is not one of {GENERATORS}")
        return v
    key = PARAMS[name][0]
    try:
        return check_value(key, v)
    except ConfigError as err:
        msg = str(err).removeprefix(f"{key}: ")
        raise ConfigError(f"{where}: {msg} (the grid value sets {key})") from None


def grid_definition(name: str, overrides: dict[str, Any] | None = None, where: str = "") -> dict[str, Any]:
    """The grid ``name`` with values replaced from ``overrides``.

    ``overrides`` is the grid's config block: ``{param: [values]}`` replaces the values of a varied parameter,
    ``{"fixed": {param: value}}`` changes a non-varied setting (e.g. ``{"fixed": {"epochs": 5}}``); the keys of
    :data:`META_KEYS` (``datasets``, ``seeds``, ``chunk_size``, ``eval``, …) are the workflow's and are ignored.
    Unknown keys and bad values raise ``ValueError`` naming ``where`` (default ``grids.<name>``) and the key.
    """
    if name not in GRIDS:
        raise ValueError(f"grid: unknown name {name!r}; choose one of {sorted(GRIDS)}")
    where = where or f"grids.{name}"
    g = copy.deepcopy(GRIDS[name])
    g["name"] = name
    params = {k: tuple(_norm_value(k, v) for v in vals) for k, vals in g["params"].items()}
    fixed = {k: _norm_value(k, v) if k in PARAMS else v for k, v in g["fixed"].items()}
    for key, value in (overrides or {}).items():
        if key == "fixed":
            for k, v in dict(value or {}).items():
                if k not in PARAMS:
                    raise ValueError(f"{where}.fixed.{k}: unknown parameter; known: {sorted(PARAMS)}")
                if k in params:
                    raise ValueError(f"{where}.fixed.{k}: {k} is varied in this grid; give it as a list")
                fixed[k] = _norm_value(k, v, f"{where}.fixed.{k}")
        elif key in META_KEYS:
            continue
        elif key in params:
            vals = value if isinstance(value, (list, tuple)) else [value]
            if not vals:
                raise ValueError(f"{where}.{key}: empty list of values")
            params[key] = tuple(dict.fromkeys(_norm_value(key, v, f"{where}.{key}") for v in vals))
        else:
            raise ValueError(f"{where}.{key}: not a parameter of this grid (varied: {sorted(params)}; "
                             f"set other parameters under 'fixed', workflow keys: {sorted(META_KEYS)})")
    g["params"], g["fixed"] = params, fixed
    return g


def grid_size(name: str, overrides: dict[str, Any] | None = None, *, both_objectives: bool = False) -> int:
    """Number of CT points (``both_objectives=True``: ×2, the Note's count of CT + vanilla models)."""
    g = grid_definition(name, overrides)
    n = math.prod(len(v) for v in g["params"].values())
    return 2 * n if both_objectives else n


def _point_id(params: dict[str, Any]) -> str:
    parts = []
    for k, v in params.items():
        label = PARAMS[k][1]
        parts.append(f"{label}{_fmt(v)}")
    pid = "_".join(parts)
    if not _SAFE.match(pid):
        raise ValueError(f"grid point id {pid!r} is not filesystem-safe")
    return pid


def grid_points(name: str, overrides: dict[str, Any] | None = None, where: str = "") -> list[dict[str, Any]]:
    """The CT points of grid ``name``: dicts ``{"grid", "id", "params" (varied), "settings" (all)}``.

    ``settings`` = Note 1 defaults ⊕ the grid's fixed values ⊕ the point's values (JSON-serialisable), so a point
    alone is enough to build its config. Ids follow the grid's parameter order, e.g. ``tau0.75_egy5_T25_ecco``.
    """
    g = grid_definition(name, overrides, where)
    keys = list(g["params"])
    points = []
    for combo in itertools.product(*(g["params"][k] for k in keys)):
        params = dict(zip(keys, combo, strict=True))
        settings = {**NOTE1, **g["fixed"], **params}
        points.append({"grid": name, "id": _point_id(params), "params": params, "settings": settings})
    ids = [p["id"] for p in points]
    if len(set(ids)) != len(ids):
        raise ValueError(f"grid {name}: point ids are not unique")
    return points


def find_points(name: str, ids: Iterable[str], overrides: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Points of grid ``name`` by id (in the order given); an unknown id raises ``ValueError``."""
    by_id = {p["id"]: p for p in grid_points(name, overrides)}
    out = []
    for i in ids:
        if i not in by_id:
            raise ValueError(f"grid {name}: no point {i!r} (with these overrides); e.g. {sorted(by_id)[:3]}")
        out.append(by_id[i])
    return out


def baseline_key(name: str, point: dict[str, Any]) -> str:
    """Key of the vanilla model shared by ``point``: ``"bl"`` plus the BL-relevant parameters (``bl_ep50``).

    The trained file lives under (dataset, seed, key); points with equal keys share one BL model.
    """
    relevant = GRIDS[name]["baseline"]
    s = point["settings"]
    return "_".join(["bl"] + [f"{PARAMS[k][1]}{_fmt(s[k])}" for k in relevant])


def baseline_keys(name: str, overrides: dict[str, Any] | None = None) -> list[str]:
    """The distinct BL keys of a grid (in order of first appearance)."""
    return list(dict.fromkeys(baseline_key(name, p) for p in grid_points(name, overrides)))


def chunks(points: Sequence[Any], size: int) -> list[list[Any]]:
    """Consecutive chunks of at most ``size`` points (``size`` ≤ 0: one chunk)."""
    points = list(points)
    if size <= 0 or size >= len(points):
        return [points] if points else []
    return [points[i:i + size] for i in range(0, len(points), size)]


# -- configs ---------------------------------------------------------------------------------------------------------
def _step_applied(apply_step_size: bool | None, fidelity: str, fidelity_overrides: dict[str, Any] | None) -> bool:
    if apply_step_size is not None:
        return bool(apply_step_size)
    from .fidelity import resolve_fidelity

    return resolve_fidelity(fidelity, fidelity_overrides).mode == "paper"


def _dotted_settings(settings: dict[str, Any], *, step_applied: bool) -> dict[str, Any]:
    out = {}
    for k, v in settings.items():
        if k not in PARAMS:
            continue
        if k == "step_size" and (v is None or not step_applied):
            continue  # generator.step_size stays null → the fidelity's ce_step_size
        out[PARAMS[k][0]] = v
    return out


def point_config(name: str, point: dict[str, Any], dataset: str, seed: int = 0, fidelity: str = "reference",
                 epochs_override: int | None = None, *, objective: str = "full",
                 fidelity_overrides: dict[str, Any] | None = None, data_params: dict[str, Any] | None = None,
                 overrides: dict[str, Any] | None = None, apply_step_size: bool | None = None, threads: int = 1,
                 device: str = "cpu") -> dict[str, Any]:
    """The ``ctbench train`` config of one grid point (CT, or another ``objective``).

    ``epochs_override`` replaces the epochs unless the grid varies them (``training_params``: the point's value
    wins; shrink that grid through its overrides instead). ``overrides`` are extra dotted keys applied last
    (e.g. ``{"vae.epochs": 5}`` for a quick REVISE). ``apply_step_size``: see the module docstring.
    """
    if isinstance(point, str):
        raise TypeError("point_config: pass a point dict (see grid_points / find_points), not an id")
    varied = set(point.get("params", {}))
    settings = dict(point["settings"])
    if epochs_override is not None and "epochs" not in varied:
        settings["epochs"] = int(epochs_override)
    step_applied = _step_applied(apply_step_size, fidelity, fidelity_overrides)
    dotted = _dotted_settings(settings, step_applied=step_applied)
    dotted.update(overrides or {})
    return model_config(dataset, "single", objective, seed, fidelity=fidelity, fidelity_overrides=fidelity_overrides,
                        data_params=data_params, threads=threads, device=device, overrides=dotted)


def baseline_config(name: str, key_or_point: str | dict[str, Any], dataset: str, seed: int = 0,
                    fidelity: str = "reference", epochs_override: int | None = None, *,
                    grid_overrides: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """The vanilla config for a BL key (or the BL of a point): Note 1 defaults plus only the BL-relevant values.

    The generator is always ECCo here (vanilla training never searches, so no VAE is trained for REVISE points).
    """
    if isinstance(key_or_point, str):
        pts = [p for p in grid_points(name, grid_overrides) if baseline_key(name, p) == key_or_point]
        if not pts:
            raise ValueError(f"grid {name}: no point has baseline key {key_or_point!r}; "
                             f"keys: {baseline_keys(name, grid_overrides)}")
        point = pts[0]
    else:
        point = key_or_point
    relevant = GRIDS[name]["baseline"]
    settings = {**NOTE1, **{k: point["settings"][k] for k in relevant}}
    bl_point = {"grid": name, "id": baseline_key(name, point), "params": {k: settings[k] for k in relevant},
                "settings": settings}
    return point_config(name, bl_point, dataset, seed, fidelity, epochs_override, objective="vanilla", **kw)


def _effective_step(cfg: dict[str, Any], fid) -> float:
    s = cfg["generator"].get("step_size")
    return float(s) if s is not None else float(fid.ce_step_size)


# -- running a chunk -------------------------------------------------------------------------------------------------
def grid_protocol(eval_overrides: dict[str, Any] | None = None):
    """The grid :class:`~ctbench.evaluation.protocol.EvalProtocol` with ``eval_overrides`` applied."""
    from .evaluation.protocol import EvalProtocol, check_protocol_overrides

    spec = check_protocol_overrides({**GRID_EVAL, **(eval_overrides or {})}, "grid evaluation")
    return EvalProtocol(**spec)


def epochs_path(out_csv: str | Path) -> Path:
    """``chunk.csv`` → ``chunk.epochs.csv`` (the per-epoch long table of :func:`run_chunk`)."""
    p = Path(out_csv)
    return p.with_name(p.name[:-4] + ".epochs.csv") if p.name.endswith(".csv") else p.with_name(p.name + ".epochs.csv")


def _pct_change(ct: float, bl: float) -> float:
    if not (np.isfinite(ct) and np.isfinite(bl)) or bl == 0:
        return float("nan")
    return 100.0 * (ct - bl) / bl


def _per_run_change(d: pd.DataFrame, metric: str) -> float:
    """100·(mean_r ρ_r − 1), ρ_r = valid-only mean of CT / of BL in run r (the paper's per-run ratio recipe)."""
    v = d[d["valid"].astype(bool)]
    m = v.groupby(["run", "model"])[metric].mean().unstack("model")
    if "CT" not in m or "BL" not in m:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = (m["CT"] / m["BL"]).to_numpy(dtype=float)
    rho = rho[np.isfinite(rho)]
    return 100.0 * (rho.mean() - 1.0) if rho.size else float("nan")


#: columns of a chunk CSV, in order (the parameter columns are the config values that actually ran)
SUMMARY_COLUMNS = [
    "grid", "dataset", "seed", "fidelity", "point", "baseline_key",
    "generator", "tau", "lambda_energy", "max_iter", "lambda_cost", "lambda_adv", "lambda_div", "lambda_reg",
    "burnin", "nce", "epochs", "batch_size", "step_size", "step_size_effective",
    "lambda_energy_eval", "n_ct", "n_bl", "validity_ct", "validity_bl",
    "ip_ct", "ip_bl", "ip_change_pct", "ip_change_runs_pct",
    "cost_ct", "cost_bl", "cost_change_pct", "cost_change_runs_pct",
    "acc_test_ct", "acc_test_bl", "f1_test_ct", "f1_test_bl", "train_seconds", "eval_seconds", "share_mature_last",
    "mean_steps_last",
    "error",
]
EPOCH_COLUMNS = ["grid", "dataset", "seed", "point", "epoch", "share_mature", "mean_steps", "loss", "acc_train",
                 "acc_val", "seconds"]


def summarise_point(ev: pd.DataFrame, base: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per test-time λ_egy from the per-CE frame ``ev`` (models ``CT`` and ``BL``).

    ``ip_*``/``cost_*`` = mean over the *valid* CEs pooled over runs; ``*_change_pct`` = 100·(CT − BL)/BL of those
    means (negative = CT lower, i.e. more plausible / cheaper); ``*_change_runs_pct`` = the per-run-ratio version.
    """
    rows = []
    for lam, d in ev.groupby("lambda_energy", sort=True):
        row = dict(base, lambda_energy_eval=float(lam))
        for m, tag in (("CT", "ct"), ("BL", "bl")):
            dm = d[d["model"] == m]
            valid = dm["valid"].astype(bool)
            row[f"n_{tag}"] = int(len(dm))
            row[f"validity_{tag}"] = float(valid.mean()) if len(dm) else float("nan")
            for metric in ("ip", "cost"):
                row[f"{metric}_{tag}"] = float(dm.loc[valid, metric].mean()) if valid.any() else float("nan")
        for metric in ("ip", "cost"):
            row[f"{metric}_change_pct"] = _pct_change(row[f"{metric}_ct"], row[f"{metric}_bl"])
            row[f"{metric}_change_runs_pct"] = _per_run_change(d, metric)
        rows.append(row)
    return rows


def run_chunk(name: str, dataset: str, points: Sequence[dict[str, Any] | str], baseline_model_path: str | Path,
              out_csv: str | Path, eval_overrides: dict[str, Any] | None = None, seed: int = 0, *,
              fidelity: str = "reference", fidelity_overrides: dict[str, Any] | None = None,
              data_params: dict[str, Any] | None = None, epochs_override: int | None = None,
              config_overrides: dict[str, Any] | None = None, grid_overrides: dict[str, Any] | None = None,
              apply_step_size: bool | None = None, threads: int = 1, device: str = "cpu",
              save_models_dir: str | Path | None = None, progress: bool = False) -> pd.DataFrame:
    """Train and evaluate a chunk of grid points against the shared BL model; write the chunk's CSVs.

    All points of the chunk train at once as populations (one torch thread by default); then BL is evaluated once
    with :func:`grid_protocol` on the training data (train+val) and each CT model alone with the same protocol and
    seed (common random numbers: every model of a grid, BL included, gets the same draws of label pairs and
    individuals), and :func:`summarise_point` compares the two. BL's numbers are identical in every row of a grid
    (the denominator of every % change). A point whose training diverged gets a row with its ``error``. Writes
    ``out_csv`` (:data:`SUMMARY_COLUMNS`), :func:`epochs_path` (:data:`EPOCH_COLUMNS`) and ``out_csv + ".json"``
    (provenance), all atomically; returns the summary frame. ``save_models_dir``: also save each CT model as
    ``<dir>/<point>.pt``.
    """
    import torch

    from .api import FailedTraining, load_model, train_population_from_configs
    from .data import load_dataset
    from .evaluation.protocol import evaluate_counterfactuals
    from .evaluation.robustness import macro_f1
    from .fidelity import resolve_fidelity
    from .io import atomic_write_json, atomic_write_text, provenance

    t_start = time.perf_counter()
    torch.set_num_threads(int(threads))
    pts = [p for p in points if not isinstance(p, str)]
    ids = [p for p in points if isinstance(p, str)]
    if ids:
        pts += find_points(name, ids, grid_overrides)
    if not pts:
        raise ValueError("run_chunk: no points")
    fid = resolve_fidelity(fidelity, fidelity_overrides)
    protocol = grid_protocol(eval_overrides)  # settings first, then the files
    bl = load_model(baseline_model_path, device=device)
    if bl.config["data"]["name"] != dataset:
        raise ValueError(f"baseline {baseline_model_path} was trained on {bl.config['data']['name']!r}, "
                         f"not {dataset!r}")
    if bl.fidelity.to_dict() != fid.to_dict():
        raise ValueError(f"baseline {baseline_model_path}: fidelity {bl.fidelity.mode!r} / switches differ from the "
                         f"requested {fid.mode!r}")
    bl_objective = bl.meta.get("objective_effective", {}).get("name", bl.config["objective"]["name"])
    if bl_objective != "vanilla":
        raise ValueError(f"baseline {baseline_model_path} has objective {bl_objective!r}, expected 'vanilla'")
    data = load_dataset(dataset, fidelity=fid, **(data_params or {}))
    X_eval = np.vstack([data.X_train, data.X_val])
    y_eval = np.concatenate([data.y_train, data.y_val])
    rows, epoch_frames, configs, seconds, failures = [], [], {}, {}, {}
    for point in pts:
        configs[point["id"]] = point_config(
            name, point, dataset, seed, fidelity, epochs_override, fidelity_overrides=fidelity_overrides,
            data_params=data_params, overrides=config_overrides, apply_step_size=apply_step_size, threads=threads,
            device=device)
    # all points of the chunk train at once, as populations (one tensor program per shareable group)
    trained = train_population_from_configs(configs, data=data, progress=progress)
    eval_kw = dict(n_classes=data.n_classes, categorical_groups=data.categorical_groups, dataset=dataset)
    ev_bl = evaluate_counterfactuals({"BL": bl}, X_eval, y_eval, protocol, fid, **eval_kw)
    f1_bl = macro_f1(bl.model, data.X_test, data.y_test, n_classes=data.n_classes)  # appendix Tables 4-6
    iterator: Iterable = pts
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(pts, desc=f"{name} {dataset} evaluation", unit="point")
    for point in iterator:
        ct = trained[point["id"]]
        if not isinstance(ct, FailedTraining) and ct.failure and save_models_dir is not None:
            ct.save(Path(save_models_dir) / f"{point['id']}.pt")  # kept for inspection, marked failed
        if isinstance(ct, FailedTraining) or ct.failure:  # its own row and the sidecar say why; the others go on
            ct = FailedTraining(point["id"], ct.config, ct.error if isinstance(ct, FailedTraining) else ct.failure,
                                ct.log)
            failures[point["id"]] = ct.error
            warnings.warn(f"grid {name} {dataset}: point {point['id']} not evaluated: {ct.error}", RuntimeWarning,
                          stacklevel=2)
            rows.append({"grid": name, "dataset": dataset, "seed": int(seed), "fidelity": fid.mode,
                         "point": point["id"], "baseline_key": baseline_key(name, point), "error": ct.error})
            continue
        if save_models_dir is not None:
            ct.save(Path(save_models_dir) / f"{point['id']}.pt")
        t0 = time.perf_counter()
        ev = pd.concat([ev_bl, evaluate_counterfactuals({"CT": ct}, X_eval, y_eval, protocol, fid, **eval_kw)],
                       ignore_index=True)
        eval_seconds = time.perf_counter() - t0
        c = ct.config
        log = ct.log
        last = log.iloc[-1]
        base = {
            "grid": name, "dataset": dataset, "seed": int(seed), "fidelity": fid.mode, "point": point["id"],
            "baseline_key": baseline_key(name, point), "generator": c["generator"]["type"],
            "tau": c["convergence"]["tau"], "lambda_energy": c["generator"].get("lambda_energy"),
            "max_iter": c["convergence"]["max_iter"], "lambda_cost": c["generator"].get("lambda_cost"),
            "lambda_adv": ct.meta["objective_effective"].get("lambda_adv"),
            "lambda_div": ct.meta["objective_effective"].get("lambda_div"),
            "lambda_reg": ct.meta["objective_effective"].get("lambda_reg"),
            "burnin": c["training"]["burnin"], "nce": c["training"]["nce"], "epochs": c["training"]["epochs"],
            "batch_size": c["training"]["batch_size"], "step_size": point["settings"].get("step_size"),
            "step_size_effective": _effective_step(c, fid),
            "acc_test_ct": ct.meta.get("acc_test"), "acc_test_bl": bl.meta.get("acc_test"),
            "f1_test_ct": macro_f1(ct.model, data.X_test, data.y_test, n_classes=data.n_classes), "f1_test_bl": f1_bl,
            "train_seconds": ct.meta.get("train_seconds"), "eval_seconds": eval_seconds,
            "share_mature_last": float(last.get("share_mature", np.nan)),
            "mean_steps_last": float(last.get("mean_steps", np.nan)),
        }
        rows += summarise_point(ev, base)
        ep = log.reindex(columns=["epoch", "share_mature", "mean_steps", "loss", "acc_train", "acc_val", "seconds"])
        epoch_frames.append(ep.assign(grid=name, dataset=dataset, seed=int(seed), point=point["id"]))
        seconds[point["id"]] = {"train": ct.meta.get("train_seconds"), "eval": eval_seconds}
    summary = pd.DataFrame(rows).reindex(columns=SUMMARY_COLUMNS)
    epochs = (pd.concat(epoch_frames, ignore_index=True) if epoch_frames else pd.DataFrame()).reindex(
        columns=EPOCH_COLUMNS)
    out_csv = Path(out_csv)
    atomic_write_text(epochs_path(out_csv), epochs.to_csv(index=False))
    sidecar = {
        "kind": "grid_chunk", "grid": name, "note": GRIDS[name]["note"], "dataset": dataset, "seed": int(seed),
        "points": [p["id"] for p in pts], "point_settings": {p["id"]: p["settings"] for p in pts},
        "grid_overrides": grid_overrides or {}, "configs": configs, "protocol": protocol.to_dict(),
        "fidelity": fid.to_dict(), "step_size_applied": _step_applied(apply_step_size, fidelity, fidelity_overrides),
        "baseline": {"path": str(baseline_model_path), "config": bl.config, "acc_test": bl.meta.get("acc_test"),
                     "provenance": bl.meta.get("provenance")},
        "seconds": seconds, "failures": failures, "wall_seconds": time.perf_counter() - t_start,
        "epochs_csv": epochs_path(out_csv).name,
        "provenance": provenance(),
    }
    atomic_write_json(out_csv.with_name(out_csv.name + ".json"), sidecar)
    atomic_write_text(out_csv, summary.to_csv(index=False))  # last: its presence means the chunk is complete
    return summary


def read_chunks(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Concatenate chunk CSVs (summary rows)."""
    frames = [pd.read_csv(p) for p in paths]
    if not frames:
        raise ValueError("no chunk CSVs given")
    return pd.concat(frames, ignore_index=True)


# -- tuning: selection -----------------------------------------------------------------------------------------------
SELECTION_RULE = (
    "Per (tau, lambda_reg), average over all rows of the dataset (test-time lambda_energy, seeds and, in tune_lr, "
    "step sizes): ip_change_pct, cost_change_pct, acc_test_ct, acc_test_bl. Eligible: mean CT test accuracy >= mean "
    "BL test accuracy - max_acc_drop (1 pp by default). Choose the eligible pair with the largest IP reduction "
    "(lowest ip_change_pct); ties -> lower cost_change_pct, then higher CT accuracy, then smaller lambda_reg and tau. "
    "If no pair is eligible: the pair with the highest CT test accuracy (ties -> lowest ip_change_pct)."
)


def select_best(tune_csvs: Iterable[str | Path] | pd.DataFrame, dataset: str, *, max_acc_drop: float = 0.01,
                grids: Sequence[str] = ("tune", "tune_lr")) -> dict[str, Any]:
    """Choose (τ, λ_reg) for ``dataset`` from tuning chunk CSVs by :data:`SELECTION_RULE`.

    Returns ``{"dataset", "best": {"tau", "lambda_reg"}, "eligible", "rule", "max_acc_drop", "grids",
    "candidates": [...]}``; ``best`` is what ``paper_settings.final_hyperparameters(dataset, best)`` takes.
    """
    df = tune_csvs.copy() if isinstance(tune_csvs, pd.DataFrame) else read_chunks(tune_csvs)
    df = df[(df["dataset"] == dataset) & df["grid"].isin(list(grids))]
    if df.empty:
        raise ValueError(f"select_best: no rows for dataset {dataset!r} in grids {list(grids)}")
    agg = (df.groupby(["tau", "lambda_reg"])
           .agg(ip_change_pct=("ip_change_pct", "mean"), cost_change_pct=("cost_change_pct", "mean"),
                acc_test_ct=("acc_test_ct", "mean"), acc_test_bl=("acc_test_bl", "mean"),
                validity_ct=("validity_ct", "mean"), n_rows=("point", "size"))
           .reset_index())
    agg["acc_drop"] = agg["acc_test_bl"] - agg["acc_test_ct"]
    agg["eligible"] = (agg["acc_drop"] <= max_acc_drop + 1e-12) & np.isfinite(agg["ip_change_pct"])
    cand = agg[agg["eligible"]]
    if len(cand):
        chosen = cand.sort_values(["ip_change_pct", "cost_change_pct", "acc_test_ct", "lambda_reg", "tau"],
                                  ascending=[True, True, False, True, True], na_position="last").iloc[0]
        eligible = True
    else:
        chosen = agg.sort_values(["acc_test_ct", "ip_change_pct", "lambda_reg", "tau"],
                                 ascending=[False, True, True, True], na_position="last").iloc[0]
        eligible = False
    return {
        "dataset": dataset, "best": {"tau": float(chosen["tau"]), "lambda_reg": float(chosen["lambda_reg"])},
        "eligible": eligible, "rule": SELECTION_RULE, "max_acc_drop": max_acc_drop, "grids": list(grids),
        "candidates": json.loads(agg.to_json(orient="records")),
    }


def write_best(tune_csvs: Iterable[str | Path], dataset: str, out_json: str | Path, **kw: Any) -> dict[str, Any]:
    """Write ``out_json`` = ``{"tau", "lambda_reg"}`` (the final stage's input) and ``out_json + ".json"`` with the
    rule, the candidate table, the inputs and provenance. Returns the selection."""
    from .io import atomic_write_json, provenance

    paths = [str(p) for p in tune_csvs]
    sel = select_best(paths, dataset, **kw)
    out_json = Path(out_json)
    atomic_write_json(out_json.with_name(out_json.name + ".json"),
                      {**sel, "inputs": paths, "provenance": provenance()})
    atomic_write_json(out_json, sel["best"])
    return sel


# -- CLI -------------------------------------------------------------------------------------------------------------
def _json_arg(text: str | None, what: str) -> dict[str, Any]:
    if not text:
        return {}
    p = Path(text)
    raw = p.read_text() if not text.lstrip().startswith("{") and p.is_file() else text
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{what}: not valid JSON ({err}): {text[:80]!r} (give a JSON object or a JSON file)") \
            from None
    if not isinstance(value, dict):
        raise ConfigError(f"{what}: expected a JSON object, got {text[:80]!r}")
    return value


def _sets(items: list[str] | None) -> dict[str, Any]:
    """``--set key=value`` overrides, typed by the one YAML 1.2 parser of ``ctbench train --set`` (1e-3 is a
    float)."""
    from .yaml12 import split_assignment

    return dict(split_assignment(kv, "--set", "vae.epochs=5") for kv in items or [])


def _apply_flag(value: str) -> bool | None:
    return {"auto": None, "yes": True, "no": False}[value]


def _cmd_points(args) -> int:
    ov = _json_arg(args.overrides, "--overrides")
    pts = grid_points(args.grid, ov)
    if args.ids_only:
        print(json.dumps([p["id"] for p in pts]))
        return 0
    out = {"grid": args.grid, "note": GRIDS[args.grid]["note"], "n_points": len(pts),
           "n_models": 2 * len(pts), "baseline_keys": baseline_keys(args.grid, ov),
           "points": [{"id": p["id"], "params": p["params"], "baseline_key": baseline_key(args.grid, p)}
                      for p in pts]}
    if args.chunk_size:
        out["chunks"] = [[p["id"] for p in c] for c in chunks(pts, args.chunk_size)]
    print(json.dumps(out, indent=None if args.compact else 2))
    return 0


def _common_train_kw(args) -> dict[str, Any]:
    return {"fidelity_overrides": _json_arg(args.fidelity_overrides, "--fidelity-overrides") or None,
            "data_params": _json_arg(args.data_params, "--data-params") or None,
            "threads": args.threads, "device": args.device}


def _cmd_baseline(args) -> int:
    from .api import train_from_config

    kw = _common_train_kw(args)
    cfg = baseline_config(args.grid, args.key, args.dataset, args.seed, args.fidelity, args.epochs,
                          grid_overrides=_json_arg(args.overrides, "--overrides"), overrides=_sets(args.set) or None,
                          **kw)
    trained = train_from_config(cfg, progress=not args.quiet)
    out = trained.save(args.out)
    print(f"saved {out} (BL {args.grid}/{args.key}, test accuracy {trained.meta['acc_test']:.4f}, "
          f"{trained.meta['train_seconds']:.1f}s)")
    return 0


def _cmd_run(args) -> int:
    ov = _json_arg(args.overrides, "--overrides")
    if args.point:
        pts: list[Any] = list(args.point)
    elif args.chunk is not None:
        all_chunks = chunks(grid_points(args.grid, ov), args.chunk_size)
        if not 0 <= args.chunk < len(all_chunks):
            raise ValueError(f"--chunk {args.chunk}: grid {args.grid} has {len(all_chunks)} chunks of "
                             f"{args.chunk_size}")
        pts = all_chunks[args.chunk]
    else:
        raise ValueError("grid run: give --point ID (repeatable) or --chunk K --chunk-size N")
    kw = _common_train_kw(args)
    df = run_chunk(args.grid, args.dataset, pts, args.baseline, args.out, _json_arg(args.eval, "--eval"), args.seed,
                   fidelity=args.fidelity, epochs_override=args.epochs, config_overrides=_sets(args.set) or None,
                   grid_overrides=ov, apply_step_size=_apply_flag(args.apply_step_size),
                   save_models_dir=args.save_models, progress=not args.quiet, **kw)
    means = df.groupby("point")[["ip_change_pct", "cost_change_pct", "validity_ct", "acc_test_ct"]].mean()
    print(f"wrote {len(df)} rows to {args.out}\n{means.to_string(float_format=lambda v: f'{v:.3f}')}")
    return 0


def _cmd_figures(args) -> int:
    from .report.grid_figures import write_grid_figures

    written = write_grid_figures(args.csv, args.out)
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def _cmd_select(args) -> int:
    sel = write_best(args.csv, args.dataset, args.out, max_acc_drop=args.max_acc_drop, grids=tuple(args.grids))
    print(f"{args.dataset}: tau={sel['best']['tau']:g}, lambda_reg={sel['best']['lambda_reg']:g} "
          f"({'eligible' if sel['eligible'] else 'no pair within the accuracy margin; fallback'}) -> {args.out}")
    return 0


def _train_args(p) -> None:
    p.add_argument("--dataset", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fidelity", default="reference", help="reference | paper")
    p.add_argument("--fidelity-overrides", dest="fidelity_overrides", metavar="JSON",
                   help="fidelity switches as a JSON object (or a JSON file)")
    p.add_argument("--data-params", dest="data_params", metavar="JSON", help="dataset loader parameters (JSON)")
    p.add_argument("--overrides", metavar="JSON",
                   help="the grid's config block (JSON or JSON file): {param: [values]}, {'fixed': {...}}")
    p.add_argument("--epochs", type=int, help="epochs of every model (not of the points of a grid that varies them)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="extra train-config override for every model, e.g. vae.epochs=5")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--quiet", action="store_true")


def add_cli(subparsers) -> None:
    """Register ``ctbench grid {points,baseline,run,figures}`` and ``ctbench tune select`` on ``subparsers``."""
    g = subparsers.add_parser("grid", help="appendix grid searches (Notes 3-12): points, baselines, chunks, figures")
    gsub = g.add_subparsers(dest="grid_command", required=True)

    p = gsub.add_parser("points", help="print a grid's points (ids, parameters, BL keys, chunks) as JSON")
    p.add_argument("--grid", required=True, choices=sorted(GRIDS))
    p.add_argument("--overrides", metavar="JSON", help="the grid's config block (JSON or JSON file)")
    p.add_argument("--chunk-size", dest="chunk_size", type=int, default=0, help="also list the chunks of N points")
    p.add_argument("--ids-only", dest="ids_only", action="store_true", help="print a JSON list of ids only")
    p.add_argument("--compact", action="store_true", help="one-line JSON")
    p.set_defaults(func=_cmd_points)

    b = gsub.add_parser("baseline", help="train the shared vanilla (BL) model of one baseline key")
    b.add_argument("--grid", required=True, choices=sorted(GRIDS))
    b.add_argument("--key", default="bl", help="baseline key (see `grid points`), e.g. bl or bl_ep50")
    b.add_argument("--out", required=True, help="model file (.pt)")
    _train_args(b)
    b.set_defaults(func=_cmd_baseline)

    r = gsub.add_parser("run", help="train + evaluate one chunk of CT points against the shared BL model")
    r.add_argument("--grid", required=True, choices=sorted(GRIDS))
    r.add_argument("--baseline", required=True, help="the BL model file of this chunk's baseline key")
    r.add_argument("--point", action="append", metavar="ID", help="point id (repeatable)")
    r.add_argument("--chunk", type=int, help="chunk index (with --chunk-size)")
    r.add_argument("--chunk-size", dest="chunk_size", type=int, default=0)
    r.add_argument("--eval", metavar="JSON", help="grid protocol overrides, e.g. {\"n_runs\": 2, \"lambdas\": [1.0]}")
    r.add_argument("--apply-step-size", dest="apply_step_size", choices=("auto", "yes", "no"), default="auto",
                   help="use the grid's CE step size (tune_lr); auto = only in the paper fidelity mode")
    r.add_argument("--save-models", dest="save_models", metavar="DIR", help="also save the CT models here")
    r.add_argument("--out", required=True, help="chunk CSV; writes <out>.epochs.csv and <out>.json too")
    _train_args(r)
    r.set_defaults(func=_cmd_run)

    f = gsub.add_parser("figures", help="appendix figures (% change vs BL, share of mature CEs) from chunk CSVs")
    f.add_argument("csv", nargs="+", help="chunk CSVs (their .epochs.csv files are read too)")
    f.add_argument("--out", required=True, help="figure folder")
    f.set_defaults(func=_cmd_figures)

    t = subparsers.add_parser("tune", help="tuning stage (Notes 9-12)")
    tsub = t.add_subparsers(dest="tune_command", required=True)
    s = tsub.add_parser("select", help="choose (tau, lambda_reg) for a dataset from tuning chunk CSVs -> best.json")
    s.add_argument("csv", nargs="+", help="chunk CSVs of the tune / tune_lr grids")
    s.add_argument("--dataset", required=True)
    s.add_argument("--max-acc-drop", dest="max_acc_drop", type=float, default=0.01,
                   help="largest allowed CT test-accuracy loss vs BL (fraction; default 0.01 = 1 pp)")
    s.add_argument("--grids", nargs="+", default=["tune", "tune_lr"])
    s.add_argument("--out", required=True, help="best.json ({tau, lambda_reg}); the rationale goes to <out>.json")
    s.set_defaults(func=_cmd_select)


__all__ = [
    "GRIDS", "GRID_EVAL", "NOTE1", "PARAMS", "SELECTION_RULE", "add_cli", "baseline_config", "baseline_key",
    "baseline_keys", "chunks", "epochs_path", "find_points", "grid_definition", "grid_points", "grid_protocol",
    "grid_size", "point_config", "read_chunks", "run_chunk", "select_best", "summarise_point", "write_best",
]
