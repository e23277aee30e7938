"""Each loss part's gradient on a linear model against its closed form, and which parts each objective uses."""

import pytest
import torch

from ctbench.training import CounterfactualGroup, Objective

D, K, n, m = 4, 3, 7, 5


@pytest.fixture
def setup():
    g = torch.Generator().manual_seed(0)
    model = torch.nn.Linear(D, K).double()
    with torch.no_grad():
        model.weight.copy_(torch.randn(K, D, generator=g, dtype=torch.float64))
        model.bias.copy_(torch.randn(K, generator=g, dtype=torch.float64))
    rnd = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    xb, yb = rnd(n, D), torch.randint(0, K, (n,), generator=g)
    grp = CounterfactualGroup(rnd(m, D), rnd(m, D), torch.randint(0, K, (m,), generator=g), rnd(m, D),
                              torch.randint(0, K, (m,), generator=g))
    return model, xb, yb, grp


def _grads(model, loss):
    model.zero_grad()
    loss.backward()
    return model.weight.grad.clone(), model.bias.grad.clone()


def _ce_grad(W, b, X, y):
    p = torch.softmax(X @ W.T + b, 1)
    r = (p - torch.nn.functional.one_hot(y, K).double()) / X.shape[0]
    return r.T @ X, r.sum(0)


def test_part_gradients_match_closed_forms(setup):
    model, xb, yb, grp = setup
    W, b = model.weight.detach(), model.bias.detach()
    oh = torch.nn.functional.one_hot(grp.target, K).double()  # (m, K)
    f_cf = (grp.x_cf @ W.T + b).gather(1, grp.target[:, None]).squeeze(1)
    f_pl = (grp.x_plus @ W.T + b).gather(1, grp.target[:, None]).squeeze(1)

    for part, expected in {
        "clf": _ce_grad(W, b, xb, yb),
        # div = mean f(x')[y⁺] − f(x⁺)[y⁺]: ∂/∂W_k = mean_j 1[y⁺_j = k](x'_j − x⁺_j); bias cancels
        "div": (oh.T @ (grp.x_cf - grp.x_plus) / m, torch.zeros(K, dtype=torch.float64)),
        # reg = mean f(x⁺)² + f(x')²: ∂/∂W_k = mean_j 1[k](2 f⁺ x⁺ + 2 f' x'), ∂/∂b_k = mean_j 1[k](2 f⁺ + 2 f')
        "reg": (oh.T @ (2 * f_pl[:, None] * grp.x_plus + 2 * f_cf[:, None] * grp.x_cf) / m,
                oh.T @ (2 * f_pl + 2 * f_cf) / m),
        "adv": _ce_grad(W, b, grp.x_ae, grp.y_ae),
    }.items():
        _, parts = Objective("full")(model, xb, yb, grp)
        gW, gb = _grads(model, parts[part])
        torch.testing.assert_close(gW, expected[0], rtol=1e-10, atol=1e-12, msg=part)
        torch.testing.assert_close(gb, expected[1], rtol=1e-10, atol=1e-12, msg=part)


@pytest.mark.parametrize("name,used", [("full", "clf div reg adv"), ("energy", "clf div reg"),
                                       ("adversarial", "clf adv"), ("ct", "clf div reg adv"), ("cd", "clf div reg")])
def test_objective_total_uses_its_parts(setup, name, used):
    model, xb, yb, grp = setup
    obj = Objective(name, lambda_clf=1.5, lambda_div=0.5, lambda_reg=0.1, lambda_adv=0.25)
    total, parts = obj(model, xb, yb, grp)
    lam = obj.lambdas()
    expected = sum(lam[k] * parts[k] for k in used.split())
    torch.testing.assert_close(total, expected)
    assert set(parts) == {"clf", "div", "reg", "adv"}


def test_vanilla_is_plain_cross_entropy(setup):
    model, xb, yb, grp = setup
    total, parts = Objective("vanilla")(model, xb, yb, grp)
    torch.testing.assert_close(total, torch.nn.functional.cross_entropy(model(xb), yb))
    assert set(parts) == {"clf"} and not Objective("bl").needs_counterfactuals


def test_immature_counterfactual_gives_zero_div_but_ridge(setup):
    model, xb, yb, grp = setup
    same = CounterfactualGroup(grp.x_plus, grp.x_ae, grp.target, grp.x_plus, grp.y_ae)  # x' := x⁺
    _, parts = Objective("full")(model, xb, yb, same)
    f = model(grp.x_plus).gather(1, grp.target[:, None]).squeeze(1)
    assert float(parts["div"].detach()) == 0.0
    torch.testing.assert_close(parts["reg"], (2 * f.square()).mean())


def test_unknown_objective():
    with pytest.raises(ValueError, match="unknown objective"):
        Objective("fancy")
