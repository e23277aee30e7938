"""Each epoch's counterfactual search on several threads, the rest of training at the config's threads (issue 21).

The search of a LeNet CT epoch is most of the paper run's longest job. ``ctbench train --search-threads N`` splits
each epoch's search rows, and the rows of its prediction and accuracy passes, into N chunks run at once, each at one
intra-op thread (:mod:`ctbench.generators.row_chunks`); for LeNet every row then gets the bits of one thread,
so the model is the one-thread model bit for bit at any N (tested, and checked on the paper profile's 100-epoch
job: ``benchmarks/results/lenet-row-chunks.md``). An earlier version ran the search at N *intra-op* threads
instead; that split each operator's rows between threads, rounded differently, and ended a different model
(``benchmarks/results/lenet-threads-cpu2.md``). The command line (``train_cmds``, ``eval_cmds``) is its only user,
so it lives here, above ``generators`` (it was in ``training/`` up to stop 43).
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


def unsplit_search_note(config: dict, n: int | None) -> str | None:
    """A note for ``--search-threads n`` (n > 1) on a model whose epoch search runs in one chunk: REVISE's latent
    encoding draws from one random stream in row order, so its search is not split (only the prediction and accuracy
    passes are); ``None`` where the search is split."""
    kind = str(((config or {}).get("generator") or {}).get("type", "")).lower()
    if n is None or n <= 1 or kind != "revise":
        return None
    return (f"note: --search-threads {n}: generator 'revise' searches each epoch's rows in one chunk (its latent "
            "draws are one random stream, kept in row order); only the prediction and accuracy passes are split")


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


__all__ = ["check_search_threads", "search_threads", "unsplit_search_note"]
