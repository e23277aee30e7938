"""Argument parsing the command modules share: a JSON object given on the command line or as a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError


def json_object(text: str | None, what: str) -> dict[str, Any]:
    """The JSON object that ``text`` holds, or that the file ``text`` names ({} for none); a ConfigError naming the
    option ``what`` otherwise (the workflow passes settings this way, quoted by Snakemake)."""
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


__all__ = ["json_object"]
