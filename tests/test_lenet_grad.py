"""LeNet's search gradient by hand (``ctbench.generators.lenet_grad``, issue 21) against autograd, bit for bit.

Bits are compared as integers (``view(torch.int32)``), so even the sign of a zero counts."""

import pytest
import torch
import torch.nn.functional as F

from ctbench.generators import base, lenet_grad
from ctbench.generators.base import Convergence
from ctbench.generators.ecco import ECCoGenerator
from ctbench.generators.generic import GenericGenerator
from ctbench.models import LeNet
from ctbench.training.objectives import Objective
from ctbench.training.trainer import TrainParams, train


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().contiguous().view(torch.int32)


def sharp_lenet(seed: int = 0) -> LeNet:
    """A LeNet whose logits are sharp enough for rows to pass τ at many different steps."""
    model = LeNet(generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        model.head[-1].weight.mul_(20)
        for m in model.modules():  # nonzero biases, as after training
            if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
                m.bias.uniform_(-0.1, 0.1, generator=torch.Generator().manual_seed(seed + 1))
    return model


def images(n: int, seed: int = 0) -> torch.Tensor:
    """MNIST-like rows: mostly zero background (dead ReLUs, tied maxima), some saturated strokes."""
    x = torch.rand(n, 784, generator=torch.Generator().manual_seed(seed))
    x[x < 0.6] = 0
    x.view(n, 28, 28)[:, 10:13, 8:20] = 1.0
    return x


def autograd_reference(model, x, g_logits):
    for p in model.parameters():
        p.requires_grad_(False)
    s = x.clone().requires_grad_(True)
    logits = model(s)
    (grad,) = torch.autograd.grad(logits, s, g_logits)
    return logits.detach(), grad


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 40])
@pytest.mark.parametrize("flip", [True, False])
@pytest.mark.parametrize("cl", [True, False])
def test_forward_and_input_gradient_equal_autograd(n, flip, cl, one_thread):
    """Autograd's bits; for 1–3 rows those of autograd on a batch of 4 holding them (the linear layers' products
    are taken on at least ``MIN_GEMM_ROWS`` rows, so that a row's bits never depend on its batch's size)."""
    model = sharp_lenet()
    layers = lenet_grad.lenet_layers(model)
    # the identities hold on this machine (else the fallbacks run, which the False cases check)
    assert layers is not None and layers.flip_conv1 and layers.cl_conv2
    layers = lenet_grad.LeNetLayers(layers.conv1, layers.conv2, layers.fc, flip, cl)
    x = images(n)
    g_logits = torch.randn(n, 10, generator=torch.Generator().manual_seed(3))
    g_logits[0] = -0.0
    fwd = lenet_grad.lenet_forward(layers, x)
    m = max(n, lenet_grad.MIN_GEMM_ROWS)
    pad = torch.zeros(m - n, 10)
    logits, grad = autograd_reference(model, images(m), torch.cat([g_logits, pad]))
    assert torch.equal(bits(fwd.logits), bits(logits[:n]))
    assert torch.equal(bits(fwd.input_grad(g_logits)), bits(grad[:n]))


@pytest.mark.filterwarnings("ignore:TF32 acceleration")
def test_without_onednn_the_gradient_still_equals_autograd(one_thread):
    """With oneDNN switched off the identity is probed again under the other kernels (and the backward falls back
    where it does not hold): autograd's bits either way."""
    model, x = sharp_lenet(), images(6)
    g_logits = torch.randn(6, 10, generator=torch.Generator().manual_seed(3))
    with torch.backends.mkldnn.flags(enabled=False):
        layers = lenet_grad.lenet_layers(model)
        assert not layers.flip_conv1 and not layers.cl_conv2
        fwd = lenet_grad.lenet_forward(layers, x)
        logits, grad = autograd_reference(model, x, g_logits)
        assert torch.equal(bits(fwd.logits), bits(logits))
        assert torch.equal(bits(fwd.input_grad(g_logits)), bits(grad))


def test_flipped_forward_convolution_is_conv1s_input_gradient(one_thread):
    """The identity the lever rests on, and that a wrong flip (the kernel instead of the data) is caught."""
    gen = torch.Generator().manual_seed(0)
    w, g = torch.randn(6, 1, 5, 5, generator=gen), torch.randn(7, 6, 28, 28, generator=gen)
    ref = lenet_grad._conv1_grad_reference(g, w)
    assert torch.equal(bits(lenet_grad._conv1_grad_flipped(g.flip([2, 3]), w)), bits(ref))
    kernel_flipped = F.conv2d(g, w.transpose(0, 1).flip([2, 3]), padding=2)  # the same sum in another order
    assert torch.allclose(kernel_flipped, ref, atol=1e-5) and not torch.equal(kernel_flipped, ref)
    assert lenet_grad.flip_conv_matches(torch.float32)


@pytest.mark.parametrize("threads", [1, 2])
def test_backward_narrowed_to_unfinished_rows_equals_the_whole_batch(threads):
    """Rows dropped before the backward (enough left) or kept in it (too few left): the kept rows' gradient is the
    whole batch's, bit for bit."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model, x = sharp_lenet(), images(120)
        fwd = lenet_grad.lenet_forward(lenet_grad.lenet_layers(model), x)
        g_logits = torch.randn(120, 10, generator=torch.Generator().manual_seed(4))
        whole = fwd.input_grad(g_logits)
        for n_keep in (1, 3, 5, 9, 31, 32, 33, 64, 119):
            keep = torch.zeros(120, dtype=torch.bool)
            keep[torch.randperm(120, generator=torch.Generator().manual_seed(n_keep))[:n_keep]] = True
            got = fwd.input_grad(g_logits * keep[:, None], keep)
            assert got.shape == (n_keep, 784)
            assert torch.equal(bits(got), bits(whole[keep])), n_keep
    finally:
        torch.set_num_threads(before)


def search_both_ways(gen, model, x, target, conv, monkeypatch):
    by_hand = gen.search(model, x, target, convergence=conv)
    with monkeypatch.context() as m:
        m.setattr(base, "lenet_layers", lambda model: None)
        reference = gen.search(model, x, target, convergence=conv)
    return by_hand, reference


@pytest.mark.parametrize("gen", [ECCoGenerator(step_size=0.05, lambda_cost=0.001),
                                 GenericGenerator(step_size=0.05, lambda_cost=0.01)])
def test_search_by_hand_equals_the_autograd_search(gen, one_thread, monkeypatch):
    """Rows retire at every step (the backward is narrowed, and at the tail it is not): every field bit for bit."""
    model, x = sharp_lenet(), images(300)
    target = torch.randint(0, 10, (300,), generator=torch.Generator().manual_seed(1))
    calls = []
    real = lenet_grad.LeNetForward.input_grad
    monkeypatch.setattr(lenet_grad.LeNetForward, "input_grad",
                        lambda self, g, keep=None: calls.append(keep is not None) or real(self, g, keep))
    by_hand, reference = search_both_ways(gen, model, x, target, Convergence("threshold", 0.5, 12), monkeypatch)
    assert calls and any(calls)  # the hand-made gradient ran, with finished rows to drop
    assert len(reference.steps.unique()) >= 8
    for f in ("counterfactual", "nascent", "prob_target"):
        assert torch.equal(bits(getattr(by_hand, f)), bits(getattr(reference, f))), f
    for f in ("steps", "mature", "initially_valid"):
        assert torch.equal(getattr(by_hand, f), getattr(reference, f)), f


def test_other_models_and_penalties_keep_autograd(one_thread):
    class Hooked(LeNet):
        pass

    class XPenalty(GenericGenerator):  # depends on x' directly: its gradient needs autograd
        def penalty(self, x_cf, logits, x0, target, t, T):
            return x_cf.square().sum(1)

    assert lenet_grad.lenet_layers(Hooked()) is None
    model = LeNet()
    handle = model.head.register_forward_hook(lambda *a: None)
    assert lenet_grad.lenet_layers(model) is None
    handle.remove()
    assert lenet_grad.lenet_layers(model) is not None
    assert lenet_grad.lenet_layers(LeNet().double()) is not None
    assert not XPenalty()._penalty_through_logits() and ECCoGenerator()._penalty_through_logits()


def test_ct_lenet_training_is_bitwise_the_autograd_training(one_thread, monkeypatch):
    """Two CT epochs on a small MNIST-shaped set: every tensor of the model equal to the autograd path's."""
    gen = torch.Generator().manual_seed(5)
    X, y = images(200, seed=5), torch.randint(0, 10, (200,), generator=gen)
    params = TrainParams(epochs=2, batch_size=50, nce=80, lr=1e-3, seed=2, majority_margin=None)
    models = []
    for hand in (True, False):
        with monkeypatch.context() as m:
            if not hand:
                m.setattr(base, "lenet_layers", lambda model: None)
            model = LeNet(generator=torch.Generator().manual_seed(0))
            train(model, X, y, objective=Objective("full"), params=params, n_classes=10,
                  generator=ECCoGenerator(step_size=1.0, lambda_cost=0.001),
                  convergence=Convergence("threshold", 0.5, 30))
            models.append(model.state_dict())
    for k in models[0]:
        assert torch.equal(bits(models[0][k]), bits(models[1][k])), k
