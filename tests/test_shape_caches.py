"""ctbench.shape_caches.no_shape_caches: the training commands build convolution primitives without keeping them per
batch shape (issue 21, LeNet CT's memory), once per process, the user's own cache variables left alone."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ctbench import shape_caches
from ctbench.cli import run


@pytest.fixture
def fresh(monkeypatch):
    """A process that has not called no_shape_caches yet and has none of the cache variables set; whatever the call
    sets is undone afterwards (setenv first, so that monkeypatch restores the variables' absence)."""
    monkeypatch.setattr(shape_caches, "_state", {})
    for v in {*shape_caches.USER_VARIABLES, *shape_caches.SETTINGS}:
        monkeypatch.setenv(v, "")
        monkeypatch.delenv(v)


def test_sets_both_caches_once(fresh, monkeypatch):
    assert shape_caches.no_shape_caches() == "set"
    assert {v: os.environ.get(v) for v in shape_caches.SETTINGS} == shape_caches.SETTINGS
    monkeypatch.setenv("LRU_CACHE_CAPACITY", "7")
    assert shape_caches.no_shape_caches() == "set"  # idempotent: the first outcome, nothing set again
    assert os.environ["LRU_CACHE_CAPACITY"] == "7"


@pytest.mark.parametrize("variable", shape_caches.USER_VARIABLES)
def test_user_variables_win(fresh, monkeypatch, variable):
    monkeypatch.setenv(variable, "64")
    assert shape_caches.no_shape_caches() == "user"
    assert os.environ[variable] == "64"
    assert [v for v in shape_caches.SETTINGS if v != variable and v in os.environ] == []  # nothing set beside it


class Called(Exception):
    """Raised by the stand-in for no_shape_caches: the command reached it before reading its inputs."""


@pytest.mark.parametrize("module,argv", [
    ("train_cmds", ["train", "--config", "c.yaml", "--out", "m.pt"]),
    ("train_cmds", ["generate", "--model", "m.pt", "--factuals", "x.csv", "--out", "cf.csv"]),
    ("eval_cmds", ["evaluate", "--model", "ct=m.pt", "--experiment", "single", "--out", "e.parquet"]),
], ids=lambda a: a[0] if isinstance(a, list) else None)
def test_searching_commands_call_it_first(module, argv, monkeypatch, tmp_path):
    """Before any model or data is loaded (so before the first convolution, when the libraries read the variables):
    the inputs named here do not exist, so the command would fail if it got further. ``evaluate`` runs LeNet's
    searches in the LeNet stage."""
    import importlib

    cmds = importlib.import_module(f"ctbench.cli.{module}")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cmds, "keep_freed_memory", lambda: "set")

    def called():
        raise Called

    monkeypatch.setattr(cmds, "no_shape_caches", called)
    with pytest.raises(Called):
        run(argv)


# LeNet's forward and input gradient (what a search step runs) at 40 batch sizes, as a search whose rows retire; the
# heap's bytes in use (glibc mallinfo2) after the first size and after the last.
SHAPES = textwrap.dedent("""
    import ctypes, json, sys
    if sys.argv[1] == "off":
        from ctbench.shape_caches import no_shape_caches
        no_shape_caches()
    import torch
    from ctbench.models import LeNet

    class Info(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                    "fsmblks", "uordblks", "fordblks", "keepcost")]
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Info
    torch.set_num_threads(1)
    model = LeNet(generator=torch.Generator().manual_seed(0))
    used = []
    for b in range(60, 20, -1):
        x = torch.zeros(b, 784, requires_grad=True)
        model(x).sum().backward()
        del x
        used.append(libc.mallinfo2().uordblks)
    print(json.dumps({"growth_kb": (used[-1] - used[0]) / 1024}))
""")


def _heap_growth_kb(mode: str) -> float:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    for v in {*shape_caches.USER_VARIABLES, *shape_caches.SETTINGS}:
        env.pop(v, None)
    out = subprocess.run([sys.executable, "-c", SHAPES, mode], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["growth_kb"]


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallinfo2 is glibc's")
def test_new_batch_sizes_leave_nothing_in_the_heap():
    """The mechanism in a fresh process: with the caches, every new batch size leaves ≈ 300 KB of entries for good
    (the blocks that fragmented LeNet CT's heap); without them, the heap in use returns to where it was."""
    kept, off = _heap_growth_kb("kept"), _heap_growth_kb("off")
    assert kept > 39 * 100, f"the per-shape caches should grow ≥ 100 KB a shape here, grew {kept:.0f} KB"
    assert off < 512, f"without the caches the heap in use grew {off:.0f} KB over 39 new batch sizes"
