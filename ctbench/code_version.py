"""Code is a dependency too: a fingerprint of the ctbench source that one workflow stage runs.

Policy (README, "Reproducing the paper"): every rule carries ``code=<fingerprint>`` in its Snakemake ``params``, the
sha256 over the AST-normalised source (comments, docstrings and layout dropped) of the static import closure, within
``ctbench``, of the stage's entry module (the ``ctbench.cli`` command module the rule calls). Imports at module level
and inside functions count alike, and importing ``ctbench.a.b`` counts ``ctbench/__init__.py`` and
``ctbench/a/__init__.py`` too, because Python runs them. So a change of the library reruns the stages that can reach
it, and a change of report code (which nothing below the report imports) does not retrain a model. Third-party
packages are not fingerprinted (their versions are in every result's provenance). The fingerprint is computed once
per Snakemake start-up (:func:`fingerprint` is cached).
"""

from __future__ import annotations

import ast
import hashlib
from functools import cache
from pathlib import Path

#: the package whose source is fingerprinted
PACKAGE = "ctbench"
#: packages whose ``__init__`` only dispatches (the command table): their own source counts, the modules they import
#: do not (``ctbench train`` runs ``ctbench.cli``, which imports every command module, but runs only ``train``'s)
DISPATCH = ("ctbench.cli",)
ROOT = Path(__file__).resolve().parent


def _module_file(module: str, root: Path) -> Path | None:
    """The source file of ``module`` (``ctbench.x.y``) under ``root`` (the ``ctbench`` folder), or None."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _parents(module: str) -> list[str]:
    """``ctbench.a.b`` → ``[ctbench, ctbench.a]``: the packages Python runs before the module."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


_DOCSTRING_HOLDERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _info(f: Path, module: str) -> tuple[frozenset[str], str]:
    """(the ``ctbench`` modules that file ``f`` of ``module`` imports anywhere, relative imports resolved; sha256 of
    its AST without docstrings, so comments, docstrings and layout do not count)."""
    return _source_info(f.read_text(encoding="utf-8"), module, f.name == "__init__.py")


@cache
def _source_info(text: str, module: str, is_package: bool) -> tuple[frozenset[str], str]:
    """:func:`_info` of a source text (each text is parsed once per process)."""
    tree = ast.parse(text)
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            found.add(stem)
            found.update(f"{stem}.{a.name}" for a in node.names if a.name != "*")  # a name may be a sub-module
        elif isinstance(node, _DOCSTRING_HOLDERS) and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str):
            node.body = node.body[1:] or [ast.Pass()]
    imports = frozenset(m for m in found if m == PACKAGE or m.startswith(PACKAGE + "."))
    dumped = ast.dump(tree, annotate_fields=False, include_attributes=False)
    return imports, hashlib.sha256(dumped.encode()).hexdigest()


def closure(entry: str, root: Path | None = None) -> dict[str, Path]:
    """Module name → file of every ``ctbench`` module that ``entry`` (a module name) reaches by import statements."""
    root = Path(root) if root is not None else ROOT
    seen: dict[str, Path] = {}
    todo = [entry, *_parents(entry)]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        f = _module_file(mod, root)
        if f is None:
            continue  # a name imported from a module, not a module
        seen[mod] = f
        if mod in DISPATCH and mod != entry:
            continue
        for m in _info(f, mod)[0]:
            todo += [m, *_parents(m)]
    return seen


def fingerprint_of(entries: tuple[str, ...], root: Path | None = None) -> str:
    """sha256 (first 16 hex digits) over the normalised source of the union of the closures of ``entries``."""
    files: dict[str, Path] = {}
    for e in entries:
        if _module_file(e, Path(root) if root is not None else ROOT) is None:
            raise ValueError(f"code fingerprint: no module {e!r} in {root or ROOT}")
        files.update(closure(e, root))
    h = hashlib.sha256()
    for mod in sorted(files):
        h.update(mod.encode() + b"\0" + _info(files[mod], mod)[1].encode() + b"\0")
    return h.hexdigest()[:16]


@cache
def fingerprint(*entries: str) -> str:
    """:func:`fingerprint_of` this installed ``ctbench``, once per process (a Snakemake start-up)."""
    return fingerprint_of(tuple(entries))


__all__ = ["closure", "fingerprint", "fingerprint_of"]
