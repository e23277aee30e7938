"""LeNet-5's forward pass and input gradient for the search, without autograd's graph (issue 21).

Why: LeNet CT's search is most of the paper run's largest job, and 60% of a search step was oneDNN's input
gradient of conv1 (one input channel, which its backward-data kernel pads to 16 lanes). That gradient is the same
sum, in the same order, as a *forward* convolution of the spatially flipped output gradient with the transposed
kernel, flipped back: both kernels take, per input pixel, fused multiply-adds over (kh, kw, output channel) in that
order, so the bits agree, at 2–4× less CPU. This module runs the search's forward with the very ops autograd would
record (the same logits, bit for bit), keeps only what the backward needs, and runs the backward by hand:

* the linear layers, ReLUs and conv2's input gradient are the ops autograd calls (``mm``, ``threshold_backward``,
  ``convolution_backward``);
* max-pool then ReLU backward is folded into one scatter at the pooled level: the pool's backward writes each
  window's gradient at its argmax into zeros and ReLU's zeroes it where the activation is ≤ 0, and the activation
  at the argmax is the pooled value, so ``threshold_backward`` on the pooled tensor then a ``scatter_add_`` into
  zeros gives the same bits without the full-size activations;
* conv1's input gradient is the flipped forward convolution, scattered straight into flipped positions
  (a 28 × 28 plane's index p flips to 783 − p);
* ReLU after each max-pool (on a quarter of the values), and conv2 on a channels-last copy of its input (the
  same bits; its output then channels-last, where the pool's kernel is several times faster);
* rows that finished at this step are dropped before the backward (autograd's graph held them), where enough
  rows remain (:data:`MIN_ROWS_PER_THREAD`): the kernels of smaller batches round differently;
* the linear layers' products of fewer than :data:`MIN_GEMM_ROWS` rows are taken on zero-padded rows: MKL's
  products of 1–3 rows round differently from larger ones (the convolutions do not), so a row's bits would depend
  on how many rows its batch still had. Padded, they do not (at one intra-op thread), which is what lets the
  search split its rows over threads (:meth:`.base.GradientGenerator.search`'s ``workers``) bit for bit.

:func:`flip_conv_matches` and :func:`channels_last_conv2_matches` check the two convolution identities on the
running machine and library once per process (without oneDNN neither holds); where one does not hold bit for bit
the path takes the plain op (``convolution_backward`` for conv1, a contiguous input for conv2).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

#: rows per intra-op thread below which a backward is not narrowed to the unfinished rows: MKL's products round
#: differently where a thread's share of rows is 1–3 (1 thread: batches of 1–3; 2 threads: also 5–7 and 9–11 rows;
#: benchmarks/README.md, "Issue 21, LeNet CT's CPU"), so narrowing keeps a wide margin
MIN_ROWS_PER_THREAD = 16
#: the fewest rows a linear layer's product is taken on (zero rows padded on, then dropped): at one thread MKL's
#: products of 1–3 rows round differently from products of 4 or more, whose rows all get the same bits
MIN_GEMM_ROWS = 4
_PROBED: dict[tuple, bool] = {}


@dataclass(frozen=True)
class LeNetLayers:
    """The parameters of a :class:`~ctbench.models.LeNet` (conv1, conv2, fc1–fc3 as (weight, bias))."""

    conv1: tuple[torch.Tensor, torch.Tensor]
    conv2: tuple[torch.Tensor, torch.Tensor]
    fc: tuple[tuple[torch.Tensor, torch.Tensor], ...]
    flip_conv1: bool  # conv1's input gradient as the flipped forward convolution (checked on this machine)
    cl_conv2: bool = False  # conv2's forward on a channels-last input (checked on this machine)


def lenet_layers(model: nn.Module) -> LeNetLayers | None:
    """The layers of an unmodified ``LeNet`` on the CPU (float32/float64, no hooks); else ``None`` (autograd)."""
    from ..models import LeNet

    if type(model) is not LeNet:
        return None
    mods = [model, *model.modules()]
    if any(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks for m in mods):
        return None
    if nn.modules.module._global_forward_hooks or nn.modules.module._global_forward_pre_hooks:
        return None
    c1, r1, p1, c2, r2, p2 = model.features
    fl, l1, a1, l2, a2, l3 = model.head
    w = c1.weight
    if w.device.type != "cpu" or w.dtype not in (torch.float32, torch.float64):
        return None
    if any(p.dtype != w.dtype or p.device != w.device for p in model.parameters()):
        return None
    return LeNetLayers((c1.weight, c1.bias), (c2.weight, c2.bias),
                       ((l1.weight, l1.bias), (l2.weight, l2.bias), (l3.weight, l3.bias)),
                       flip_conv_matches(w.dtype), channels_last_conv2_matches(w.dtype))


def _conv1_grad_reference(g: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """conv1's input gradient as autograd computes it (``convolution_backward``, input mask only)."""
    x = g.new_empty((g.shape[0], 1, 28, 28))
    return torch.ops.aten.convolution_backward(g, x, weight, None, [1, 1], [2, 2], [1, 1], False, [0, 0], 1,
                                               [True, False, False])[0]


def _conv1_grad_flipped(g_flipped: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """conv1's input gradient from the spatially flipped output gradient: a forward convolution, flipped back."""
    return F.conv2d(g_flipped, weight.transpose(0, 1), padding=2).flip([2, 3])


def flip_conv_matches(dtype: torch.dtype) -> bool:
    """Whether the flipped forward convolution gives conv1's input gradient bit for bit here (probed once per
    dtype, thread count and oneDNN switch: random gradients with zero regions, batches of 1 to 9 rows and 64, both
    layouts the backward uses)."""
    key = ("flip_conv1", *_probe_key(dtype))
    if key not in _PROBED:
        gen = torch.Generator().manual_seed(2113)
        weight = torch.randn((6, 1, 5, 5), generator=gen, dtype=dtype)
        ok = True
        for n in (*range(1, 10), 64):
            g = torch.randn((n, 6, 28, 28), generator=gen, dtype=dtype)
            g[:, :, :5] = 0
            g[:, 2, 20:] = -0.0
            ref = _conv1_grad_reference(g, weight)
            for layout in (torch.contiguous_format, torch.channels_last):
                got = _conv1_grad_flipped(g.flip([2, 3]).contiguous(memory_format=layout), weight)
                ok = ok and torch.equal(_bits(ref), _bits(got))
        _PROBED[key] = ok
    return _PROBED[key]


def _probe_key(dtype: torch.dtype) -> tuple:
    return dtype, torch.get_num_threads(), torch.backends.mkldnn.is_available() and torch._C._get_mkldnn_enabled()


def channels_last_conv2_matches(dtype: torch.dtype) -> bool:
    """Whether conv2's forward gives the same bits on a channels-last input as on a contiguous one here (probed
    once per dtype, thread count and oneDNN switch; without oneDNN it does not)."""
    key = ("cl_conv2", *_probe_key(dtype))
    if key not in _PROBED:
        gen = torch.Generator().manual_seed(2114)
        weight, bias = torch.randn((16, 6, 5, 5), generator=gen, dtype=dtype), torch.randn(16, generator=gen,
                                                                                                 dtype=dtype)
        ok = True
        for n in (*range(1, 10), 64):
            p = torch.relu(torch.randn((n, 6, 14, 14), generator=gen, dtype=dtype))
            ref = F.conv2d(p, weight, bias, padding=2)
            got = F.conv2d(p.contiguous(memory_format=torch.channels_last), weight, bias, padding=2)
            ok = ok and torch.equal(_bits(ref), _bits(got))
        _PROBED[key] = ok
    return _PROBED[key]


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32 if t.dtype == torch.float32 else torch.int64)


@dataclass
class LeNetForward:
    """One forward pass of the search: the logits and what the input gradient needs (pooled values and argmax
    indices, the hidden activations)."""

    layers: LeNetLayers
    logits: torch.Tensor
    p1: torch.Tensor
    i1: torch.Tensor
    p2: torch.Tensor
    i2: torch.Tensor
    h1: torch.Tensor
    h2: torch.Tensor

    def input_grad(self, g_logits: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """∇ₓ of the rows ``keep`` (a boolean mask over the forward's rows; None: all of them) from dL/dlogits of
        every row (zero where a row is not kept, as autograd gives for ``loss[keep].sum()``): the input gradient
        autograd would give for those rows, bit for bit."""
        L = self.layers
        saved = (self.p1, self.i1, self.p2, self.i2, self.h1, self.h2)
        narrow = keep is not None and int(keep.sum()) >= MIN_ROWS_PER_THREAD * torch.get_num_threads()
        if narrow:  # the finished rows' backward is not run (autograd's graph held them)
            saved, g_logits = tuple(t[keep] for t in saved), g_logits[keep]
        p1, i1, p2, i2, h1, h2 = saved
        n = p1.shape[0]
        (w3, _), (w4, _), (w5, _) = L.fc
        g = torch.ops.aten.threshold_backward(_mm(g_logits, w5), h2, 0)
        g = torch.ops.aten.threshold_backward(_mm(g, w4), h1, 0)
        g = torch.ops.aten.threshold_backward(_mm(g, w3).view(n, 16, 7, 7), p2, 0)
        g2 = g.new_zeros((n, 16, 196)).scatter_add_(2, i2.view(n, 16, 49), g.view(n, 16, 49)).view(n, 16, 14, 14)
        g = torch.ops.aten.convolution_backward(g2, p1, L.conv2[0], None, [1, 1], [2, 2], [1, 1], False, [0, 0], 1,
                                                [True, False, False])[0]
        g = torch.ops.aten.threshold_backward(g, p1, 0)
        if L.flip_conv1:  # scattered at flipped positions, channels last: the forward kernel's fast layout
            at = (783 - i1).permute(0, 2, 3, 1).reshape(n, 196, 6)
            g1 = g.new_zeros((n, 784, 6)).scatter_add_(1, at, g.permute(0, 2, 3, 1).reshape(n, 196, 6))
            gx = _conv1_grad_flipped(g1.view(n, 28, 28, 6).permute(0, 3, 1, 2), L.conv1[0])
        else:
            g1 = g.new_zeros((n, 6, 784)).scatter_add_(2, i1.view(n, 6, 196), g.view(n, 6, 196))
            gx = _conv1_grad_reference(g1.view(n, 6, 28, 28), L.conv1[0])
        gx = gx.reshape(n, 784)
        return gx[keep] if keep is not None and not narrow else gx


def _padded(a: torch.Tensor) -> torch.Tensor:
    return torch.cat([a, a.new_zeros((MIN_GEMM_ROWS - a.shape[0], *a.shape[1:]))])


def _mm(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``a @ w`` with each row's bits independent of ``a``'s row count (:data:`MIN_GEMM_ROWS`)."""
    n = a.shape[0]
    return a.mm(w) if n >= MIN_GEMM_ROWS else _padded(a).mm(w)[:n]


def _linear(a: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``F.linear`` with each row's bits independent of ``a``'s row count (:data:`MIN_GEMM_ROWS`)."""
    n = a.shape[0]
    return F.linear(a, w, b) if n >= MIN_GEMM_ROWS else F.linear(_padded(a), w, b)[:n]


def _relu_pool(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """max-pool(ReLU(a)) as ReLU(max-pool(a)) (ReLU on a quarter of the values) with the argmax indices. Where a
    window's maximum is positive both pick its first maximal element; where it is not, the pooled value is 0 either
    way and the gradient at the window is zeroed by ReLU's backward wherever the pool put it."""
    p, i = F.max_pool2d(a, 2, 2, return_indices=True)
    return torch.relu_(p), i


@torch.no_grad()
def lenet_forward(layers: LeNetLayers, x: torch.Tensor) -> LeNetForward:
    """The forward pass of ``LeNet.forward`` with the ops autograd records (the same logits bit for bit), keeping
    the pooled values and argmax indices and the hidden activations."""
    (w1, b1), (w2, b2) = layers.conv1, layers.conv2
    (w3, b3), (w4, b4), (w5, b5) = layers.fc
    p1, i1 = _relu_pool(F.conv2d(x.reshape(-1, 1, 28, 28), w1, b1, padding=2))
    # conv2 on a channels-last copy of p1: the same bits, and its output channels-last, where the max-pool kernel
    # runs several times faster (conv1's one-channel input cannot take that layout bitwise)
    if layers.cl_conv2:
        p2, i2 = _relu_pool(F.conv2d(p1.contiguous(memory_format=torch.channels_last), w2, b2, padding=2))
        p2, i2 = p2.contiguous(), i2.contiguous()
    else:
        p2, i2 = _relu_pool(F.conv2d(p1, w2, b2, padding=2))
    h1 = torch.relu(_linear(p2.reshape(p2.shape[0], -1), w3, b3))
    h2 = torch.relu(_linear(h1, w4, b4))
    return LeNetForward(layers, _linear(h2, w5, b5), p1, i1, p2, i2, h1, h2)


__all__ = ["MIN_GEMM_ROWS", "MIN_ROWS_PER_THREAD", "LeNetForward", "LeNetLayers", "channels_last_conv2_matches",
           "flip_conv_matches", "lenet_forward", "lenet_layers"]
