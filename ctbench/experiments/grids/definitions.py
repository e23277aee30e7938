"""The grids of appendix Notes 3-11: parameters, Note 1 defaults, point ids, shared-BL keys, chunks.

A grid value is checked when the grid is defined (not inside a job); see :mod:`ctbench.experiments.grids` for the whole
stage.
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ...errors import ConfigError
from ...facts import PAPER_DATASETS, SYNTHETIC

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

ALL_DATASETS = PAPER_DATASETS
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
    from ...checks import check_value

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

