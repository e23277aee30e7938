"""One typed reader for every ``key=value`` and YAML text a user gives ctbench: YAML 1.2 (core schema) typing.

PyYAML implements YAML 1.1, where ``1e-3`` is a *string* (1.1 floats need a dot and a signed exponent), ``yes``,
``no``, ``on`` and ``off`` are booleans and ``010`` is octal. Here, as in YAML 1.2 (and JSON): ``1e-3`` and
``1.5E3`` are floats, only ``true``/``false`` (any case: True, TRUE) are booleans, ``010`` is ten, ``null``, ``~``
and an empty value are null, and ``.inf``/``.nan`` are the special floats. Quoted values are always strings
(``'false'`` is the five-letter string, never the boolean). Used by ``ctbench train --set``, ``ctbench grid ...
--set``, ``ctbench evaluate --set``, ``ctbench generate --generator``, config files, and the workflow's
``--config`` values.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .errors import BadFileError, ConfigError

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


class Yaml12Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with the YAML 1.2 core schema's implicit types (no 1.1 yes/no, octal or timestamps)."""

    yaml_implicit_resolvers: dict = {}


for _tag, _regexp, _first in (
    ("tag:yaml.org,2002:null", _NULL, ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", _BOOL, list("tTfF")),
    ("tag:yaml.org,2002:int", _INT, list("-+0123456789")),
    ("tag:yaml.org,2002:float", _FLOAT, list("-+.0123456789")),
    ("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"]),
):
    Yaml12Loader.add_implicit_resolver(_tag, _regexp, _first)


def _int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    text = loader.construct_scalar(node)
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body.startswith("0o"):
        return sign * int(body[2:], 8)
    if body.startswith("0x"):
        return sign * int(body[2:], 16)
    return sign * int(body, 10)


def _float(loader: yaml.SafeLoader, node: yaml.Node) -> float:
    text = loader.construct_scalar(node).lower()
    if text.endswith(".inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    if text == ".nan":
        return float("nan")
    return float(text)


Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _int)
Yaml12Loader.add_constructor("tag:yaml.org,2002:float", _float)


def _where(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark is not None else problem


def loads(text: str, what: str = "value") -> Any:
    """Parse YAML ``text`` with YAML 1.2 typing; a syntax error raises :class:`ConfigError` naming ``what``."""
    try:
        return yaml.load(text, Loader=Yaml12Loader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as err:
        raise ConfigError(f"{what}: {text!r} is not valid YAML ({_where(err)})") from None


def parse_value(raw: str, what: str = "value") -> Any:
    """A command-line value: ``1e-3`` → 0.001, ``true`` → True, ``[1, 2.5]`` → list, ``'false'`` → the string."""
    return loads(raw, what)


def split_assignment(assignment: str, option: str = "--set", example: str = "training.epochs=10") -> tuple[str, Any]:
    """``key=value`` → (key, typed value); a missing ``=`` or an empty key raises :class:`ConfigError`."""
    key, sep, raw = assignment.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"{option} {assignment!r}: expected key=value, e.g. {option} {example}")
    return key, parse_value(raw, f"{option} {key}")


def load_file(path: str | Path, what: str = "config file") -> Any:
    """Read a YAML (or JSON) file with YAML 1.2 typing; a missing file or a syntax error names the file."""
    p = Path(path)
    if not p.is_file():
        raise BadFileError(f"{what} {p} does not exist" if not p.exists() else f"{what} {p} is not a file")
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise BadFileError(f"{what} {p} cannot be read: {err}") from None
    try:
        return yaml.load(text, Loader=Yaml12Loader)  # noqa: S506
    except yaml.YAMLError as err:
        raise ConfigError(f"{what} {p} is not valid YAML: {_where(err)}. Fix the file (check indentation, "
                          "colons and brackets).") from None


__all__ = ["Yaml12Loader", "load_file", "loads", "parse_value", "split_assignment"]
