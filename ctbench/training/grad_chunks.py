"""One mini-batch's loss and weight gradients over fixed row chunks, summed in a fixed order (issue 21).

Why: a weight gradient sums over the batch's rows, and PyTorch splits that sum between its intra-op threads, so the
model changes with the thread count. Here the batch (and its counterfactual tuples) is cut into
``training.grad_chunks`` contiguous chunks, fixed by the setting alone; each chunk's loss share and gradients are
computed at **one** intra-op thread, on a thread of its own where :func:`ctbench.generators.row_chunks.row_workers`
gives several, and the chunks' gradients are added in chunk order. The bits then depend on ``grad_chunks``, not on
the workers or the thread count: LeNet CT's weight update, half its 100-epoch job, runs on as many cores as the
search's row chunks. ``grad_chunks`` = 1 (the default) is the whole-batch step, untouched. A different summation
order moves the model's bits once (a new setting, recorded in every result's config).
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn

from ..generators.row_chunks import current_workers
from .objectives import CounterfactualGroup, Objective


def even_bounds(n: int, k: int) -> list[tuple[int, int]]:
    """``k`` contiguous (start, stop) ranges over ``n`` rows, as even as possible (some empty where n < k)."""
    return [(i * n // k, (i + 1) * n // k) for i in range(k)]


def _group_rows(group: CounterfactualGroup, a: int, z: int) -> CounterfactualGroup:
    return CounterfactualGroup(group.x_cf[a:z], group.x_ae[a:z], group.target[a:z], group.x_plus[a:z],
                               group.y_ae[a:z])


@contextlib.contextmanager
def _one_intra_op_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def chunked_loss_and_grads(objective: Objective, model: nn.Module, xb: torch.Tensor, yb: torch.Tensor,
                           group: CounterfactualGroup | None, chunks: int, workers: int | None = None,
                           ) -> tuple[torch.Tensor, dict[str, torch.Tensor], list[torch.Tensor]]:
    """(loss, parts, one gradient per parameter that requires one, None where unused) of ``objective`` on the
    mini-batch, as the sums over ``chunks`` row chunks in chunk order: the whole-batch values up to rounding, and
    the same bits for any ``workers`` (None: :func:`~ctbench.generators.row_chunks.current_workers`), each chunk at
    one intra-op thread."""
    params = [p for p in model.parameters() if p.requires_grad]
    n, m = xb.shape[0], 0 if group is None else len(group)
    row_bounds, tuple_bounds = even_bounds(n, chunks), even_bounds(m, chunks)

    def chunk(i: int) -> tuple[torch.Tensor, dict[str, torch.Tensor], tuple[torch.Tensor, ...]]:
        (a, z), (c, d) = row_bounds[i], tuple_bounds[i]
        sub = None if group is None else _group_rows(group, c, d)
        with _one_intra_op_thread():  # a worker thread starts at OpenMP's default count, the caller at its own
            loss, parts = objective(model, xb[a:z], yb[a:z], sub, counts=(n, m))
            grads = torch.autograd.grad(loss, params, allow_unused=True)
        return loss.detach(), {k: v.detach() for k, v in parts.items()}, grads

    workers = min(chunks, current_workers() if workers is None else workers)
    if workers == 1:
        results = [chunk(i) for i in range(chunks)]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ctbench-grad") as pool:
            results = list(pool.map(chunk, range(chunks)))
    loss, parts, grads = results[0][0], dict(results[0][1]), list(results[0][2])
    for c_loss, c_parts, c_grads in results[1:]:
        loss = loss + c_loss
        for k, v in c_parts.items():
            parts[k] = parts[k] + v
        grads = [g if h is None else (h if g is None else g + h) for g, h in zip(grads, c_grads, strict=True)]
    return loss, parts, grads


__all__ = ["chunked_loss_and_grads", "even_bounds"]
