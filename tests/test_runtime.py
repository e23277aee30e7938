"""ctbench.runtime.keep_freed_memory: glibc keeps freed blocks in the heap for the search commands (issue 21), once
per process, nothing where the C library is not glibc or the user set glibc's own variables, never in the report."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from ctbench import runtime
from ctbench.cli import run
from ctbench.code_version import closure


@pytest.fixture
def fresh(monkeypatch):
    """A process that has not called keep_freed_memory yet, no MALLOC_* variable set, mallopt recorded."""
    monkeypatch.setattr(runtime, "_state", {})
    for v in runtime.USER_VARIABLES:
        monkeypatch.delenv(v, raising=False)
    calls = []

    def mallopt(param, value):
        calls.append((param, value))
        return 1

    monkeypatch.setattr(runtime, "_glibc_mallopt", lambda: mallopt)
    return calls


def test_sets_both_thresholds_once(fresh):
    assert runtime.keep_freed_memory() == "set"
    assert sorted(fresh) == sorted(runtime.SETTINGS.items())
    assert runtime.SETTINGS[runtime.M_MMAP_THRESHOLD] >= 94 * 2**20  # the LeNet search's blocks stay in the heap
    assert runtime.keep_freed_memory() == "set"  # idempotent: mallopt is not called again
    assert len(fresh) == len(runtime.SETTINGS)


def test_no_glibc_is_a_logged_no_op(fresh, monkeypatch, caplog):
    monkeypatch.setattr(runtime, "_glibc_mallopt", lambda: None)
    with caplog.at_level(logging.DEBUG, logger="ctbench.runtime"):
        assert runtime.keep_freed_memory() == "unavailable"
    assert "no glibc mallopt" in caplog.text


def test_refused_setting_is_a_logged_no_op(fresh, monkeypatch, caplog):
    monkeypatch.setattr(runtime, "_glibc_mallopt", lambda: lambda param, value: 0)
    with caplog.at_level(logging.DEBUG, logger="ctbench.runtime"):
        assert runtime.keep_freed_memory() == "unavailable"
    assert "refused" in caplog.text


def test_user_variables_win(fresh, monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    assert runtime.keep_freed_memory() == "user"
    assert fresh == []


def test_real_c_library(monkeypatch):
    """On glibc (Linux CI) the real mallopt accepts the settings; elsewhere the lookup finds nothing."""
    import platform

    monkeypatch.setattr(runtime, "_state", {})
    for v in runtime.USER_VARIABLES:
        monkeypatch.delenv(v, raising=False)
    expected = "set" if platform.libc_ver()[0] == "glibc" else "unavailable"
    assert runtime.keep_freed_memory() == expected


def test_single_arena_once_and_the_users_variable_wins(fresh, monkeypatch):
    assert runtime.single_malloc_arena() == "set"
    assert fresh == [(runtime.M_ARENA_MAX, 1)]
    assert runtime.single_malloc_arena() == "set" and len(fresh) == 1  # once per process
    monkeypatch.setattr(runtime, "_state", {})
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert runtime.single_malloc_arena() == "user" and len(fresh) == 1
    monkeypatch.setattr(runtime, "_state", {})
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    monkeypatch.setattr(runtime, "_glibc_mallopt", lambda: None)
    assert runtime.single_malloc_arena() == "unavailable"


def test_the_command_line_sets_the_single_arena_on_import():
    """Before numpy's import starts threads (an arena a thread took earlier stays in use by later threads)."""
    import subprocess
    import sys

    code = ("import sys; import ctbench.cli; from ctbench import runtime; "
            "print(runtime._state.get('arena'), 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}).stdout.split()
    import platform

    assert out == ["set" if platform.libc_ver()[0] == "glibc" else "unavailable", "True"]
    src = (Path(runtime.__file__).parent / "cli" / "__init__.py").read_text()
    assert src.index("single_malloc_arena()") < src.index("from . import (")


class Called(Exception):
    """Raised by the stand-in for keep_freed_memory: the command called it before doing anything else."""


SEARCH_COMMANDS = {
    "train_cmds": [["train", "--config", "c.yaml", "--out", "m.pt"],
                   ["generate", "--model", "m.pt", "--factuals", "x.csv", "--out", "cf.csv"]],
    "eval_cmds": [["evaluate", "--model", "CT=m.pt", "--experiment", "single", "--out", "e.csv"],
                  ["robustness", "--model", "CT=m.pt", "--out", "r.csv"],
                  ["attribution", "--model", "CT=m.pt", "--out", "a.csv"]],
    "grid_cmds": [["grid", "run", "--grid", "tune", "--dataset", "lin_sep", "--baseline", "b.pt", "--point", "p",
                   "--out", "g.csv"]],
    "study_cmds": [["fidelity-effect", "--switch", "ip_star_per_run", "--out", "f.csv"],
                   ["consistency", "--dataset", "lin_sep", "--out", "c.csv"]],
}


@pytest.mark.parametrize("module,argv", [(m, a) for m, cmds in SEARCH_COMMANDS.items() for a in cmds],
                         ids=lambda v: v if isinstance(v, str) else " ".join(v[:2]))
def test_search_commands_call_it_first(module, argv, monkeypatch, tmp_path):
    import importlib

    monkeypatch.chdir(tmp_path)

    def called():
        raise Called

    monkeypatch.setattr(importlib.import_module(f"ctbench.cli.{module}"), "keep_freed_memory", called)
    with pytest.raises(Called):
        run(argv)


@pytest.mark.parametrize("module", ["report_cmds", "report_figure_cmds", "data_cmds", "figure_cmds"])
def test_report_data_and_figures_cannot_reach_it(module):
    """The report (and the data and figure commands) keep glibc's defaults: their code does not reach the module."""
    assert "ctbench.runtime" not in closure(f"ctbench.cli.{module}")
    assert "ctbench.runtime" in closure("ctbench.cli.eval_cmds")
