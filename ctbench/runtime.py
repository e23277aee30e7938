"""Process-wide settings for the commands that search counterfactuals: glibc keeps freed memory (issue 21).

glibc serves each block above its mmap threshold (adaptive, 32 MB at most) with a fresh ``mmap`` and unmaps it on
``free``; a counterfactual search allocates tensors of that size every step (LeNet: 5,000 × 6 × 28 × 28 floats), so
each step faults every page in again and up to 40% of a job's CPU was kernel time. Raising the mmap threshold and the
trim threshold keeps those blocks in the heap for the next step (``benchmarks/results/alloc-jobs-pair.md``). The
numbers do not change (the blocks' contents are written before they are read), only where the memory comes from.
Only the search-heavy commands call this; the report (many mid-sized frames, no search) would only grow.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)

#: glibc's ``mallopt`` parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
#: blocks below 1 GiB come from the heap; up to 1 GiB of free memory at its top is kept, not given back
SETTINGS = {M_MMAP_THRESHOLD: 1 << 30, M_TRIM_THRESHOLD: 1 << 30}
#: glibc's own variables for the same settings: where the user set one, the user's choice stands
USER_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_ARENA_MAX")

_state: dict[str, str] = {}


def _glibc_mallopt():
    """glibc's ``mallopt``, or None where the C library is not glibc (macOS, musl: no or a do-nothing mallopt)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
        return None
    fn = libc.mallopt
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return fn


def single_malloc_arena() -> str:
    """Every thread of this process allocates from glibc's main arena (``M_ARENA_MAX`` = 1), so that a search's
    worker threads (:mod:`ctbench.generators.row_chunks`) reuse the blocks that :func:`keep_freed_memory` keeps: a
    thread's own arena holds heaps of at most 64 MB, maps larger blocks afresh and unmaps emptied heaps, and faulted
    in LeNet's tensors at every step (sys time 0.35 → 1.6 s per chunk of one epoch, measured). It binds only threads
    that first allocate after the call, and numpy's import starts threads, so the command line calls it first of
    all. Returns ``"set"``, ``"user"`` (``MALLOC_ARENA_MAX`` is set: left alone) or ``"unavailable"``."""
    if "arena" in _state:
        return _state["arena"]
    mallopt = None if "MALLOC_ARENA_MAX" in os.environ else _glibc_mallopt()
    if "MALLOC_ARENA_MAX" in os.environ:
        outcome = "user"
    elif mallopt is not None and mallopt(M_ARENA_MAX, 1) == 1:
        outcome = "set"
    else:
        outcome = "unavailable"
        log.debug("no glibc mallopt, or it refused M_ARENA_MAX: threads keep their own arenas")
    _state["arena"] = outcome
    return outcome


def keep_freed_memory() -> str:
    """Keep freed blocks below 1 GiB in the heap for this process (glibc ``mallopt``); once per process, later calls
    return the first call's outcome. Returns ``"set"``, ``"user"`` (a ``MALLOC_*`` variable is set: left alone) or
    ``"unavailable"`` (not glibc: nothing changes, a debug message says why)."""
    if "outcome" in _state:
        return _state["outcome"]
    given = [v for v in USER_VARIABLES if v in os.environ]
    mallopt = None if given else _glibc_mallopt()
    if given:
        outcome = "user"
        log.debug("allocator left as set by %s", ", ".join(given))
    elif mallopt is None:
        outcome = "unavailable"
        log.debug("no glibc mallopt in this C library: allocator settings left at their defaults")
    elif all(mallopt(param, value) == 1 for param, value in SETTINGS.items()):
        outcome = "set"
    else:
        outcome = "unavailable"
        log.debug("glibc mallopt refused %s: allocator settings left at their defaults", SETTINGS)
    _state["outcome"] = outcome
    return outcome


__all__ = ["keep_freed_memory", "single_malloc_arena"]
