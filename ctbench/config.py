"""Run configuration: defaults, validation with messages that name the bad key, and dotted overrides.

A training config (YAML or dict) has these blocks; everything not given takes the default below, which is the
paper's final setting ("Final hyperparameters" table, reference §8.3) for the linearly separable data.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

DEFAULT_TRAIN_CONFIG: dict[str, Any] = {
    "seed": 0,
    "device": "cpu",
    "threads": 1,
    "fidelity": "reference",
    "fidelity_overrides": {},
    "data": {"name": "lin_sep", "params": {}},
    "model": {"type": "mlp", "hidden": 32, "layers": 1},
    "objective": {"name": "full", "lambda_clf": 1.0, "lambda_div": 0.5, "lambda_reg": 0.01, "lambda_adv": 0.25},
    # null = no constraints; "protected" = the dataset's protected features immutable; or a spec for
    # ctbench.constraints.parse_mutability (names per feature, immutable indices, {index: name}).
    "mutability": None,
    "domain": "inferred",  # "inferred" (the dataset's box), "none", or [lower, upper]
    "training": {"epochs": 100, "batch_size": 30, "nce": 1000, "burnin": 0.0, "lr": 0.001,
                 "max_nonfinite_batches": 0},
    "generator": {"type": "ecco", "lambda_cost": 0.001, "lambda_energy": 5.0, "step_size": None},
    "convergence": {"kind": "threshold", "tau": 0.5, "max_iter": 30},
    "vae": {"latent_dim": None, "hidden": None, "epochs": 100, "batch_size": 50, "seed": 0},
}

# Keys whose value is free-form (a mapping of arbitrary keys) or may change type.
_FREE = {"fidelity_overrides", "data.params", "mutability", "domain", "generator.step_size",
         "vae.latent_dim", "vae.hidden", "training.nce", "generator"}


class ConfigError(ValueError):
    """A config value is wrong; the message names the key and what is allowed."""


def _merge(default: Any, given: Any, path: str) -> Any:
    if path in _FREE:
        if isinstance(default, dict) and isinstance(given, dict) and path == "generator":
            return {**default, **given}
        return copy.deepcopy(given)
    if isinstance(default, dict):
        if not isinstance(given, dict):
            raise ConfigError(f"{path or 'config'}: expected a mapping, got {type(given).__name__}")
        unknown = set(given) - set(default)
        if unknown:
            where = f"{path}." if path else ""
            raise ConfigError(f"unknown key(s) {', '.join(where + k for k in sorted(unknown))}; "
                              f"allowed here: {sorted(default)}")
        return {k: _merge(default[k], given[k], f"{path}.{k}" if path else k) if k in given
                else copy.deepcopy(default[k]) for k in default}
    if default is not None and given is not None:
        if isinstance(default, bool) != isinstance(given, bool):
            raise ConfigError(f"{path}: expected {type(default).__name__}, got {given!r}")
        if isinstance(default, (int, float)) and not isinstance(given, (int, float)):
            raise ConfigError(f"{path}: expected a number, got {given!r}")
        if isinstance(default, str) and not isinstance(given, str):
            raise ConfigError(f"{path}: expected a string, got {given!r}")
    return copy.deepcopy(given)


def resolve_train_config(given: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fill defaults and check every key and type; raise :class:`ConfigError` on the first problem."""
    given = copy.deepcopy(given or {})
    model = given.get("model")
    cfg = _merge(DEFAULT_TRAIN_CONFIG, {k: v for k, v in given.items() if k != "model"}, "")
    if isinstance(model, dict) and model.get("type", "mlp") != "mlp":
        cfg["model"] = dict(model)  # the MLP's width/depth defaults do not apply to other model types
    elif model is not None:
        cfg["model"] = _merge(DEFAULT_TRAIN_CONFIG["model"], model, "model")
    if cfg["device"] not in ("cpu", "cuda") and not str(cfg["device"]).startswith("cuda:"):
        raise ConfigError(f"device: {cfg['device']!r} is not 'cpu', 'cuda' or 'cuda:N'")
    if int(cfg["threads"]) < 1:
        raise ConfigError("threads: must be >= 1")
    dom = cfg["domain"]
    if not (dom in ("inferred", "none", None) or (isinstance(dom, (list, tuple)) and len(dom) == 2)):
        raise ConfigError("domain: use 'inferred', 'none' or a [lower, upper] pair")
    return cfg


def parse_value(raw: str) -> Any:
    """A command-line value as YAML, with numbers such as ``1e-3`` read as floats (YAML 1.1 reads them as text)."""
    value = yaml.safe_load(raw)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    if isinstance(value, list):
        return [parse_value(str(v)) if isinstance(v, str) else v for v in value]
    return value


def set_dotted(cfg: dict[str, Any], assignment: str) -> None:
    """Apply ``key.sub=value`` (value parsed as YAML) to ``cfg`` in place; used by ``--set`` on the CLI."""
    if "=" not in assignment:
        raise ConfigError(f"--set {assignment!r}: expected key=value, e.g. training.epochs=10")
    key, raw = assignment.split("=", 1)
    value = parse_value(raw)
    node = cfg
    parts = key.strip().split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {key}: {p} is not a mapping")
    node[parts[-1]] = value


def load_config(path: str | Path | None, overrides: list[str] | None = None) -> dict[str, Any]:
    """Read a YAML config (or start empty), apply ``key=value`` overrides, and resolve it."""
    cfg: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise ConfigError(f"config file {p} does not exist")
        cfg = yaml.safe_load(p.read_text()) or {}
        if not isinstance(cfg, dict):
            raise ConfigError(f"{p}: the top level must be a mapping")
    for a in overrides or []:
        set_dotted(cfg, a)
    return resolve_train_config(cfg)
