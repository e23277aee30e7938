"""The feature-space search of :mod:`.base` for plain MLP/linear models, without autograd (same results).

The per-row rules (stop, nascent ball, L1 cost, update, domain) are :class:`.step.StepRule`'s; this module is a
batching strategy and a gradient.

Why: at search sizes the step is bound by passes over the (batch × D) state and autograd overhead, not by FLOPs.
Here the gradient comes from :mod:`.mlp_grad` (two matrix products per layer), the update
x' ← x' − η·(∇ + λ·sign(x' − x)) is one ``addmm`` and one ``add`` into reused buffers, and:

* the batch is searched in chunks of rows that stay in cache (rows are independent, so this changes nothing);
* the nascent example is kept lazily: the previous point is copied only for rows that just left the ε-ball;
* finished rows are recorded at the step they finish and then frozen in place; they are compacted away only
  once they are a sizeable share of the chunk;
* a step whose dL/dlogits is not finite is redone with autograd on the model (the reference's NaN → 0 rule).
"""

from __future__ import annotations

import contextlib
import math
import threading

import torch
import torch.nn.functional as F

from .mlp_grad import Layers, first_layer_grad, forward
from .result import CounterfactualResult
from .step import StepRule, move

_CACHE_BYTES = 64 << 20  # a CPU workspace up to this size is kept for the next call
_cache: dict = {}
_cache_lock = threading.Lock()
COMPACT_SHARE = 0.25  # compact once this share of a chunk's rows has finished
CHUNK_FLOATS = 3 << 18  # at most this / (D + hidden widths) rows per chunk: the working set stays in cache


def chunk_rows(n: int, n_features: int, layers: Layers) -> int:
    """Rows per chunk: as even as possible, at most ``CHUNK_FLOATS / width`` but at least 1024 (per-step overhead)."""
    width = n_features + sum(int(w.shape[-1]) for w, _ in layers[:-1])
    chunks = max(1, -(-n // max(1024, CHUNK_FLOATS // width)))
    return max(1, -(-n // chunks))


def search_mlp(gen, model, layers: Layers, x, target, cons, conv, rows: int | None = None):
    """:meth:`.base.GradientGenerator.search` (``gen``) in feature space for a model with
    ``mlp_layers(model) == layers``."""
    B = x.shape[0]
    zeros = [torch.zeros(B, dtype=d, device=x.device) for d in (torch.bool, torch.long, x.dtype, torch.bool)]
    res = CounterfactualResult(x, target, torch.empty_like(x), torch.empty_like(x), *zeros)
    n = rows or chunk_rows(B, x.shape[1], layers)
    with torch.no_grad(), _workspace(min(n, B), x) as work:
        for a in range(0, B, n):
            part = res.select(slice(a, a + n))  # views: the chunk writes its rows of ``res``
            _search_chunk(gen, model, layers, part, cons, conv, [w[:part.factual.shape[0]] for w in work])
    return res


@contextlib.contextmanager
def _workspace(rows: int, x: torch.Tensor):
    """Three (rows, D) buffers; on CPU reused from call to call (fresh memory costs a page fault per 4 KiB, ~10% of
    a 1k-row search), except in concurrent calls."""
    shape = (rows, x.shape[1])
    small = 4 * x.element_size() * rows * x.shape[1] <= _CACHE_BYTES
    if x.device.type != "cpu" or not small or not _cache_lock.acquire(blocking=False):
        yield [torch.empty(shape, dtype=x.dtype, device=x.device) for _ in range(3)]
        return
    try:
        bufs = _cache.get("work")
        if bufs is None or bufs[0].dtype != x.dtype or bufs[0].shape[1] != shape[1] or bufs[0].shape[0] < rows:
            _cache.clear()
            bufs = _cache["work"] = [torch.empty(shape, dtype=x.dtype) for _ in range(3)]
        yield [b[:rows] for b in bufs]
    finally:
        _cache_lock.release()


def _autograd_grad(gen, model, cur, x0, y, t, T):
    with torch.enable_grad():
        s = cur.detach().requires_grad_(True)
        logits = model(s)
        loss = F.cross_entropy(logits, y, reduction="none") + gen.penalty(s, logits, x0, y, t, T)
        (g,) = torch.autograd.grad(loss.sum(), s)
    return g


def _search_chunk(gen, model, layers, res: CounterfactualResult, cons, conv, work: list[torch.Tensor]):
    x, target = res.factual, res.target
    rule = StepRule.of(gen, conv)
    B, T, threshold = x.shape[0], rule.max_iter, rule.threshold
    eta, lam = rule.eta, rule.lam
    codes = cons.codes(x.device)
    lo, hi = cons.row_bounds(x, codes)
    per_row_bounds = lo is not None and lo.ndim == 2
    plain = (not gen.replaces("direction") and codes is None and not cons.categorical_groups
             and not gen.replaces("postprocess"))
    w1 = layers[0][0].t()  # (H, D): ∇ₓ = (dL/dh₁) @ w1
    penalised = gen.replaces("target_logit_grad")
    minus_one = torch.full((1, 1), -1.0, dtype=x.dtype, device=x.device)

    out_cf, out_nascent, out_mature, out_steps = res.counterfactual, res.nascent, res.mature, res.steps
    out_prob, initially_valid = res.prob_target, res.initially_valid

    idx = torch.arange(B, device=x.device)  # chunk row of each row still in the tensors below
    x0, y = x, target[None]  # y: (1, n), as the class-major logits (K, n)
    # path points t and t − 1 (point 0 is x itself; point t + 1 goes to a buffer that is neither), x' − x (then
    # |x' − x|), sign(x' − x). A row's nascent example is written to the output when it leaves the ball.
    cur, prev = x, None
    bufs, diff, sgn = work[:2], work[2], None
    inside = torch.ones(B, dtype=torch.bool, device=x.device)  # point t lies in the ball (point 0 = factual)
    dead = None  # finished rows not yet compacted away (frozen)
    t = 0
    while True:
        logits, acts = forward(cur, layers)
        coef = gen.target_logit_grad(logits.gather(0, y), t, T) if penalised else None
        dz = torch.softmax(logits, 0)  # becomes dL/dlogits: softmax − onehot + ∂pen/∂logit[y⁺]
        p = dz.gather(0, y)[0] if threshold or t >= T else None
        dz.scatter_add_(0, y, coef - 1.0 if coef is not None else minus_one.expand(y.shape))
        if t > 0:
            torch.sub(cur, x0, out=diff)
            # max |x' − x| as max(max, −min): two reads instead of an abs pass; then diff becomes sign(x' − x) in
            # place (one buffer fewer in cache) and the update accumulates into it
            now_in = rule.in_ball(diff)
            if lam != 0.0:
                sgn = diff.sign_()
            left = inside > now_in if dead is None else (inside > now_in) > dead  # frozen rows keep their outputs
            if bool(left.any()):
                left = left.nonzero()[:, 0]
                out_nascent[idx[left]] = prev[left]
            inside = now_in
        if threshold:
            passed = rule.passed(p)
            if t == 0:
                initially_valid[idx] = passed
            finish = rule.finished(passed, t)
        else:
            finish = None if t < T else torch.ones_like(inside)
        if finish is not None and dead is not None:
            finish = finish > dead
        if finish is not None and bool(finish.any()):
            rows, done = idx[finish], cur[finish]
            out_cf[rows] = done
            fin_in = finish & inside
            out_nascent[idx[fin_in]] = cur[fin_in]
            out_steps[rows] = t
            out_prob[rows] = p[finish]
            out_mature[rows] = True if rule.lenient else passed[finish]  # rule.mature(passed), p unset if lenient
            dead = finish if dead is None else dead | finish
            n_dead = int(dead.sum())
            if n_dead == dead.shape[0]:
                break
            if n_dead >= COMPACT_SHARE * dead.shape[0]:
                keep = ~dead
                cur, x0, idx, inside, sgn = (v[keep] for v in (cur, x0, idx, inside, diff))  # diff holds the sign
                y, dz, diff = y[:, keep], dz[:, keep], torch.empty_like(cur)
                acts = [a[keep] for a in acts]
                if per_row_bounds:
                    lo, hi = lo[keep], hi[keep]
                prev, dead = None, None

        finite = math.isfinite(dz.sum().item())  # NaN or ±inf anywhere (or an overflowing sum: autograd then)
        l1 = lam != 0.0 and t > 0  # at t = 0, x' = x and sign(0) = 0
        if plain and finite:
            nxt = next((b for b in (prev, *bufs) if b is not None and b is not cur and b is not x
                        and b.shape == cur.shape), None)
            nxt = torch.empty_like(cur) if nxt is None else nxt
            h1 = first_layer_grad(dz, layers, acts)
            if l1:  # x' − η·(∇ + λ·sign), rounded in the order of the autograd path (rule.add_cost, fused_move)
                rule.fused_move(cur, sgn.addmm_(h1, w1, beta=lam), out=nxt)
            else:
                torch.addmm(cur, h1, w1, alpha=-eta, out=nxt)
            if lo is not None:
                nxt.clamp_(lo, hi)
        else:
            grad = (first_layer_grad(dz, layers, acts) @ w1 if finite
                    else _autograd_grad(gen, model, cur, x0, y[0], t, T))
            if l1:
                grad = rule.add_cost(grad, sgn)
            delta = rule.finite_delta(gen.direction(grad), finite)
            nxt = gen.postprocess(move(cur, delta, cons, codes), x0, cons, codes, lo, hi)
        if dead is not None:
            nxt[dead] = cur[dead]
        prev, cur = cur, nxt
        t += 1
