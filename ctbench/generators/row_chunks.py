"""One search's rows split into contiguous chunks, searched at once on several threads (issue 21).

Why: a search's rows never see each other (the loss is a sum over rows, finished rows retire), so a batch can be cut
into chunks and the chunks searched concurrently. Each chunk runs at **one** intra-op thread: PyTorch's own
threading splits an operator's rows between threads and rounds differently with the split, which made LeNet's
search at 2 intra-op threads differ from one thread by epoch 12 of a 100-epoch run; here every operator runs whole on
its chunk, on its own Python thread (ATen releases the GIL), and only the number of rows per operator changes. Where
a path's row bits do not depend on its batch's row count (LeNet's search by hand, :data:`.lenet_grad.MIN_GEMM_ROWS`;
tested), the result is that of the one-thread search of the whole batch, bit for bit, for any number of workers.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields

import torch
from torch import nn

from .result import CounterfactualResult

#: the fewest rows a chunk is given: below it a chunk's per-operator overhead outweighs its thread
MIN_CHUNK_ROWS = 64


_WORKERS: contextvars.ContextVar[int] = contextvars.ContextVar("ctbench_row_workers", default=1)


def check_workers(workers) -> int:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers: expected a positive integer, got {workers!r}")
    return workers


@contextlib.contextmanager
def row_workers(n: int):
    """Within the block, searches that are not given ``workers`` (and :func:`predict_row_chunks`) split their rows
    over ``n`` threads: how a command applies ``--search-threads`` to every search and forward pass it runs."""
    token = _WORKERS.set(check_workers(n))
    try:
        yield
    finally:
        _WORKERS.reset(token)


def current_workers() -> int:
    """The block's :func:`row_workers` (1 outside any)."""
    return _WORKERS.get()


def chunk_bounds(n: int, workers: int) -> list[tuple[int, int]]:
    """``workers`` contiguous (start, stop) ranges over ``n`` rows, as even as possible, none under
    :data:`MIN_CHUNK_ROWS` rows (fewer chunks where ``n`` is small)."""
    k = max(1, min(int(workers), n // MIN_CHUNK_ROWS))
    return [(i * n // k, (i + 1) * n // k) for i in range(k)]


def search_row_chunks(search: Callable[[torch.Tensor, torch.Tensor], CounterfactualResult], x: torch.Tensor,
                      target: torch.Tensor, workers: int = 1) -> CounterfactualResult:
    """``search(x, target)`` with the rows in up to ``workers`` chunks searched concurrently, each at one intra-op
    thread; ``workers`` = 1: one call, at the caller's threads. The threads allocate from glibc's main arena where
    :func:`ctbench.runtime.single_malloc_arena` ran before any thread started (a thread's own arena would map and
    fault in every step's tensors afresh: 40% more CPU, measured)."""
    bounds = chunk_bounds(x.shape[0], check_workers(workers))
    if len(bounds) == 1:
        return search(x, target)
    def chunk(ab: tuple[int, int]) -> CounterfactualResult:
        torch.set_num_threads(1)  # OpenMP's thread count is per thread: a new thread starts at the default
        return search(x[ab[0]:ab[1]], target[ab[0]:ab[1]])

    parts = _in_threads(chunk, bounds)
    return CounterfactualResult(**{f.name: torch.cat([getattr(p, f.name) for p in parts])
                                   for f in fields(CounterfactualResult)})


def _in_threads(fn, bounds):
    with ThreadPoolExecutor(max_workers=len(bounds), thread_name_prefix="ctbench-search") as pool:
        return list(pool.map(fn, bounds))


@torch.no_grad()
def predict_row_chunks(model: nn.Module, x: torch.Tensor, workers: int | None = None) -> torch.Tensor:
    """``model(x).argmax(1)`` with the rows in up to ``workers`` chunks (None: :func:`current_workers`), each at
    one intra-op thread on its own thread: the same labels as one pass wherever the model's row bits do not depend
    on the batch (LeNet's convolutions and, from 4 rows up, its linear layers)."""
    bounds = chunk_bounds(x.shape[0], check_workers(current_workers() if workers is None else workers))
    if len(bounds) == 1:
        return model(x).argmax(1)

    def chunk(ab: tuple[int, int]) -> torch.Tensor:
        torch.set_num_threads(1)
        with torch.no_grad():
            return model(x[ab[0]:ab[1]]).argmax(1)

    return torch.cat(_in_threads(chunk, bounds))


__all__ = ["MIN_CHUNK_ROWS", "check_workers", "chunk_bounds", "current_workers", "predict_row_chunks", "row_workers",
           "search_row_chunks"]
