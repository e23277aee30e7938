"""The mini-batch loss of a population and its gradient with respect to the stacked weights, without autograd.

Why: a population step on small models (LS: 9 members × 2-32-2, batches of 30) is bound by per-operation overhead,
and autograd adds its own — graph recording in the forward pass, ~30 engine nodes, zero-filled slice gradients
summed in the backward pass. :func:`batch_forward` computes the loss under ``no_grad`` and keeps what the gradient
needs; :func:`batch_grad` then applies, node by node, the very backward formulas autograd would (the same ATen
kernels on tensors of the same shapes and strides), so the gradient is bitwise that of :func:`batch_loss`, the
autograd reference kept for the test that checks it (``tests/test_population_loss.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


def _inputs(run, i: int, order, cf):
    """Mini-batch ``i``'s rows, labels, row mask and counterfactual tuples (a slice, or a gather when they differ)."""
    G, b, dev = run.G, run.b, run.X.device
    a = i * b
    if run.shared and order is None:
        z = min(a + b, run.N)
        xb, yb = run.X[a:z].expand(G, -1, -1), run.y[a:z].expand(G, -1)
        bmask = None
    else:
        src = run.index if order is None else order
        z = min(a + b, src.shape[1])
        rows = src[:, a:z]
        xb, yb = run.X[rows], run.y[rows]
        bmask = (torch.arange(a, z, device=dev)[None, :] < run.n_rows_t[:, None])
    m = 0 if cf is None else int(cf["m_max"][i])
    tuples = None
    if m:
        if cf["full"]:
            a = cf["start"][i]
            x_ae, x_cf, x_plus = (cf[k][:, a:a + m] for k in ("x_ae", "x_cf", "x_plus"))
            t, y_ae, cmask = cf["target"][:, a:a + m], cf["y_ae"][:, a:a + m], None
        else:
            idx = cf["index"][:, i, :m]
            x_ae, x_cf, x_plus = (cf[k].gather(1, idx[..., None].expand(-1, -1, cf[k].shape[-1]))
                                  for k in ("x_ae", "x_cf", "x_plus"))
            t, y_ae, cmask = cf["target"].gather(1, idx), cf["y_ae"].gather(1, idx), cf["mask"][:, i, :m]
        tuples = (x_ae, x_cf, x_plus, t, y_ae, cmask)
    return xb, yb, bmask, m, tuples


def batch_loss(run, i: int, order, cf):
    """Total loss (G,), parts (G, 4: clf, div, reg, adv) and which parts exist (G, 4), through autograd on
    ``run.leaves`` (the reference for :func:`batch_forward` + :func:`batch_grad`)."""
    G = run.G
    xb, yb, bmask, m, tuples = _inputs(run, i, order, cf)
    nb = xb.shape[1]
    if m:
        x_ae, x_cf, x_plus, t, y_ae, cmask = tuples
        logits = run.stack(torch.cat([xb, x_ae, x_cf, x_plus], 1), run.leaves)  # one pass for all four
        lb, lae, lt = logits[:, :nb], logits[:, nb:nb + m], logits[:, nb + m:]
    else:
        lb = run.stack(xb, run.leaves)
    K = lb.shape[-1]
    ce = F.cross_entropy(lb.reshape(-1, K), yb.reshape(-1), reduction="none").view(G, nb)
    clf = ce.mean(1) if bmask is None else torch.where(bmask, ce, 0.0).sum(1) / bmask.sum(1).clamp(min=1)
    if not m:
        parts = torch.stack([clf, *(torch.full_like(clf, float("nan")),) * 3], 1)
        return run.lam4[:, 0] * clf, parts, run.clf_only
    f = lt.gather(2, t.repeat(1, 2)[..., None]).squeeze(2)  # f(x')[y⁺] then f(x⁺)[y⁺]: (G, 2m)
    f_cf, f_plus = f[:, :m], f[:, m:]
    adv = F.cross_entropy(lae.reshape(-1, K), y_ae.reshape(-1), reduction="none").view(G, m)
    per_tuple = torch.stack([f_cf - f_plus, f_cf.square() + f_plus.square(), adv], 2)  # div, reg, adv
    if cmask is None:
        tup = per_tuple.mean(1)
        have = run.all_parts
    else:
        tup = torch.where(cmask[..., None], per_tuple, 0.0).sum(1) / cmask.sum(1).clamp(min=1)[:, None]
        have = torch.cat([run.clf_only[:, :1], cmask.any(1)[:, None].expand(G, 3)], 1)
    parts = torch.cat([clf[:, None], tup], 1)
    total = torch.where(run.use4 & have, run.lam4 * parts, 0.0).sum(1)
    return total, parts, have


@dataclass
class Tape:
    """What :func:`batch_grad` needs from :func:`batch_forward`."""

    acts: list          # the input of every layer: the batch, then each ReLU output
    nb: int
    m: int
    ls: torch.Tensor    # log-softmax of the rows with a cross-entropy (batch, then x_ae), (G·(nb + m), K)
    target: torch.Tensor
    bmask: torch.Tensor | None
    have: torch.Tensor
    f: torch.Tensor | None = None      # (G, 2, m): f(x')[y⁺], f(x⁺)[y⁺]
    t_index: torch.Tensor | None = None
    cmask: torch.Tensor | None = None


def _ce(logits2d: torch.Tensor, target: torch.Tensor):
    """F.cross_entropy(reduction='none') as ATen computes it (log-softmax, then NLL), keeping the log-softmax."""
    ls = torch.log_softmax(logits2d, 1)
    return F.nll_loss(ls, target, reduction="none"), ls


def batch_forward(run, i: int, order, cf):
    """(total, parts, have, tape): the values of :func:`batch_loss` (same operations, no autograd graph).

    The two cross-entropies (batch rows, then x_ae rows: adjacent in the logits) are one log-softmax and one NLL
    over both row sets; both are row by row, so every value is the same."""
    G = run.G
    xb, yb, bmask, m, tuples = _inputs(run, i, order, cf)
    nb = xb.shape[1]
    with torch.no_grad():
        h = xb if not m else torch.cat([xb, *tuples[:3]], 1)
        acts, last = [h], len(run.wb) - 1
        for j, (w, b) in enumerate(run.wb):
            h = torch.baddbmm(b, h, w)
            if j < last:
                h = torch.relu(h)
                acts.append(h)
        logits = h
        K = logits.shape[-1]
        target = yb if not m else torch.cat([yb, tuples[4]], 1)
        ce, ls = _ce(logits[:, :nb + m].reshape(-1, K), target.reshape(-1))
        ce = ce.view(G, nb + m)
        ce_b = ce[:, :nb]
        clf = ce_b.mean(1) if bmask is None else torch.where(bmask, ce_b, 0.0).sum(1) / bmask.sum(1).clamp(min=1)
        tape = Tape(acts, nb, m, ls, target.reshape(-1), bmask, run.clf_only)
        if not m:
            parts = torch.stack([clf, *(torch.full_like(clf, float("nan")),) * 3], 1)
            return run.lam4[:, 0] * clf, parts, run.clf_only, tape
        t, cmask = tuples[3], tuples[5]
        # f(x')[y⁺] and f(x⁺)[y⁺] in one gather over a (G, 2, m, K) view (no repeated index)
        t_index = t[:, None, :, None].expand(G, 2, m, 1)
        f = logits[:, nb + m:].view(G, 2, m, K).gather(3, t_index).squeeze(3)
        f_cf, f_plus = f[:, 0], f[:, 1]
        per_tuple = torch.stack([f_cf - f_plus, f_cf.square() + f_plus.square(), ce[:, nb:]], 2)
        if cmask is None:
            tup = per_tuple.mean(1)
            have, use = run.all_parts, run.use_all
        else:
            tup = torch.where(cmask[..., None], per_tuple, 0.0).sum(1) / cmask.sum(1).clamp(min=1)[:, None]
            have = torch.cat([run.clf_only[:, :1], cmask.any(1)[:, None].expand(G, 3)], 1)
            use = run.use4 & have
        parts = torch.cat([clf[:, None], tup], 1)
        total = torch.where(use, run.lam4 * parts, 0.0).sum(1)
        tape.f, tape.t_index, tape.cmask, tape.have = f, t_index, cmask, have
        return total, parts, have, tape


def _ce_backward(g: torch.Tensor, ls: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """NllLossBackward (reduction none: −g at the target) then LogSoftmaxBackward, as autograd runs them."""
    g_ls = torch.zeros_like(ls).scatter_(1, target[:, None], g.reshape(-1, 1).neg())
    return torch._log_softmax_backward_data(g_ls, ls, 1, ls.dtype)


def _upper_grads(run, tape: Tape, g_total: torch.Tensor | None):
    """∂/∂ce of the batch and x_ae rows (G, nb + m), ∂/∂div and ∂/∂reg per tuple (G, m) (autograd's Sum, Where,
    Mul, Cat, Mean/Div, Stack backward). ``g_total`` None: every member's total with weight 1 and all parts present
    — then they depend only on (nb, m) and are computed once."""
    G, nb, m = run.G, tape.nb, tape.m
    key = (nb, m)
    fast = g_total is None and tape.bmask is None and tape.cmask is None
    if fast and key in run.upper_cache:
        return run.upper_cache[key]
    g_total = run.ones_g if g_total is None else g_total
    if not m:  # total = λ_clf·clf
        g_clf = g_total * run.lam4[:, 0]
    else:  # total = Σ where(use & have, λ·parts, 0)
        g_parts = torch.where(run.use4 & tape.have, g_total[:, None].expand(G, 4), 0.0) * run.lam4
        g_clf, g_tup = g_parts[:, 0], g_parts[:, 1:]
    if tape.bmask is None:  # clf = mean(ce)
        g_ce = g_clf[:, None].expand(G, nb) / nb
    else:                   # clf = Σ where(bmask, ce, 0) / count
        g_ce = torch.where(tape.bmask, (g_clf / tape.bmask.sum(1).clamp(min=1))[:, None].expand(G, nb), 0.0)
    out = (g_ce, None, None)
    if m:
        if tape.cmask is None:  # tup = mean over the tuples
            g_per = g_tup[:, None, :].expand(G, m, 3) / m
        else:
            cnt = tape.cmask.sum(1).clamp(min=1)[:, None]
            g_per = torch.where(tape.cmask[..., None], (g_tup / cnt)[:, None, :].expand(G, m, 3), 0.0)
        g_div, g_reg, g_adv = g_per.unbind(2)
        out = (torch.cat([g_ce, g_adv], 1), g_div[:, None, :] * run.plus_minus, g_reg[:, None, :])
    if fast:
        run.upper_cache[key] = out
    return out


def batch_grad(run, tape: Tape, g_total: torch.Tensor | None = None) -> torch.Tensor:
    """∂(Σ_g g_total[g]·total[g])/∂flat, (G, P): autograd's backward pass of :func:`batch_loss`, written out.
    ``g_total`` None: all ones (every member updates)."""
    G, nb, m = run.G, tape.nb, tape.m
    with torch.no_grad():
        g_ce, g_div, g_reg = _upper_grads(run, tape, g_total)
        g_logits = _ce_backward(g_ce, tape.ls, tape.target).view(G, nb + m, -1)
        if m:
            # div = f_cf − f_plus, reg = f_cf² + f_plus² (PowBackward: g·(2·f)); g_div carries the sign of each
            g_f = (2.0 * tape.f).mul_(g_reg).add_(g_div)
            g_lt = torch.zeros(G, 2, m, g_logits.shape[-1], dtype=g_f.dtype, device=g_f.device)
            g_lt.scatter_(3, tape.t_index, g_f[..., None])
            g_logits = torch.cat([g_logits, g_lt.view(G, 2 * m, -1)], 1)
        grads = []
        g = g_logits
        for j in range(len(run.wb) - 1, -1, -1):  # BaddbmmBackward per layer, ReluBackward between
            w, b = run.wb[j]
            a = tape.acts[j]
            grads.append(g.sum_to_size(b.shape).reshape(G, -1))
            grads.append(a.transpose(1, 2).bmm(g).reshape(G, -1))
            if j:
                g = torch.ops.aten.threshold_backward(g.bmm(w.transpose(1, 2)), a, 0)
        return torch.cat(grads[::-1], 1)
