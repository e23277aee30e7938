"""Issue 10 item 1: the report layer reads result files and draws; it never trains, searches or loads data. A report
module importing the training/search layers (as ``report/figures.py`` once trained Figure 1's models) fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import ctbench

PKG = Path(ctbench.__file__).resolve().parent
#: ctbench modules that train, search, load models or data, or run experiments: not for the report layer
FORBIDDEN = {"api", "training", "generators", "models", "constraints", "stacked", "data", "figure_runs",
             "fidelity_study", "consistency_study", "consistency_search", "bench", "bench_population"}


def _imported_ctbench_modules(path: Path) -> set[str]:
    """Dotted ``ctbench.…`` names imported by ``path`` (relative imports resolved against its package)."""
    package = list(path.relative_to(PKG.parent).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            names |= {mod} | ({f"{mod}.{a.name}" for a in node.names} if not node.module else set())
    return {n for n in names if n.startswith("ctbench.")}


def test_resolver_sees_relative_imports():
    assert "ctbench.api" in _imported_ctbench_modules(PKG / "grids" / "runner.py")  # inside a function, two dots
    assert "ctbench.report.figures" in _imported_ctbench_modules(PKG / "figure_runs" / "linear.py")
    assert "ctbench.io" in _imported_ctbench_modules(PKG / "report" / "mnist_grid.py")


def test_report_does_not_import_training_or_experiments():
    bad = []
    for path in sorted((PKG / "report").rglob("*.py")):
        for mod in _imported_ctbench_modules(path):
            if mod.split(".")[1] in FORBIDDEN:
                bad.append(f"{path.relative_to(PKG.parent)} imports {mod}")
    assert not bad, "the report layer must only read results:\n" + "\n".join(bad)
