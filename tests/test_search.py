"""The batched search against a literal per-instance reading of reference §4.1, and its invariants."""

import math

import pytest
import torch
import torch.nn.functional as F

from ctbench.constraints import Constraints
from ctbench.generators import Convergence, ECCoGenerator, GenericGenerator, energy_multiplier, make_generator
from ctbench.models import build_model


def _model(D=5, K=3, seed=0, dtype=torch.float64):
    return build_model({"type": "mlp", "hidden": 16}, D, K, seed=seed).to(dtype)


def reference_search_one(model, x, y, lam_cst, lam_egy, eta, tau, T, lo=None, hi=None, mut=None, eps=0.3):
    """One factual, step by step as CE.jl does it (separate forward passes, scalar loop, no batching)."""
    x = x.clone()
    xc = x.clone()
    path = [xc.clone()]
    p = torch.softmax(model(xc[None]), 1)[0, y]
    if p >= tau:
        return xc, x, True, 0
    t = 0
    while True:
        s = xc.clone().requires_grad_(True)
        logits = model(s[None])[0]
        ce = F.cross_entropy(logits[None], torch.tensor([y]))
        b = round(T / 25)
        phi = (b / 10) * (b + t + 1) ** -0.9
        e = -logits[y]
        h = lam_cst * (s - x).abs().sum() + lam_egy * phi * (e + 1e-3 * e**2)
        g = torch.autograd.grad(ce, s, retain_graph=True)[0] + torch.autograd.grad(h, s)[0]
        delta = -eta * g
        delta[torch.isnan(delta)] = 0
        if mut is not None:
            for d, m in enumerate(mut):
                if m == "none":
                    delta[d] = 0
                elif m == "increase":
                    delta[d] = max(delta[d], 0)
                elif m == "decrease":
                    delta[d] = min(delta[d], 0)
        xc = xc + delta
        if lo is not None:
            xc = torch.max(torch.min(xc, hi), lo)
        t += 1
        path.append(xc.clone())
        p = torch.softmax(model(xc[None]), 1)[0, y]
        if p >= tau or t == T:
            break
    nascent = [q for q in path if (q - x).abs().max() <= eps][-1]
    return xc, nascent, bool(p >= tau), t


@pytest.mark.parametrize("with_constraints", [False, True])
def test_batched_search_equals_per_instance_loop(with_constraints):
    torch.manual_seed(1)
    D, K, B = 5, 3, 40
    model = _model(D, K)
    x = torch.randn(B, D, dtype=torch.float64)
    y = torch.randint(0, K, (B,))
    lo = hi = mut = None
    cons = None
    if with_constraints:
        lo, hi = torch.full((D,), -1.5, dtype=torch.float64), torch.full((D,), 1.5, dtype=torch.float64)
        x = x.clamp(-1.4, 1.4)
        mut = ["both", "none", "increase", "decrease", "both"]
        cons = Constraints.build(D, domain=(lo.tolist(), hi.tolist()), mutability=mut)
    gen = ECCoGenerator(lambda_energy=5.0, lambda_cost=0.01, step_size=0.5)
    res = gen.search(model, x, y, cons, Convergence("threshold", 0.7, 30))
    assert 0 < int(res.mature.sum()) < B  # both kinds of rows are exercised
    for i in range(B):
        cf, nas, mature, steps = reference_search_one(model, x[i], int(y[i]), 0.01, 5.0, 0.5, 0.7, 30, lo, hi, mut)
        torch.testing.assert_close(res.counterfactual[i], cf, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(res.nascent[i], nas, rtol=1e-10, atol=1e-10)
        assert bool(res.mature[i]) == mature
        assert int(res.steps[i]) == steps


def test_row_result_does_not_depend_on_batch():
    torch.manual_seed(2)
    model = _model(4, 2)
    x = torch.randn(64, 4, dtype=torch.float64)
    y = torch.randint(0, 2, (64,))
    gen = GenericGenerator(lambda_cost=0.001)
    full = gen.search(model, x, y, convergence=Convergence("threshold", 0.9, 25))
    for i in (0, 17, 63):
        one = gen.search(model, x[i:i + 1], y[i:i + 1], convergence=Convergence("threshold", 0.9, 25))
        torch.testing.assert_close(one.counterfactual[0], full.counterfactual[i], rtol=1e-12, atol=1e-12)
        assert int(one.steps[0]) == int(full.steps[i])


def test_mutability_invariants_and_domain():
    torch.manual_seed(3)
    D = 6
    model = build_model({"type": "mlp"}, D, 2, seed=3)
    x = torch.randn(500, D) * 2
    y = (model(x).argmax(1) + 1) % 2
    mut = ["none", "increase", "decrease", "both", "none", "both"]
    lo, hi = [-3.0] * D, [3.0] * D
    cons = Constraints.build(D, domain=(lo, hi), mutability=mut)
    res = ECCoGenerator(lambda_energy=1.0, step_size=1.0).search(model, x, y, cons, Convergence("max_iter", 0.5, 40))
    cf = res.counterfactual
    assert torch.equal(cf[:, 0], x[:, 0]) and torch.equal(cf[:, 4], x[:, 4])  # bit-identical
    assert bool((cf[:, 1] >= x[:, 1]).all()) and bool((cf[:, 2] <= x[:, 2]).all())
    assert bool((cf[:, 1] > x[:, 1]).any()) or bool((cf[:, 2] < x[:, 2]).any())  # they did move
    inside = (x[:, 3] >= -3) & (x[:, 3] <= 3)
    assert bool((cf[inside][:, [3, 5]] >= -3).all()) and bool((cf[inside][:, [3, 5]] <= 3).all())
    # a factual outside the box keeps its immutable value (the box is widened to contain it)
    out = (x[:, 0].abs() > 3)
    assert bool(out.any()) and torch.equal(cf[out, 0], x[out, 0])


def test_energy_multiplier_values():
    assert energy_multiplier(0, 30) == pytest.approx(0.1 * 2 ** -0.9, rel=1e-12)
    assert energy_multiplier(0, 30) == pytest.approx(0.0536, abs=5e-5)
    assert energy_multiplier(0, 50) == pytest.approx(0.0744, abs=5e-5)
    assert energy_multiplier(3, 100) == pytest.approx(0.4 * 8 ** -0.9)
    assert energy_multiplier(0, 5) == 0.0 and energy_multiplier(0, 12) == 0.0
    assert energy_multiplier(0, 13) > 0  # round(13/25) = 1
    assert energy_multiplier(0, 62) == pytest.approx(0.2 * 3 ** -0.9)  # round(2.48) = 2


def test_ecco_with_T5_equals_generic():
    torch.manual_seed(4)
    model = _model(3, 2)
    x, y = torch.randn(20, 3, dtype=torch.float64), torch.randint(0, 2, (20,))
    conv = Convergence("threshold", 0.9, 5)
    a = ECCoGenerator(lambda_energy=10.0, lambda_cost=0.001).search(model, x, y, convergence=conv)
    b = GenericGenerator(lambda_cost=0.001).search(model, x, y, convergence=conv)
    assert torch.equal(a.counterfactual, b.counterfactual)


class _FixedStep(GenericGenerator):
    """A hand-made path: every step moves feature 0 by +0.125, whatever the gradient."""

    def direction(self, grad):
        d = torch.zeros_like(grad)
        d[:, 0] = 0.125
        return d


def _sigmoid_model():
    m = torch.nn.Linear(2, 2).double()
    with torch.no_grad():
        m.weight.copy_(torch.tensor([[0.0, 0.0], [1.0, 0.0]]))
        m.bias.zero_()
    return m  # p(class 1 | x) = sigmoid(x0)


def test_maturity_and_nascent_on_hand_made_path():
    x = torch.tensor([[-0.5, 0.0]], dtype=torch.float64)
    y = torch.tensor([1])
    gen = _FixedStep(nascent_epsilon=0.25)
    res = gen.search(_sigmoid_model(), x, y, convergence=Convergence("threshold", 0.5, 10))
    # path: -0.5, -0.375, -0.25, -0.125, 0.0 → p = 0.5 at step 4
    assert int(res.steps[0]) == 4 and bool(res.mature[0])
    assert float(res.counterfactual[0, 0]) == 0.0
    assert float(res.nascent[0, 0]) == -0.25  # |Δ| = 0.25 exactly: inclusive
    excl = _FixedStep(nascent_epsilon=0.25, nascent_inclusive=False).search(
        _sigmoid_model(), x, y, convergence=Convergence("threshold", 0.5, 10))
    assert float(excl.nascent[0, 0]) == -0.375
    short = gen.search(_sigmoid_model(), x, y, convergence=Convergence("threshold", 0.5, 3))
    assert int(short.steps[0]) == 3 and not bool(short.mature[0])
    assert float(short.counterfactual[0, 0]) == -0.125
    lenient = _FixedStep(maturity="threshold_or_exhausted").search(
        _sigmoid_model(), x, y, convergence=Convergence("threshold", 0.5, 3))
    assert bool(lenient.mature[0])
    tiny = _FixedStep(nascent_epsilon=0.1).search(_sigmoid_model(), x, y, convergence=Convergence("threshold", 0.5, 10))
    assert torch.equal(tiny.nascent[0], x[0])  # the first step leaves the ball: the factual itself


def test_initially_valid_rows_are_not_searched():
    x = torch.tensor([[2.0, 0.0], [-2.0, 0.0]], dtype=torch.float64)
    res = _FixedStep().search(_sigmoid_model(), x, torch.tensor([1, 1]), convergence=Convergence("threshold", 0.5, 50))
    assert bool(res.initially_valid[0]) and int(res.steps[0]) == 0 and torch.equal(res.counterfactual[0], x[0])
    assert not bool(res.initially_valid[1]) and int(res.steps[1]) == 16


def test_max_iter_runs_exactly_T_steps():
    torch.manual_seed(5)
    model = _model(3, 2)
    x, y = torch.randn(10, 3, dtype=torch.float64), torch.randint(0, 2, (10,))
    res = GenericGenerator().search(model, x, y, convergence=Convergence("max_iter", 0.5, 7))
    assert bool((res.steps == 7).all()) and bool(res.mature.all())


def test_categorical_snapping_keeps_one_hot():
    torch.manual_seed(6)
    D = 5
    model = build_model({"type": "mlp"}, D, 2, seed=6)
    x = torch.zeros(50, D)
    x[:, 0] = torch.randn(50)
    x[torch.arange(50), 1 + torch.randint(0, 3, (50,))] = 1.0
    x[:, 4] = torch.randint(0, 2, (50,)).float()
    cons = Constraints.build(D, categorical_groups=[[1, 2, 3], [4]])
    y = (model(x).argmax(1) + 1) % 2
    res = GenericGenerator(step_size=2.0).search(model, x, y, cons, Convergence("max_iter", 0.5, 10))
    assert torch.equal(res.counterfactual[:, 1:4].sum(1), torch.ones(50))
    assert set(res.counterfactual[:, 1:].unique().tolist()) <= {0.0, 1.0}


def test_bad_inputs_fail_clearly():
    model = _model(3, 2)
    with pytest.raises(ValueError, match="shape"):
        GenericGenerator().search(model, torch.randn(3), torch.tensor([1]))
    with pytest.raises(ValueError, match="targets"):
        GenericGenerator().search(model, torch.randn(4, 3), torch.tensor([1, 0]))
    with pytest.raises(ValueError, match="tau"):
        Convergence("threshold", 1.5, 3)
    with pytest.raises(ValueError, match="unknown generator"):
        make_generator({"type": "nope"})
    with pytest.raises(ValueError, match="unknown key"):
        make_generator({"type": "ecco", "lamda_energy": 1})


def test_make_generator_follows_fidelity():
    assert make_generator({"type": "ecco"}, "reference").step_size == 0.1
    assert make_generator({"type": "ecco"}, "paper").step_size == 0.25
    assert make_generator({"type": "ecco", "step_size": 0.3}, "paper").step_size == 0.3
    assert make_generator({"type": "generic"}, "paper").nascent_inclusive is False
    assert math.isclose(make_generator({"type": "ecco"}).nascent_epsilon, 0.3)
