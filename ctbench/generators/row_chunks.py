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

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields

import torch

from .result import CounterfactualResult

#: the fewest rows a chunk is given: below it a chunk's per-operator overhead outweighs its thread
MIN_CHUNK_ROWS = 64


def chunk_bounds(n: int, workers: int) -> list[tuple[int, int]]:
    """``workers`` contiguous (start, stop) ranges over ``n`` rows, as even as possible, none under
    :data:`MIN_CHUNK_ROWS` rows (fewer chunks where ``n`` is small)."""
    k = max(1, min(int(workers), n // MIN_CHUNK_ROWS))
    return [(i * n // k, (i + 1) * n // k) for i in range(k)]


def search_row_chunks(search: Callable[[torch.Tensor, torch.Tensor], CounterfactualResult], x: torch.Tensor,
                      target: torch.Tensor, workers: int = 1) -> CounterfactualResult:
    """``search(x, target)`` with the rows in up to ``workers`` chunks searched concurrently, each at one intra-op
    thread; ``workers`` = 1: one call, at the caller's threads. The threads allocate from glibc's main arena where
    :func:`ctbench.runtime.keep_freed_memory` ran first (a thread's own arena would map and fault in every step's
    tensors afresh: 40% more CPU, measured)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers: expected a positive integer, got {workers!r}")
    bounds = chunk_bounds(x.shape[0], workers)
    if len(bounds) == 1:
        return search(x, target)
    def chunk(ab: tuple[int, int]) -> CounterfactualResult:
        torch.set_num_threads(1)  # OpenMP's thread count is per thread: a new thread starts at the default
        return search(x[ab[0]:ab[1]], target[ab[0]:ab[1]])

    with ThreadPoolExecutor(max_workers=len(bounds), thread_name_prefix="ctbench-search") as pool:
        parts = list(pool.map(chunk, bounds))
    return CounterfactualResult(**{f.name: torch.cat([getattr(p, f.name) for p in parts])
                                   for f in fields(CounterfactualResult)})


__all__ = ["MIN_CHUNK_ROWS", "chunk_bounds", "search_row_chunks"]
