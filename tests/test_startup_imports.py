"""Commands that need no torch start without importing it (issue 21: ≈ 1.5 CPU-s in each such job).

Each check runs a fresh interpreter in which importing torch raises, so a module-level ``import torch`` anywhere on
the command's path fails the test with the importing module in the traceback.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_NO_TORCH = textwrap.dedent("""
    import importlib.abc, sys

    class _NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] == "torch":
                raise ImportError(f"torch ({name}) imported where no torch is needed")

    sys.meta_path.insert(0, _NoTorch())
""")


def _run(code: str) -> str:
    res = subprocess.run([sys.executable, "-c", _NO_TORCH + textwrap.dedent(code)], capture_output=True, text=True,
                         cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def test_cli_and_torch_free_commands_import_without_torch():
    """The CLI (every command's start-up) and the modules of report, book, gallery, stage-times, compare, tune
    select and fidelity-effects-merge."""
    _run("""
        import ctbench.cli
        import ctbench.evaluation.aggregate
        import ctbench.experiments.fidelity
        import ctbench.experiments.grids.tuning
        import ctbench.report.book.build
        import ctbench.report.gallery
        import ctbench.report.run_set
        import ctbench.report.tables.appendix_tables
        import ctbench.report.tables.compare
        import ctbench.report.tables.paper_tables
        import ctbench.report.tables.stage_times
        from ctbench.cli import build_parser
        build_parser().format_help()
    """)


def test_the_reports_dataset_labels_need_no_torch():
    """``ctbench report`` and ``report-figures`` read the data registry for plugins' labels: the registry loads no
    torch (the synthetic and tabular loaders import the domain box's torch code only when they build a dataset)."""
    out = _run("""
        from ctbench.cli.report_figure_cmds import registered_labels
        import ctbench.data
        print(sorted(ctbench.data.available())[:1], registered_labels())
    """)
    assert out.strip().endswith("{}")


def test_compare_runs_without_torch():
    out = _run("""
        from ctbench.cli import run
        raise SystemExit(run(["compare", "tests/golden/smoke", "--committed", "tests/golden/smoke", "--strict"]))
    """)
    assert out


def test_provenance_names_torch_without_importing_it():
    import torch

    out = _run("""
        import json, sys
        from ctbench.io import provenance
        p = provenance()
        print(json.dumps([p["torch"], p["torch_threads"], "torch" in sys.modules]))
    """)
    import json

    version, threads, loaded = json.loads(out)
    assert version == torch.__version__ and threads is None and not loaded
    from ctbench.io import provenance

    p = provenance()  # torch loaded: its own version and threads
    assert p["torch"] == torch.__version__ and p["torch_threads"] == torch.get_num_threads()


def test_evaluation_metrics_still_importable_from_the_package():
    from ctbench import evaluation
    from ctbench.evaluation import implausibility, metrics

    assert implausibility is metrics.implausibility and evaluation.ip_star is metrics.ip_star


def test_each_checks_its_jobs_without_torch():
    """``ctbench each`` parses and checks every job before the first one runs, and that needs no torch: a bad job
    list is refused in the start-up alone (the jobs themselves import torch when they run)."""
    out = _run("""
        import sys
        from ctbench.cli import run
        rc = run(["each", "evaluate", "--jobs", '[["--model", "CT=m.pt", "--experiment", "single", "--out", "a.csv"],'
                  ' ["--model", "CT=m.pt", "--experiment", "single", "--out", "a.csv"]]'])
        print(rc, "torch" in sys.modules)
    """)
    assert out.split() == ["2", "False"]
