"""Each epoch's counterfactual search at its own intra-op thread count, the rest of training at the config's.

The search of a LeNet CT epoch (94% of its time, issue 21) was measured to give the same counterfactuals at 1-16
threads on the first epochs' shapes (oneDNN's convolutions and max-pooling partition the rows of the batch, the input
gradient is reduced per row; ``benchmarks/results/lenet-search-threads.md``), while the weight gradient is not (its
reduction over the batch splits by thread); hence the search alone at several threads. **Not bitwise over a whole
run:** the paper profile's LeNet CT job (100 epochs) with its search at 2 threads first differs from the one-thread
model in epoch 12's loss (6e-7 relative) and ends a different model, whose report rows move
(``benchmarks/results/lenet-threads-cpu2.md``, 2026-11-28). So ``--search-threads`` is a speed setting that moves
numbers, and ``lenet.search_threads`` stays null in the committed profile. ``ctbench train --search-threads N`` uses
this; only ``ctbench.cli.train_cmds`` imports this module, so the other commands' code fingerprints do not see it.
(The option's help text still says "bit for bit"; it is in ``train_cmds``'s fingerprint, so its correction waits for
the next regeneration of the training stages.)
"""

from __future__ import annotations

import contextlib
import functools

import torch

from ..errors import UserInputError


def check_search_threads(n) -> int | None:
    """``n`` as a positive int (``None``: the search runs at the config's ``threads``); bad input raises."""
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise UserInputError(f"--search-threads: expected a positive integer, got {n!r}")
    return n


@contextlib.contextmanager
def search_threads(n: int | None):
    """Within the block, :func:`.trainer.generate_epoch_counterfactuals` (the single-model trainer's per-epoch
    search) runs at ``n`` threads and restores the previous count after each call; ``None``: unchanged."""
    n = check_search_threads(n)
    if n is None:
        yield
        return
    from . import trainer

    inner = trainer.generate_epoch_counterfactuals

    @functools.wraps(inner)
    def at_n_threads(*args, **kwargs):
        before = torch.get_num_threads()
        torch.set_num_threads(n)
        try:
            return inner(*args, **kwargs)
        finally:
            torch.set_num_threads(before)

    trainer.generate_epoch_counterfactuals = at_n_threads
    try:
        yield
    finally:
        trainer.generate_epoch_counterfactuals = inner


__all__ = ["check_search_threads", "search_threads"]
