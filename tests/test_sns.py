"""Stable Neighbor Search: a slow per-row reading of Def. 5 / the authors' loop, invariants, and a linear model whose
answer is known in closed form."""

import math

import pytest
import torch
import torch.nn.functional as F

from ctbench.constraints import Constraints
from ctbench.generators import Convergence, GenericGenerator
from ctbench.generators.sns import SNSGenerator, integrated_score
from ctbench.models import build_model


def _mlp(D=6, K=2, seed=0):
    return build_model({"type": "mlp", "hidden": 16, "layers": 2}, D, K, seed=seed).to(torch.float64)


def reference_sns_one(model, x0, c, radius, eta, T, R, lo=None, hi=None, mut=None, eps=1e-7):
    """One start, one step at a time: a Python sum over the grid, scalar loops for the mask and the clamp; the step
    g/(‖g‖ + eps) as the authors' ``unit_vector`` (eps = 0: g/‖g‖)."""
    x = x0.clone()
    best, best_step = x0.clone(), 0
    for step in range(1, T + 1):
        s = x.clone().requires_grad_(True)
        obj = sum(torch.softmax(model(((i / R) * s)[None]), 1)[0, c] for i in range(1, R + 1))
        g = torch.autograd.grad(obj, s)[0]
        for d, m in enumerate(mut or []):
            if m == "none" or (m == "increase" and g[d] < 0) or (m == "decrease" and g[d] > 0):
                g[d] = 0.0
        if g.norm() > 0:
            x = x + eta * g / (g.norm() + eps)
        dist = (x - x0).norm()
        if dist > radius:
            x = x0 + (x - x0) * (radius / dist)
        if lo is not None:
            for d in range(len(x)):
                x[d] = min(max(x[d], min(lo[d], x0[d])), max(hi[d], x0[d]))
        if int(model(x[None]).argmax(1)) == c:
            best, best_step = x.clone(), step
    return best, best_step


def _starts(model, n=12, D=6, seed=3):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, D, generator=g, dtype=torch.float64)
    return x, model(x).argmax(1)


@pytest.mark.parametrize("with_constraints", [False, True])
@pytest.mark.parametrize("grid_points", [10, 20])
@pytest.mark.parametrize("norm_eps", [1e-7, 0.0])
def test_batched_sns_equals_per_row_reference(with_constraints, grid_points, norm_eps):
    model = _mlp()
    x, c = _starts(model)
    c[:3] = 1 - c[:3]  # three starts without the target label: the answer is the start unless an iterate has it
    kw = dict(radius=0.4, eta=0.05, T=15, R=grid_points)
    lo = hi = mut = None
    cons = None
    if with_constraints:
        mut = ["none", "increase", "both", "decrease", "both", "both"]
        lo, hi = [-1.0] * 6, [1.0] * 6
        cons = Constraints.build(6, domain=(lo, hi), mutability=mut)
    sns = SNSGenerator(radius=kw["radius"], step_size=kw["eta"], max_steps=kw["T"], grid_points=grid_points,
                       noise_std=0.0, norm_eps=norm_eps)
    res = sns.search(model, x, c, cons)
    for i in range(len(x)):
        ref, ref_step = reference_sns_one(model, x[i], int(c[i]), **kw, lo=lo, hi=hi, mut=mut, eps=norm_eps)
        assert torch.allclose(res.counterfactual[i], ref, atol=1e-10), i
        assert int(res.steps[i]) == ref_step
    assert sns.params()["grid_points"] == grid_points


def test_invariants_ball_range_mutability_and_label():
    model = _mlp(D=6)
    x, c = _starts(model, n=64)
    x = x.clamp(-1.5, 1.5)
    mut = ["none", "increase", "decrease", "both", "both", "none"]
    cons = Constraints.build(6, domain=(-1.5, 1.5), mutability=mut)
    sns = SNSGenerator(radius=0.5, step_size=0.05, max_steps=40, noise_std=1e-2, seed=7)
    res = sns.search(model, x, c, cons)
    d = res.counterfactual - x
    assert bool((d.norm(dim=1) <= 0.5 + 1e-9).all())
    assert bool((res.counterfactual >= -1.5).all() and (res.counterfactual <= 1.5).all())
    assert torch.equal(res.counterfactual[:, [0, 5]], x[:, [0, 5]])
    assert bool((d[:, 1] >= 0).all() and (d[:, 2] <= 0).all())
    # every start has the target label, so every answer has it (never an iterate without it)
    assert bool(res.initially_valid.all()) and bool(res.mature.all())
    assert torch.equal(model(res.counterfactual).argmax(1), c)
    assert int((res.steps > 0).sum()) > 32  # most rows moved
    again = SNSGenerator(radius=0.5, step_size=0.05, max_steps=40, noise_std=1e-2, seed=7).search(model, x, c, cons)
    assert torch.equal(res.counterfactual, again.counterfactual)  # the noise comes from the seed


def test_row_does_not_depend_on_batch():
    model = _mlp()
    x, c = _starts(model, n=20)
    sns = SNSGenerator(radius=0.3, step_size=0.02, max_steps=20, noise_std=0.0)
    full = sns.search(model, x, c).counterfactual
    for i in (0, 7, 19):
        alone = sns.search(model, x[i:i + 1], c[i:i + 1]).counterfactual
        assert torch.allclose(full[i], alone[0], atol=1e-12)


def _linear(D=4, seed=1):
    return build_model({"type": "linear"}, D, 2, seed=seed).to(torch.float64)


def test_integrated_score_matches_closed_form_on_a_linear_model():
    """σ₁(t·x) = sigmoid(t·a + b) with a = (w₁ − w₀)·x, b = b₁ − b₀: ∫₀¹ = (softplus(a + b) − softplus(b)) / a."""
    model = _linear()
    lin = model[0]
    w, b = (lin.weight[1] - lin.weight[0]).detach(), float((lin.bias[1] - lin.bias[0]).detach())
    x = torch.tensor([[0.5, -1.0, 2.0, 0.3], [1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    a = x @ w
    exact = (F.softplus(a + b) - F.softplus(torch.tensor(b))) / a
    for R in (10, 20, 1000):
        est = integrated_score(model, x, torch.ones(2, dtype=torch.long), R)
        # right Riemann sum of a monotone integrand: error within |f(1) − f(0)| / R
        bound = (torch.sigmoid(a + b) - torch.sigmoid(torch.tensor(b))).abs() / R
        assert bool(((est - exact).abs() <= bound + 1e-12).all())
    assert torch.allclose(integrated_score(model, x, torch.ones(2, dtype=torch.long), 5000), exact, atol=1e-4)


def test_linear_model_moves_along_the_weight_direction_to_the_ball():
    """For a linear model the SNS gradient is parallel to w = w₁ − w₀ everywhere, so the answer is
    x₀ + min(T·η, δ)·w/‖w‖ (no box) for the unit step (``norm_eps=0``)."""
    model = _linear()
    lin = model[0]
    w = (lin.weight[1] - lin.weight[0]).detach()
    u = w / w.norm()
    x0 = 2.0 * u[None] + torch.tensor([[0.1, 0.2, -0.3, 0.0], [0.0, -0.5, 0.5, 0.2]], dtype=torch.float64)
    c = torch.ones(2, dtype=torch.long)
    assert bool((model(x0).argmax(1) == 1).all())
    for T, eta, delta in ((10, 0.01, 1.0), (50, 0.1, 0.7)):
        res = SNSGenerator(radius=delta, step_size=eta, max_steps=T, noise_std=0.0, norm_eps=0).search(model, x0, c)
        assert torch.allclose(res.counterfactual, x0 + min(T * eta, delta) * u, atol=1e-12)
        before = integrated_score(model, x0, c, 20)
        after = integrated_score(model, res.counterfactual, c, 20)
        assert bool((after > before).all())


def test_sns_raises_the_integrated_score_of_mlp_counterfactuals():
    torch.manual_seed(0)
    model = _mlp(D=6)
    x, pred = _starts(model, n=40)
    base = GenericGenerator(step_size=0.1).search(model, x, 1 - pred)
    ok = base.mature
    res = SNSGenerator(radius=0.5, step_size=0.02, max_steps=60, noise_std=0.0).refine(model, base)
    assert torch.equal(res.factual, x) and torch.equal(res.initially_valid, base.initially_valid)
    assert bool(res.mature[ok].all())
    before = integrated_score(model, base.counterfactual[ok], base.target[ok], 20)
    after = integrated_score(model, res.counterfactual[ok], base.target[ok], 20)
    assert float((after - before).mean()) > 0 and float((after >= before - 1e-9).float().mean()) > 0.9
    assert bool(((res.counterfactual - base.counterfactual).norm(dim=1) <= 0.5 + 1e-9).all())


def test_authors_step_stalls_where_the_class_probability_saturates():
    """The authors' step η·g/(‖g‖ + 1e-7) (the default): on a linear model the path's gradient is
    Σ_t σ'(t·x)·t·w, parallel to w, so every step moves along w by η·‖g‖/(‖g‖ + ε). Far inside the class, where
    σ saturates along the whole path, ‖g‖ ≪ 1e-7 and SNS stalls; near the boundary ‖g‖ ≫ 1e-7 and it takes the
    unit step. ``norm_eps=0`` takes the unit step in both places."""
    model = _linear()
    w = (model[0].weight[1] - model[0].weight[0]).detach()
    b = float((model[0].bias[1] - model[0].bias[0]).detach())
    u = w / w.norm()
    near = ((0.5 - b) / w.norm()) * u  # logit gap 0.5 at t = 1
    far = near + (400.0 / w.norm()) * u  # logit gap ≥ 40 at every grid point t ≥ 0.1: σ' < 1e-17, saturated
    c = torch.ones(1, dtype=torch.long)
    eta, T = 0.01, 3
    moved = {}
    for eps in (1e-7, 0.0):
        for name, x0 in (("near", near[None]), ("far", far[None])):
            res = SNSGenerator(radius=10.0, step_size=eta, max_steps=T, grid_points=10, noise_std=0.0,
                               norm_eps=eps).search(model, x0, c)
            moved[eps, name] = float((res.counterfactual - x0).norm())
    assert math.isclose(moved[0.0, "near"], T * eta, rel_tol=1e-9)
    assert math.isclose(moved[0.0, "far"], T * eta, rel_tol=1e-9)
    assert math.isclose(moved[1e-7, "near"], T * eta, rel_tol=1e-4)  # ‖g‖ ≫ ε: the unit step
    assert moved[1e-7, "far"] < 0.01 * T * eta                        # ‖g‖ ≪ ε: SNS stalls
    assert SNSGenerator().params()["norm_eps"] == 1e-7


def test_start_without_label_and_no_valid_iterate_returns_the_start():
    model = _linear()
    x0 = torch.tensor([[-5.0, -5.0, -5.0, -5.0]], dtype=torch.float64)
    c = 1 - model(x0).argmax(1)
    res = SNSGenerator(radius=1e-3, step_size=1e-4, max_steps=5, noise_std=0.0).search(model, x0, c)
    assert torch.equal(res.counterfactual, x0) and not bool(res.mature[0]) and int(res.steps[0]) == 0


def test_presets_and_bad_settings():
    ref = SNSGenerator()
    assert (ref.grid_points, ref.max_steps, ref.step_size, ref.radius) == (20, 100, 1e-3, 0.3)
    paper = SNSGenerator(radius=2.4, fidelity="paper")
    assert (paper.grid_points, paper.max_steps) == (10, 200) and math.isclose(paper.step_size, 2 * 2.4 / 200)
    assert SNSGenerator(fidelity="paper", grid_points=20).grid_points == 20
    for kw, word in (({"radius": 0.0}, "sns.radius"), ({"radius": -1}, "sns.radius"),
                     ({"fidelity": "x"}, "sns.fidelity"), ({"grid_points": 0}, "sns.grid_points"),
                     ({"step_size": 0}, "sns.step_size"), ({"norm_eps": -1e-7}, "sns.norm_eps"),
                     ({"norm_eps": "1e-7"}, "sns.norm_eps"), ({"norm_eps": True}, "sns.norm_eps"),
                     ({"norm_eps": math.inf}, "sns.norm_eps"), ({"norm_eps": math.nan}, "sns.norm_eps")):
        with pytest.raises(ValueError, match=word):
            SNSGenerator(**kw)


def test_refine_leaves_failed_base_rows_alone_unless_asked():
    model = _mlp()
    x, pred = _starts(model, n=30)
    base = GenericGenerator(step_size=0.5).search(model, x, 1 - pred, convergence=Convergence(max_iter=100))
    base.counterfactual[:5] = x[:5]  # five failed searches: the factual itself, without the target label
    sns = SNSGenerator(radius=2.0, step_size=0.1, max_steps=40, noise_std=0.0)
    res = sns.refine(model, base)
    assert torch.equal(res.counterfactual[:5], x[:5]) and not bool(res.mature[:5].any())
    assert bool((res.steps[:5] == 0).all())
    every = sns.refine(model, base, only_valid=False)
    assert bool(every.mature[:5].any())  # with a 2.0 ball some of them reach the target class
    valid = model(base.counterfactual).argmax(1) == base.target
    assert int(valid.sum()) >= 20  # rows do not interact: the valid rows get the same answer either way
    assert torch.allclose(every.counterfactual[valid], res.counterfactual[valid], atol=1e-12)
    assert torch.equal(res.counterfactual[~valid], base.counterfactual[~valid])
