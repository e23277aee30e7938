"""Convolution primitives are not cached per batch shape in the training commands (issue 21, LeNet CT's memory).

PyTorch's CPU convolutions (oneDNN through ideep) keep every primitive they build in two caches keyed by the input's
shape: oneDNN's primitive cache (1,024 entries) and ideep's LRU cache (1,024 entries). A counterfactual search
retires its finished rows every step, so nearly every step of every epoch runs the convolutions at a new batch size:
each new size leaves ≈ 300 KB of cache entries in ≈ 100 small blocks for the rest of the process. Under
:func:`ctbench.runtime.keep_freed_memory` those long-lived blocks land between the search's large freed blocks in
the heap and pin them apart, so the heap grows epoch after epoch (LeNet CT: 1.7 GB after one epoch, 3.75 GB after
100; ``benchmarks/results/lenet-mem.md``). Without the caches each primitive is built and freed within its call:
the heap stays flat, the numbers are bitwise the same (the same primitive is built again) and building costs are
within the noise of a LeNet epoch. Both libraries read these variables once, at their first convolution: call this
before any convolution runs in the process.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

#: oneDNN's primitive cache off; ideep's LRU cache at one entry (its capacity 0 crashes PyTorch 2.x)
SETTINGS = {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "0", "LRU_CACHE_CAPACITY": "1"}
#: variables for the same caches: where the user set one, the user's choice stands (DNNL_ is oneDNN's old prefix)
USER_VARIABLES = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "DNNL_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")

_state: dict[str, str] = {}


def no_shape_caches() -> str:
    """Turn off the per-shape convolution caches for this process (and its children) by their environment
    variables; once per process, later calls return the first call's outcome. Returns ``"set"`` or ``"user"`` (one
    of :data:`USER_VARIABLES` is set: left alone)."""
    if "outcome" in _state:
        return _state["outcome"]
    given = [v for v in USER_VARIABLES if v in os.environ]
    if given:
        outcome = "user"
        log.debug("convolution primitive caches left as set by %s", ", ".join(given))
    else:
        os.environ.update(SETTINGS)
        outcome = "set"
    _state["outcome"] = outcome
    return outcome


__all__ = ["no_shape_caches"]
