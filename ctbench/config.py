"""Run configuration: defaults, validation with messages that name the bad key, and dotted overrides.

A training config (YAML or dict) has these blocks; everything not given takes the default below, which is the
paper's final setting ("Final hyperparameters" table, reference §8.3) for the linearly separable data.
"""

from __future__ import annotations

import copy
import difflib
from pathlib import Path
from typing import Any

from .checks import RULES, check_value
from .errors import ConfigError
from .yaml12 import load_file, parse_value, split_assignment

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
    # keep_failed / max_loss_growth / majority_margin: see ctbench.training.health (a run that diverges or does
    # not learn is not saved as a normal model; keep_failed saves it for inspection, marked failed)
    "training": {"epochs": 100, "batch_size": 30, "nce": 1000, "burnin": 0.0, "lr": 0.001,
                 "max_nonfinite_batches": 0, "keep_failed": False, "max_loss_growth": 1e4,
                 "majority_margin": 0.02, "grad_chunks": 1},
    "generator": {"type": "ecco", "lambda_cost": 0.001, "lambda_energy": 5.0, "step_size": None},
    "convergence": {"kind": "threshold", "tau": 0.5, "max_iter": 30},
    "vae": {"latent_dim": None, "hidden": None, "epochs": 100, "batch_size": 50, "seed": 0},
}

# Keys whose value is free-form (a mapping of arbitrary keys) or may change type; checked after the merge.
_FREE = {"fidelity_overrides", "data.params", "mutability", "domain", "generator.step_size",
         "vae.latent_dim", "vae.hidden", "training.nce", "generator"}


def _merge(default: Any, given: Any, path: str) -> Any:
    if path in _FREE:
        if isinstance(default, dict) and path == "generator":
            if not isinstance(given, dict):
                raise ConfigError(f"generator: expected a mapping such as {{type: ecco}}, got {given!r}")
            return {**default, **given}
        return copy.deepcopy(given)
    if isinstance(default, dict):
        if not isinstance(given, dict):
            raise ConfigError(f"{path or 'config'}: expected a mapping, got {given!r}")
        unknown = sorted(map(str, set(given) - set(default)))
        if unknown:
            where = f"{path}." if path else ""
            close = difflib.get_close_matches(unknown[0], list(default), n=1)
            hint = f" (did you mean {where}{close[0]}?)" if close else ""
            raise ConfigError(f"unknown key(s) {', '.join(where + k for k in unknown)}{hint}; "
                              f"allowed here: {sorted(default)}")
        return {k: _merge(default[k], given[k], f"{path}.{k}" if path else k) if k in given
                else copy.deepcopy(default[k]) for k in default}
    if path in RULES:
        return check_value(path, given)
    if default is not None:  # a setting without a rule: the default's type
        from .checks import Rule

        kind = "bool" if isinstance(default, bool) else "int" if isinstance(default, int) else \
            "float" if isinstance(default, float) else "str" if isinstance(default, str) else None
        if kind is not None:
            return check_value(path, given, Rule(kind))
    return copy.deepcopy(given)


def _check_free(cfg: dict[str, Any]) -> None:
    """Free-form keys: the scalar ones by their rules, the generator's settings, the fidelity switches."""
    from .fidelity import check_switches

    for key in ("training.nce", "generator.step_size", "vae.latent_dim", "vae.hidden"):
        block, name = key.split(".")
        cfg[block][name] = check_value(key, cfg[block][name])
    for name, value in list(cfg["generator"].items()):
        cfg["generator"][name] = check_value(f"generator.{name}", value)
    if not isinstance(cfg["fidelity"], str):
        raise ConfigError(f"fidelity: {cfg['fidelity']!r} is not a mode name; use reference or paper")
    cfg["fidelity_overrides"] = check_switches(cfg["fidelity_overrides"] or {})
    if not isinstance(cfg["data"]["params"], dict):
        raise ConfigError(f"data.params: expected a mapping of loader parameters, got {cfg['data']['params']!r}")


def resolve_train_config(given: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fill defaults and check every key, type and range; raise :class:`ConfigError` on the first problem."""
    given = copy.deepcopy(given or {})
    if not isinstance(given, dict):
        raise ConfigError(f"config: the top level must be a mapping of settings, got {given!r}")
    model = given.get("model")
    cfg = _merge(DEFAULT_TRAIN_CONFIG, {k: v for k, v in given.items() if k != "model"}, "")
    if isinstance(model, dict) and model.get("type", "mlp") != "mlp":
        cfg["model"] = dict(model)  # the MLP's width/depth defaults do not apply to other model types
    elif model is not None:
        cfg["model"] = _merge(DEFAULT_TRAIN_CONFIG["model"], model, "model")
    _check_free(cfg)
    dev = cfg["device"]
    if not (dev in ("cpu", "cuda") or (dev.startswith("cuda:") and dev[5:].isdigit())):
        raise ConfigError(f"device: {dev!r} is not 'cpu', 'cuda' or 'cuda:N'")
    dom = cfg["domain"]
    if not (dom in ("inferred", "none", None) or (isinstance(dom, (list, tuple)) and len(dom) == 2)):
        raise ConfigError(f"domain: {dom!r} is not allowed; use 'inferred', 'none' or a [lower, upper] pair")
    return cfg


def set_dotted(cfg: dict[str, Any], assignment: str, option: str = "--set") -> None:
    """Apply ``key.sub=value`` (value typed as YAML 1.2: ``1e-3`` is a float) to ``cfg`` in place."""
    key, value = split_assignment(assignment, option)
    node = cfg
    parts = key.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{option} {key}: {p} is not a mapping")
    node[parts[-1]] = value


def load_config(path: str | Path | None, overrides: list[str] | None = None) -> dict[str, Any]:
    """Read a YAML config (or start empty), apply ``key=value`` overrides, and resolve it."""
    cfg: dict[str, Any] = {}
    if path is not None:
        cfg = load_file(path) or {}
        if not isinstance(cfg, dict):
            raise ConfigError(f"config file {path}: the top level must be a mapping of settings, got {cfg!r}")
    for a in overrides or []:
        set_dotted(cfg, a)
    return resolve_train_config(cfg)


__all__ = ["DEFAULT_TRAIN_CONFIG", "ConfigError", "load_config", "parse_value", "resolve_train_config",
           "set_dotted"]
