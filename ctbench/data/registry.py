"""Dataset registry: adding a dataset is one ``@register`` loader (in any module, see :mod:`ctbench.data.plugins`)
plus its name in the config."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ConfigError, UserInputError
from ..facts import DATASETS, DEFAULT_FAMILY, FAMILIES
from .base import Dataset, check_dataset

_LOADERS: dict[str, Callable[..., Dataset]] = {}
_INFO: dict[str, dict[str, Any]] = {}


def register(name: str, *, family: str, description: str = "", aliases: tuple[str, ...] = (),
             label: str | None = None):
    """Decorator: register ``loader(fidelity=..., seed=..., **params) -> Dataset`` under ``name``. ``family`` (one of
    :data:`ctbench.facts.FAMILIES`) sets the evaluation protocol and the workflow's resources; ``label`` is the
    name in report tables (default: ``name``). A dataset of :data:`ctbench.facts.DATASETS` must agree with it."""
    if family not in FAMILIES:
        raise ValueError(f"dataset {name!r}: family {family!r} is not one of {FAMILIES}")
    facts = DATASETS.get(name)
    if facts is not None and (family != facts.family or label not in (None, facts.label)):
        raise ValueError(f"dataset {name!r}: registered as ({family}, {label}), but the catalog (ctbench/facts.py) "
                         f"says ({facts.family}, {facts.label})")

    def deco(fn: Callable[..., Dataset]) -> Callable[..., Dataset]:
        for key in (name, *aliases):
            if key in _LOADERS:
                raise ValueError(f"dataset {key!r} registered twice")
            _LOADERS[key] = fn
        _INFO[name] = {"family": family, "label": label or (facts.label if facts else name),
                       "description": description, "aliases": list(aliases)}
        return fn

    return deco


def available() -> dict[str, dict[str, Any]]:
    from .plugins import load_plugins

    load_plugins()
    return dict(_INFO)


def load_dataset(name: str, **params: Any) -> Dataset:
    """Load a registered dataset; ``params`` go to its loader (e.g. ``fidelity``, ``seed``, sizes)."""
    from .plugins import HOW_TO, load_plugins

    if name not in _LOADERS:
        load_plugins()
    if name not in _LOADERS:
        raise ValueError(f"dataset: unknown name {name!r}; registered: {sorted(_LOADERS)}; {HOW_TO}")
    loader = _LOADERS[name]
    if name in DATASETS or str(getattr(loader, "__module__", "")).startswith("ctbench."):
        return loader(**params)  # the paper's loaders (by name or alias): tested in ctbench
    # a user's loader: its failure in one line naming it, and its result checked before any stage uses it
    where = f"{getattr(loader, '__module__', '?')}.{getattr(loader, '__qualname__', '?')}"
    try:
        ds = loader(**params)
    except UserInputError:
        raise
    except Exception as err:
        detail = str(err).splitlines()[0] if str(err) else "no detail"
        raise ConfigError(f"dataset {name!r}: its loader {where} (a plugin) failed: {type(err).__name__}: "
                          f"{detail}") from None
    try:
        return check_dataset(ds, name)
    except ValueError as err:
        raise ConfigError(f"{err} (loader {where})") from None


def family(name: str, default: str | None = DEFAULT_FAMILY) -> str | None:
    """The family of a dataset (name or alias), decided here only: the catalog's, else the one its loader registered
    (a user's dataset), else ``default`` (:data:`ctbench.facts.DEFAULT_FAMILY`)."""
    if name in DATASETS:
        return DATASETS[name].family
    return _registered(name).get("family") or default


def label(name: str) -> str:
    """The label a dataset has in tables: the paper's, else its loader's ``label=``, else its name."""
    if name in DATASETS:
        return DATASETS[name].label
    return _registered(name).get("label") or name


def _registered(name: str) -> dict[str, Any]:
    return next((i for n, i in available().items() if name == n or name in i.get("aliases", ())), {})
