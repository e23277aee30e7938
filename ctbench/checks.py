"""Value rules shared by every surface: what a setting may hold, checked the same way for a config file, a
``--set`` override, a grid value and the workflow's start-up check.

* :data:`RULES` — the type and range of each scalar setting of a ``ctbench train`` config, by dotted key.
* :func:`check_value` — one value against its rule; the message names the setting, the value, what is allowed and
  how to fix it.
* :func:`check_overrides` — overrides of a frozen dataclass (fidelity switches, evaluation protocol): names and
  types are derived from the dataclass's own field annotations, so a new field is checked without new code.
"""

from __future__ import annotations

import difflib
import functools
import math
import numbers
import types
import typing
from dataclasses import dataclass, fields
from typing import Any

from .errors import ConfigError


@dataclass(frozen=True)
class Rule:
    """``kind`` ∈ int, float, bool, str; optional bounds (``*_open``: strict), ``nullable``: None allowed."""

    kind: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    nullable: bool = False
    choices: tuple[str, ...] = ()

    def describe(self) -> str:
        what = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string"}[self.kind]
        if self.choices:
            what = f"one of {list(self.choices)}"
        if self.lo is not None and self.hi is not None:
            what += f" in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"
        elif self.lo is not None:
            what += f" {'>' if self.lo_open else '≥'} {self.lo:g}"
        elif self.hi is not None:
            what += f" {'<' if self.hi_open else '≤'} {self.hi:g}"
        return what + (" or null" if self.nullable else "")


_FALSY = {"false", "no", "off", "0", "n", "f"}
_TRUTHY = {"true", "yes", "on", "1", "y", "t"}
_NONNEG = Rule("float", lo=0.0)
_POS_INT = Rule("int", lo=1)

#: scalar settings of a ``ctbench train`` config (see ``ctbench.config.DEFAULT_TRAIN_CONFIG``)
RULES: dict[str, Rule] = {
    "seed": Rule("int", lo=0),
    "threads": _POS_INT,
    "training.epochs": _POS_INT,
    "training.batch_size": _POS_INT,
    "training.nce": Rule("int", lo=1, nullable=True),
    "training.burnin": Rule("float", 0.0, 1.0),
    "training.lr": Rule("float", lo=0.0, lo_open=True),
    "training.max_nonfinite_batches": Rule("int", lo=0),
    "training.keep_failed": Rule("bool"),
    "training.max_loss_growth": Rule("float", lo=1.0, lo_open=True, nullable=True),
    "training.majority_margin": Rule("float", 0.0, 1.0, hi_open=True, nullable=True),
    "training.grad_chunks": _POS_INT,
    "objective.name": Rule("str"),
    "objective.lambda_clf": _NONNEG,
    "objective.lambda_div": _NONNEG,
    "objective.lambda_reg": _NONNEG,
    "objective.lambda_adv": _NONNEG,
    "generator.type": Rule("str"),
    "generator.step_size": Rule("float", lo=0.0, lo_open=True, nullable=True),
    "generator.lambda_cost": _NONNEG,
    "generator.lambda_energy": _NONNEG,
    "generator.energy_reg": _NONNEG,
    "generator.decay": _NONNEG,
    "generator.enforce_mutability": Rule("bool"),
    "convergence.kind": Rule("str", choices=("threshold", "max_iter")),
    "convergence.tau": Rule("float", 0.0, 1.0, lo_open=True),
    "convergence.max_iter": Rule("int", lo=0),
    "model.hidden": _POS_INT,
    "model.layers": _POS_INT,
    "vae.latent_dim": Rule("int", lo=1, nullable=True),
    "vae.hidden": Rule("int", lo=1, nullable=True),
    "vae.epochs": _POS_INT,
    "vae.batch_size": _POS_INT,
    "vae.seed": Rule("int", lo=0),
}


def _bad(key: str, value: Any, rule: Rule, why: str = "") -> ConfigError:
    why = why or f"is {_kind_of(value)}"
    hint = ""
    if rule.kind == "bool" and isinstance(value, str):
        word = value.strip().lower()
        literal = "false" if word in _FALSY else "true" if word in _TRUTHY else "true or false"
        hint = (f" The text {value!r} is not a boolean (and would count as true if taken as one); write "
                f"{literal} without quotes.")
    elif rule.kind in ("int", "float") and isinstance(value, str) and _is_number(value):
        hint = " Write the number without quotes."
    shown = "null" if value is None else repr(value)
    return ConfigError(f"{key}: {shown} {why}; it must be {rule.describe()}.{hint}")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _kind_of(value: Any) -> str:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "a boolean"
    if isinstance(value, str):
        return "text"
    if isinstance(value, numbers.Real):
        return "a number"
    return f"a {type(value).__name__}"


def check_value(key: str, value: Any, rule: Rule | None = None) -> Any:
    """``value`` checked against the rule of ``key`` (or ``rule``) and normalised (ints of float settings become
    floats, whole floats of int settings become ints); raises :class:`ConfigError`. Unknown keys pass unchanged."""
    rule = rule or RULES.get(key)
    if rule is None:
        return value
    if value is None:
        if rule.nullable:
            return None
        raise _bad(key, value, rule, "is not allowed")
    if rule.kind == "bool":
        if not isinstance(value, bool) and type(value).__name__ != "bool_":  # numpy's bool is fine too
            raise _bad(key, value, rule)
        return bool(value)
    if rule.kind == "str":
        if not isinstance(value, str):
            raise _bad(key, value, rule)
        if rule.choices and value not in rule.choices:
            raise _bad(key, value, rule, "is not one of the allowed values")
        return value
    if isinstance(value, bool) or type(value).__name__ == "bool_" or not isinstance(value, numbers.Real):
        raise _bad(key, value, rule)
    if not math.isfinite(value):
        raise _bad(key, value, rule, "is not finite")
    if rule.kind == "int":
        if float(value) != int(value):
            raise _bad(key, value, rule, "is not a whole number")
        value = int(value)
    else:
        value = float(value)
    below = rule.lo is not None and (value <= rule.lo if rule.lo_open else value < rule.lo)
    above = rule.hi is not None and (value >= rule.hi if rule.hi_open else value > rule.hi)
    if below or above:
        raise _bad(key, value, rule, "is out of range")
    return value


def rule_for_type(tp: Any) -> Rule | None:
    """The :class:`Rule` of a field annotation (``bool``, ``int``, ``float``, ``str``, ``X | None``); None for
    annotations that are not a plain scalar (tuples, mappings: checked by their owner)."""
    nullable = False
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(tp))
        if len(args) != 1:
            return None
        tp = args[0]
    kind = {bool: "bool", int: "int", float: "float", str: "str"}.get(tp)
    return Rule(kind, nullable=nullable) if kind else None


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def check_overrides(cls: type, overrides: dict[str, Any] | None, where: str, *, exclude: tuple[str, ...] = (),
                    choices: dict[str, tuple[str, ...]] | None = None,
                    rules: dict[str, Rule] | None = None, noun: str = "setting") -> dict[str, Any]:
    """Check ``overrides`` of dataclass ``cls``: every name must be a field (not in ``exclude``) and every value of
    the field's annotated type (``rules`` may tighten a field's rule with a range). Returns the normalised values.
    """
    if overrides is None:
        return {}
    if not isinstance(overrides, dict):
        raise ConfigError(f"{where}: expected a mapping of settings, got {overrides!r}")
    hints = _hints(cls)
    known = [f.name for f in fields(cls) if f.name not in exclude]
    out = {}
    for key, value in overrides.items():
        if key not in known:
            if key in exclude:
                raise ConfigError(f"{where}.{key}: cannot be overridden here; allowed: {sorted(known)}")
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            plural = noun + ("es" if noun.endswith(("s", "sh", "ch")) else "s")
            raise ConfigError(f"{where}.{key}: unknown {noun}{hint}; known {plural}: {sorted(known)}")
        rule = (rules or {}).get(key) or rule_for_type(hints[key])
        if choices and key in choices:
            rule = Rule("str", choices=choices[key])
        out[key] = check_value(f"{where}.{key}", value, rule) if rule else value
    return out


__all__ = ["RULES", "Rule", "check_overrides", "check_value", "rule_for_type"]
