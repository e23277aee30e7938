"""Integrated gradients of Linear → ReLU → Linear by the run-start search (ctbench.evaluation.ig_kernels) give the
numbers of the mask closed form of ``integrated_gradients`` bit for bit (issue 21, evaluation stage)."""

import numpy as np
import pytest
import torch
from torch import nn

from ctbench.evaluation import ig_kernels
from ctbench.evaluation import integrated_gradients as ig


class Wrapped(nn.Module):
    """The same network, not a plain Sequential: ``integrated_gradients`` takes its autograd path."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)


def _mlp(d, h, k, seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, k))


@pytest.mark.parametrize("n,d,h,k,steps,rule,batch", [
    (2500, 784, 32, 10, 50, "trapezoid", 8192),  # an MNIST round
    (2500, 108, 32, 2, 50, "trapezoid", 8192),   # an Adult round
    (300, 12, 7, 3, 50, "trapezoid", 100),       # ragged chunks, H not a multiple of the SIMD width
    (200, 5, 16, 2, 13, "right", 8192),          # the right Riemann rule, odd steps
    (50, 3, 9, 4, 1, "trapezoid", 8192),         # one interval
])
def test_the_run_start_search_gives_the_mask_closed_form_bit_for_bit(n, d, h, k, steps, rule, batch):
    model = _mlp(d, h, k, n + d)
    g = torch.Generator().manual_seed(d)
    X = torch.rand(n, d, generator=g) * 2 - 0.5
    t = torch.randint(k, (n,), generator=g)
    B = ig.random_baseline(X, generator=g)
    ref = ig.integrated_gradients(model, X, t, B, steps=steps, rule=rule, batch_size=batch)
    new = ig_kernels.integrated_gradients(model, X, t, B, steps=steps, rule=rule, batch_size=batch)
    assert torch.equal(ref, new)
    # against the autograd path (float32 path points): round-off, except the rare entry of a sample where a unit's
    # pre-activation is within round-off of 0 at a path point and its mask flips (as in the mask closed form)
    auto = ig.integrated_gradients(Wrapped(model), X, t, B, steps=steps, rule=rule, batch_size=batch)
    off = (new - auto).abs() > 1e-5 * auto.abs().max()
    assert off.any(1).double().mean() < 1e-3  # a flip moves its whole sample


def test_exact_properties_completeness_and_a_zero_baseline():
    model = _mlp(6, 16, 3, 0)
    X = torch.rand(40, 6) + 0.2
    t = torch.arange(40) % 3
    zero = torch.zeros_like(X)
    with torch.no_grad():
        gap = (model(X) - model(zero)).gather(1, t[:, None]).squeeze(1)
    attr = ig_kernels.integrated_gradients(model, X, t, zero, steps=400)
    # completeness up to the quadrature error (ReLU kinks: O(1/steps))
    assert torch.allclose(attr.sum(1).double(), gap.double(), atol=2e-2 * gap.abs().max().item())
    assert torch.equal(ig_kernels.integrated_gradients(model, zero, t, zero), torch.zeros_like(X))  # x = baseline


def test_the_mask_sums_cover_every_run_and_degenerate_units():
    alphas, weights = ig_kernels.path_grid(50, "trapezoid")
    table = ig_kernels.run_table(weights)
    h0 = torch.tensor([1.0, -1.0, 0.0, 0.0, -0.3, 0.3, 0.5, float("nan"), 1.0])
    dh = torch.tensor([0.0, 0.0, 1.0, -1.0, 0.6, -0.6, -1e-300, 1.0, float("nan")]).double()
    got = ig_kernels.mask_weight_sums(h0.double(), dh, alphas, table)
    pre = h0.double()[:, None] + alphas[None, :] * dh[:, None]
    want = torch.einsum("rph,p->rh", (pre > 0).double()[:, :, None], weights).squeeze(1)
    assert torch.equal(got, want)
    assert got[0] == table[0] and got[1] == 0 and got[7] == 0 and got[8] == 0  # all on; all off; NaN: off


def test_other_models_and_outputs_take_the_general_path():
    X = torch.rand(20, 4)
    B = torch.zeros_like(X)
    t = torch.zeros(20, dtype=torch.long)
    deep = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    for model, kw in ((deep, {}), (_mlp(4, 8, 2, 1), {"output": "prob"}), (_mlp(4, 8, 2, 1), {"rule": "right"})):
        assert torch.equal(ig_kernels.integrated_gradients(model, X, t, B, **kw),
                           ig.integrated_gradients(model, X, t, B, **kw))
    with pytest.raises(ValueError, match="steps"):
        ig_kernels.integrated_gradients(_mlp(4, 8, 2, 1), X, t, B, steps=0)


def test_closed_form_ig_swaps_ig_rounds_kernel_for_one_job():
    model = _mlp(30, 32, 4, 3)
    X = torch.rand(500, 30)
    y = torch.randint(4, (500,))
    ref = ig.ig_rounds(model, X, y, [0, 1, 2], n_rounds=4, n_samples=200, seed=1)
    original = ig.integrated_gradients
    with ig_kernels.closed_form_ig():
        assert ig.integrated_gradients is ig_kernels.integrated_gradients
        new = ig.ig_rounds(model, X, y, np.array([0, 1, 2]), n_rounds=4, n_samples=200, seed=1)
    assert ig.integrated_gradients is original
    assert ref.equals(new)
