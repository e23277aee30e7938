"""Closed-form forward pass and input gradient of a plain ReLU MLP (no autograd).

Why: the counterfactual search needs, per step, the logits and ∇ₓ of a per-row loss that depends on x only through
the logits. For an ``nn.Sequential`` of ``nn.Linear``/``nn.ReLU`` this is two matrix products per layer; autograd's
graph building and bookkeeping cost more than the arithmetic at search sizes. The per-row loss enters only through
dL/dlogits (:func:`logit_grad`: softmax − onehot for the cross-entropy, plus a per-row coefficient on the target
logit for penalties such as ECCo's energy).

Every function also takes a leading member dimension: x of shape (G, n, D) with stacked weights (G, in, out) and
biases (G, out), for populations of models of the same architecture (``torch.baddbmm``/``torch.bmm``). Weights are
stored as (in, out), i.e. the transpose of ``nn.Linear.weight``, so that a layer is ``x @ W + b``.
"""

from __future__ import annotations

import torch
from torch import nn

Layers = list[tuple[torch.Tensor, torch.Tensor | None]]  # [(W (…, in, out), b (…, out) or None)], ReLU between


def mlp_layers(model: nn.Module) -> Layers | None:
    """``[(Wᵀ, b), …]`` views of a plain MLP (``Linear (ReLU Linear)*``, or one ``nn.Linear``); else ``None``.

    Anything else — other layer types, subclasses with their own ``forward``, hooks — returns ``None`` so that the
    caller falls back to autograd on the module itself.
    """
    if type(model) is nn.Linear:
        mods = [model]
    elif isinstance(model, nn.Sequential) and type(model).forward is nn.Sequential.forward:
        mods = list(model)
    else:
        return None
    if not mods or len(mods) % 2 == 0:
        return None
    for i, m in enumerate(mods):
        if type(m) is not (nn.Linear if i % 2 == 0 else nn.ReLU):
            return None
    for m in [model, *mods]:
        if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks:
            return None
    if nn.modules.module._global_forward_hooks or nn.modules.module._global_forward_pre_hooks:
        return None
    return [(m.weight.t(), m.bias) for m in mods[::2]]


def _affine(a: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, out=None) -> torch.Tensor:
    if a.ndim == 2:
        return torch.addmm(b, a, w, out=out) if b is not None else torch.mm(a, w, out=out)
    return torch.baddbmm(b.unsqueeze(-2), a, w, out=out) if b is not None else torch.bmm(a, w, out=out)


def _buffer(work: list[torch.Tensor] | None, i: int, shape) -> torch.Tensor | None:
    """A view of shape ``shape`` at the start of the flat buffer ``work[i]`` (None without a workspace)."""
    if work is None:
        return None
    n = 1
    for d in shape:
        n *= int(d)
    return work[i][:n].view(shape)


def workspace(layers: Layers, rows: int, like: torch.Tensor) -> list[torch.Tensor]:
    """Flat buffers for every hidden layer's (…, rows, width) result, for the ``work`` arguments below: big
    results written into reused memory instead of fresh tensors (a fresh multi-MB tensor costs a page fault per
    4 KiB, more than the arithmetic of a step of small models). Lead dimensions (members) are in ``rows``."""
    return [torch.empty(rows * int(w.shape[-1]), dtype=like.dtype, device=like.device) for w, _ in layers[:-1]]


def forward(x: torch.Tensor, layers: Layers, work: list[torch.Tensor] | None = None
            ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Class-major logits (…, K, n) and the hidden activations (after ReLU) that :func:`first_layer_grad` needs.

    Class-major because a softmax over a short class dimension is many times faster when it is not innermost.
    ``work``: :func:`workspace` buffers for the hidden activations (the same values).
    """
    acts = []
    a = x
    for i, (w, b) in enumerate(layers[:-1]):
        a = torch.relu_(_affine(a, w, b, out=_buffer(work, i, (*a.shape[:-1], w.shape[-1]))))
        acts.append(a)
    w, b = layers[-1]
    wt, at = w.transpose(-1, -2), a.transpose(-1, -2)  # logitsᵀ = Wᵀ aᵀ + b
    if a.ndim == 2:
        return (torch.addmm(b[:, None], wt, at) if b is not None else torch.mm(wt, at)), acts
    return (torch.baddbmm(b.unsqueeze(-1), wt, at) if b is not None else torch.bmm(wt, at)), acts


def logit_grad(logits_t: torch.Tensor, target: torch.Tensor,
               target_coef: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(dL/dlogits, p(target)), class-major (…, K, n), for L = Σ_rows CE(logits, target) + pen with
    ∂pen/∂logit[target] = ``target_coef`` (…, n); ``target`` (…, n).
    """
    g = torch.softmax(logits_t, -2)
    y = target.unsqueeze(-2)
    p = g.gather(-2, y).squeeze(-2)
    coef = torch.full_like(p, -1.0) if target_coef is None else target_coef - 1.0
    return g.scatter_add_(-2, y, coef.unsqueeze(-2)), p


def first_layer_grad(dlogits_t: torch.Tensor, layers: Layers, acts: list[torch.Tensor],
                     work: list[torch.Tensor] | None = None) -> torch.Tensor:
    """dL/d(output of the first affine layer), (…, n, out₁); the input gradient is this times ``layers[0][0]ᵀ``.
    ``work``: :func:`workspace` buffers (other than the forward pass's) for the per-layer results."""
    g = dlogits_t.transpose(-1, -2)
    for i in range(len(acts) - 1, -1, -1):
        w, a = layers[i + 1][0], acts[i]
        buf = _buffer(work, i, a.shape)
        g = torch.matmul(g, w.transpose(-1, -2), out=buf)
        g = (torch.ops.aten.threshold_backward(g, a, 0) if buf is None
             else torch.ops.aten.threshold_backward.grad_input(g, a, 0, grad_input=buf))
    return g


def target_logit(logits_t: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return logits_t.gather(-2, target.unsqueeze(-2)).squeeze(-2)


def input_grad(x: torch.Tensor, layers: Layers, target: torch.Tensor,
               target_coef=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(∇ₓ L, logits (…, n, K), p(target)); ``target_coef(target logit)`` gives ∂pen/∂logit[target] (or ``None``)."""
    logits_t, acts = forward(x, layers)
    coef = None if target_coef is None else target_coef(target_logit(logits_t, target))
    dz, p = logit_grad(logits_t, target, coef)
    g = first_layer_grad(dz, layers, acts)
    return torch.matmul(g, layers[0][0].transpose(-1, -2)), logits_t.transpose(-1, -2), p
