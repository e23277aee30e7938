"""Datasets from outside the package: a user's loader module, named in the config, the environment or an entry point.

Adding a dataset must not mean editing ctbench. A *plugin* is a Python module whose import registers loaders with
:func:`ctbench.data.register`. ctbench imports, once per process and before any dataset is looked up:

* the modules named in the workflow config's ``plugins:`` list (the workflow exports them to its jobs through
  ``CTBENCH_PLUGINS``),
* the entries of ``CTBENCH_PLUGINS`` (separated by ``os.pathsep``), and
* the entry points of the group ``ctbench.datasets`` of installed distributions.

An entry is a path to a ``.py`` file (relative to the working directory) or a module name importable from the working
directory or ``sys.path``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from importlib.metadata import entry_points
from pathlib import Path

from ..errors import ConfigError

ENV = "CTBENCH_PLUGINS"
GROUP = "ctbench.datasets"
HOW_TO = ("to add a dataset, register a loader with @ctbench.data.register(NAME, family=...) in a module and name "
          "the module (a .py path or an importable name) in the config's `plugins:` list, in CTBENCH_PLUGINS, or as "
          f"an entry point of the group {GROUP!r} (README, 'Adding a dataset')")

_loaded: set[str] = set()
_entry_points_done = False


def _key(spec: str) -> str:
    return str(Path(spec).resolve()) if spec.endswith(".py") else spec


def _import(spec: str) -> None:
    if spec.endswith(".py"):
        path = Path(spec).resolve()
        if not path.is_file():
            raise ConfigError(f"plugins: {spec!r} is not a file (resolved to {path}); {HOW_TO}")
        name = f"ctbench_plugin_{path.stem}_{abs(hash(str(path))) % 10**8}"
        mod_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[name] = module
        try:
            mod_spec.loader.exec_module(module)
        except Exception as err:  # the user's module: say which one failed and why
            sys.modules.pop(name, None)
            raise ConfigError(f"plugins: importing {spec!r} failed: {type(err).__name__}: {err}") from err
        return
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)
    try:
        importlib.import_module(spec)
    except ImportError as err:
        raise ConfigError(f"plugins: cannot import module {spec!r} ({err}); {HOW_TO}") from err


def load_plugins(specs: Iterable[str] | None = None) -> list[str]:
    """Import the given plugin modules, those of ``CTBENCH_PLUGINS`` and the ``ctbench.datasets`` entry points (each
    once per process); returns the keys newly imported."""
    global _entry_points_done
    wanted = [str(s) for s in (specs or [])]
    wanted += [s for s in os.environ.get(ENV, "").split(os.pathsep) if s]
    new = []
    for spec in wanted:
        key = _key(spec)
        if key not in _loaded:
            _loaded.add(key)
            try:
                _import(spec)
            except ConfigError:
                _loaded.discard(key)
                raise
            new.append(key)
    if not _entry_points_done:
        _entry_points_done = True
        for ep in entry_points(group=GROUP):
            if f"ep:{ep.value}" not in _loaded:
                _loaded.add(f"ep:{ep.value}")
                ep.load()
                new.append(f"ep:{ep.value}")
    return new


def export_plugins(specs: Iterable[str] | None) -> None:
    """Import ``specs`` here and make every later ``ctbench`` process (the workflow's jobs) import them too."""
    if specs is not None and not isinstance(specs, list | tuple):
        raise ConfigError(f"plugins: expected a list of modules (.py paths or module names), got {specs!r}")
    keys = [_key(str(s)) for s in (specs or [])]
    load_plugins(keys)
    current = [s for s in os.environ.get(ENV, "").split(os.pathsep) if s]
    os.environ[ENV] = os.pathsep.join(dict.fromkeys([*current, *keys]))
