"""Numerical checks of the paper's theoretical results (see :mod:`ctbench.theory.prop31`).

The submodule is imported on first attribute access, so ``python -m ctbench.theory.prop31`` runs cleanly.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["prop31"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
