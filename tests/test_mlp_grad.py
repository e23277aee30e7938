"""The closed-form MLP input gradient equals autograd's, and the search takes it only where it is exact."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from ctbench.constraints import Constraints
from ctbench.generators import Convergence, ECCoGenerator, GenericGenerator, mlp_search
from ctbench.generators.mlp_grad import input_grad, mlp_layers
from ctbench.models import LeNet, build_model

MODELS = {"mlp1": {"type": "mlp", "hidden": 16}, "mlp2": {"type": "mlp", "hidden": 8, "layers": 2},
          "linear": {"type": "linear"}}


def _model(kind, D=6, K=3, seed=0):
    return build_model(MODELS[kind], D, K, seed=seed).double()


def _generator(name, lam_cost):
    if name == "generic":
        return GenericGenerator(lambda_cost=lam_cost, step_size=0.5)
    return ECCoGenerator(lambda_energy=5.0, lambda_cost=lam_cost, step_size=0.5)


@pytest.mark.parametrize("kind", list(MODELS))
@pytest.mark.parametrize("gen_name", ["generic", "ecco"])
@pytest.mark.parametrize("lam_cost", [0.0, 0.01])
def test_closed_form_gradient_equals_autograd(kind, gen_name, lam_cost):
    torch.manual_seed(0)
    D, K, n, t, T = 6, 3, 50, 2, 30
    model, gen = _model(kind, D, K), _generator(gen_name, lam_cost)
    x0 = torch.randn(n, D, dtype=torch.float64)
    x = x0 + 0.3 * torch.randn(n, D, dtype=torch.float64)
    x[:5] = x0[:5]  # sign(0) = 0 rows
    y = torch.randint(0, K, (n,))
    s = x.clone().requires_grad_(True)
    logits = model(s)
    loss = F.cross_entropy(logits, y, reduction="none") + gen.penalty(s, logits, x0, y, t, T)
    loss = loss + lam_cost * (s - x0).abs().sum(1)
    (want,) = torch.autograd.grad(loss.sum(), s)
    layers = mlp_layers(model)
    assert layers is not None
    got, z, p = input_grad(x, layers, y, lambda zy: gen.target_logit_grad(zy, t, T))
    got = got + lam_cost * (x - x0).sign()
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(z, logits.detach(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(p, torch.softmax(logits.detach(), 1).gather(1, y[:, None])[:, 0])


@pytest.mark.parametrize("kind", ["mlp2", "linear"])
def test_closed_form_gradient_with_a_member_dimension(kind):
    torch.manual_seed(1)
    G, n, D, K = 3, 20, 5, 4
    models = [_model(kind, D, K, seed=g) for g in range(G)]
    per = [mlp_layers(m) for m in models]
    stacked = [(torch.stack([p[i][0] for p in per]), torch.stack([p[i][1] for p in per])) for i in range(len(per[0]))]
    x, y = torch.randn(G, n, D, dtype=torch.float64), torch.randint(0, K, (G, n))
    gen = ECCoGenerator(lambda_energy=5.0)
    got, z, p = input_grad(x, stacked, y, lambda zy: gen.target_logit_grad(zy, 0, 30))
    for g in range(G):
        want, wz, wp = input_grad(x[g], per[g], y[g], lambda zy: gen.target_logit_grad(zy, 0, 30))
        torch.testing.assert_close(got[g], want, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(z[g], wz, rtol=1e-12, atol=1e-12)


def _assert_same(a, b):
    for f in ("counterfactual", "nascent", "prob_target"):
        torch.testing.assert_close(getattr(a, f), getattr(b, f), rtol=1e-10, atol=1e-10, equal_nan=True)
    for f in ("steps", "mature", "initially_valid"):
        assert torch.equal(getattr(a, f), getattr(b, f)), f


def _both_paths(gen, model, x, y, cons=None, conv=None):
    gen.closed_form = False
    slow = gen.search(model, x, y, cons, conv)
    gen.closed_form = True
    return gen.search(model, x, y, cons, conv), slow


@pytest.mark.parametrize("kind", list(MODELS))
@pytest.mark.parametrize("gen_name", ["generic", "ecco"])
@pytest.mark.parametrize("constrained", [False, True])
def test_fast_search_equals_autograd_search(kind, gen_name, constrained, monkeypatch):
    torch.manual_seed(2)
    D, K, B = 6, 3, 300
    model, gen = _model(kind, D, K), _generator(gen_name, 0.01)
    x = torch.randn(B, D, dtype=torch.float64).clamp(-1.9, 1.9)
    y = torch.randint(0, K, (B,))
    y[:100] = model(x[:100]).argmax(1)  # some rows are valid from the start
    cons = None
    if constrained:
        cons = Constraints.build(D, domain=([-2.0] * D, [2.0] * D),
                                 mutability=["both", "none", "increase", "decrease", "both", "both"])
    conv = Convergence("threshold", 0.6, 40)
    monkeypatch.setattr(mlp_search, "CHUNK_FLOATS", 64 * D)  # several chunks
    fast, slow = _both_paths(gen, model, x, y, cons, conv)
    assert int(fast.initially_valid.sum()) > 0 and fast.steps.unique().numel() > 5  # rows finish at many steps
    _assert_same(fast, slow)
    for share in (0.0, 2.0):  # compact at every finishing step / never compact (finished rows frozen)
        monkeypatch.setattr(mlp_search, "COMPACT_SHARE", share)
        _assert_same(gen.search(model, x, y, cons, conv), slow)


def test_fast_search_with_domain_only_and_categoricals():
    torch.manual_seed(3)
    D, B = 5, 200
    model = _model("mlp1", D, 2)
    x = torch.zeros(B, D, dtype=torch.float64)
    x[:, 0] = torch.randn(B)
    x[torch.arange(B), 1 + torch.randint(0, 3, (B,))] = 1.0
    gen = ECCoGenerator(lambda_cost=0.001, step_size=1.0)
    for cons in (Constraints.build(D, domain=(-1.0, 1.5)), Constraints.build(D, categorical_groups=[[1, 2, 3], [4]])):
        fast, slow = _both_paths(gen, model, x, torch.randint(0, 2, (B,)), cons, Convergence("max_iter", 0.5, 15))
        _assert_same(fast, slow)


def test_non_finite_steps_fall_back_to_autograd(monkeypatch):
    model = nn.Linear(2, 2).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[0.0, 0.0], [1e307, 0.0]]))
        model.bias.zero_()
    x = torch.tensor([[-1.0, 0.0], [1e-306, 0.0], [100.0, 1.0]], dtype=torch.float64)  # row 2: an infinite logit
    y = torch.tensor([1, 1, 0])
    calls = []
    fallback = mlp_search._autograd_grad
    monkeypatch.setattr(mlp_search, "_autograd_grad", lambda *a: calls.append(1) or fallback(*a))
    fast, slow = _both_paths(ECCoGenerator(lambda_cost=0.01), model, x, y, conv=Convergence("max_iter", 0.5, 3))
    assert calls  # (row 0 runs off to -inf on both paths, as the reference does)
    _assert_same(fast, slow)


class _Wrapped(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


class _CustomPenalty(GenericGenerator):
    def penalty(self, x_cf, logits, x0, target, t, T):
        return logits.square().sum(1)


def test_other_models_and_penalties_take_the_autograd_path(monkeypatch):
    torch.manual_seed(4)
    model = _model("mlp2", 4, 2)
    x, y = torch.randn(30, 4, dtype=torch.float64), torch.randint(0, 2, (30,))
    conv = Convergence("threshold", 0.9, 20)
    fast = GenericGenerator(lambda_cost=0.01).search(model, x, y, convergence=conv)
    assert mlp_layers(_Wrapped(model)) is None and mlp_layers(LeNet()) is None
    assert mlp_layers(nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))) is None
    hooked = _model("mlp1", 4, 2)
    hooked[0].register_forward_hook(lambda *a: None)
    assert mlp_layers(hooked) is None

    def boom(*a, **k):
        raise AssertionError("the closed-form path was taken")

    monkeypatch.setattr(mlp_search, "_search_chunk", boom)
    _assert_same(GenericGenerator(lambda_cost=0.01).search(_Wrapped(model), x, y, convergence=conv), fast)
    custom = _CustomPenalty(lambda_cost=0.01).search(model, x, y, convergence=conv)  # autograd with its penalty
    assert not torch.allclose(custom.counterfactual, fast.counterfactual)
    lenet = LeNet(generator=torch.Generator().manual_seed(0))
    xs = torch.rand(3, 784)
    res = ECCoGenerator().search(lenet, xs, torch.tensor([0, 1, 2]), convergence=Convergence("max_iter", 0.5, 2))
    assert res.counterfactual.shape == (3, 784) and bool((res.steps == 2).all())
