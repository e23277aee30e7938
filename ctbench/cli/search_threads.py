"""Each epoch's counterfactual search on several threads, the rest of training at the config's threads (issue 21).

The search of a LeNet CT epoch is most of the paper run's longest job. ``ctbench train --search-threads N`` splits
each epoch's search rows, and the rows of its prediction and accuracy passes, into N chunks run at once, each at one
intra-op thread (:mod:`ctbench.generators.row_chunks`); for LeNet every row then gets the bits of one thread,
so the model is the one-thread model bit for bit at any N (tested, and checked on the paper profile's 100-epoch
job: ``benchmarks/results/lenet-row-chunks.md``). An earlier version ran the search at N *intra-op* threads
instead; that split each operator's rows between threads, rounded differently, and ended a different model
(``benchmarks/results/lenet-threads-cpu2.md``). Only ``ctbench.cli.train_cmds`` imports this module.
"""

from __future__ import annotations

import contextlib

from ..errors import UserInputError


def check_search_threads(n) -> int | None:
    """``n`` as a positive int (``None``: the search runs unsplit at the config's ``threads``); bad input raises."""
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise UserInputError(f"--search-threads: expected a positive integer, got {n!r}")
    return n


@contextlib.contextmanager
def search_threads(n: int | None):
    """Within the block, every search and prediction pass that is not given its own ``workers`` (the trainer's
    per-epoch search, its prediction of the searched rows and its accuracy passes) splits its rows over ``n``
    threads (:func:`ctbench.generators.row_chunks.row_workers`); ``None``: unchanged."""
    n = check_search_threads(n)
    if n is None:
        yield
        return
    from ..generators.row_chunks import row_workers

    with row_workers(n):
        yield


__all__ = ["check_search_threads", "search_threads"]
