"""The base methods of Black et al.'s Table 1 (Min-ℓ1/ℓ2 elastic net, Min-ε PGD, latent random search): batched
results against slow per-row readings, closed forms on a linear model, invariants, and the method registry."""

import math

import pytest
import torch
import torch.nn.functional as F

from ctbench.constraints import Constraints
from ctbench.generators.consistency_methods import METHODS, WithSNS, make_method
from ctbench.generators.elastic_net import ElasticNetGenerator, shrinkage
from ctbench.generators.latent_search import LatentRandomSearch
from ctbench.generators.pgd import MinEpsPGDGenerator, median_norm
from ctbench.generators.prototype import PrototypeGenerator
from ctbench.generators.sns import SNSGenerator
from ctbench.generators.vae import VAE
from ctbench.models import build_model

MUT = ["none", "increase", "both", "decrease", "both", "both"]


def _mlp(D=6, K=2, seed=0):
    return build_model({"type": "mlp", "hidden": 16, "layers": 2}, D, K, seed=seed).to(torch.float64)


def _factuals(model, n=10, D=6, seed=3, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    x = scale * torch.randn(n, D, generator=g, dtype=torch.float64)
    return x, 1 - model(x).argmax(1)


def _mutate(v, x0, m):
    return {"none": x0, "increase": max(v, x0), "decrease": min(v, x0)}.get(m, v)


# -- elastic net ------------------------------------------------------------------------------------------------

def reference_ead_one(model, x0, t, beta, rule, kappa, lr0, K, bss, c0, lo, hi, mut, zero):
    """One factual, ART's loops written out (scalar shrinkage, scalar binary search)."""
    D = len(x0)
    c, clo, chi = c0, 0.0, 1e10
    best, bestd, beststep = x0.clone(), math.inf, 0
    for r in range(bss):
        xa, ya, found = x0.clone(), x0.clone(), False
        for k in range(K):
            lr = lr0 * (1 - k / K) ** 0.5
            s = ya.clone().requires_grad_(True)
            p = torch.softmax(model(s[None]), 1)[0]
            m = max(p[j] for j in range(len(p)) if j != t) - p[t] + kappa
            g = torch.autograd.grad(c * torch.clamp(m, min=0) + ((s - x0) ** 2).sum(), s)[0]
            if zero and m < 0:
                g = torch.zeros_like(g)
            z = ya - lr * g
            xn = x0.clone()
            for d in range(D):
                lo_d = -math.inf if lo is None else min(lo[d], float(x0[d]))
                hi_d = math.inf if hi is None else max(hi[d], float(x0[d]))
                if z[d] - x0[d] > beta:
                    xn[d] = min(float(z[d]) - beta, hi_d)
                elif z[d] - x0[d] < -beta:
                    xn[d] = max(float(z[d]) + beta, lo_d)
                if mut is not None:
                    xn[d] = _mutate(float(xn[d]), float(x0[d]), mut[d])
            ya = xn + (k / (k + 3)) * (xn - xa)
            xa = xn
            d1, d2 = float((xa - x0).abs().sum()), float(((xa - x0) ** 2).sum())
            dist = {"L1": d1, "L2": d2, "EN": beta * d1 + d2}[rule]
            if int(model(xa[None]).argmax(1)) == t:
                found = True
                if dist < bestd:
                    best, bestd, beststep = xa.clone(), dist, r * K + k + 1
        if found:
            chi = min(chi, c)
            c = (clo + chi) / 2 if chi < 1e9 else c
        else:
            clo = max(clo, c)
            c = (clo + chi) / 2 if chi < 1e9 else c * 10
    return best, beststep


@pytest.mark.parametrize("rule,beta,zero,with_constraints", [("L1", 0.05, True, False), ("L2", 0.0, True, True),
                                                             ("EN", 0.01, False, True)])
def test_elastic_net_batched_equals_per_row_reference(rule, beta, zero, with_constraints):
    model = _mlp()
    x, t = _factuals(model, n=6)
    kw = dict(kappa=0.2, lr0=0.05, K=15, bss=4, c0=0.1)
    lo = hi = mut = cons = None
    if with_constraints:
        lo, hi, mut = [-2.0] * 6, [2.0] * 6, MUT
        cons = Constraints.build(6, domain=(lo, hi), mutability=mut)
    gen = ElasticNetGenerator(rule, beta=beta, confidence=kw["kappa"], learning_rate=kw["lr0"], max_iter=kw["K"],
                              binary_search_steps=kw["bss"], initial_const=kw["c0"], art_zero_gradient=zero)
    res = gen.search(model, x, t, cons)
    for i in range(len(x)):
        ref, step = reference_ead_one(model, x[i], int(t[i]), beta, rule, **kw, lo=lo, hi=hi, mut=mut, zero=zero)
        assert torch.allclose(res.counterfactual[i], ref, atol=1e-9), i
        assert int(res.steps[i]) == step
    assert bool(res.mature.sum() >= 4)


def test_shrinkage_snaps_small_changes_and_shrinks_large_ones():
    x0 = torch.zeros(1, 4, dtype=torch.float64)
    z = torch.tensor([[0.5, -0.5, 2.0, -3.0]], dtype=torch.float64)
    assert torch.equal(shrinkage(z, x0, 1.0, None, None), torch.tensor([[0.0, 0.0, 1.0, -2.0]], dtype=torch.float64))
    lo, hi = torch.full((1, 4), -1.5, dtype=torch.float64), torch.full((1, 4), 0.5, dtype=torch.float64)
    assert torch.equal(shrinkage(z, x0, 1.0, lo, hi), torch.tensor([[0.0, 0.0, 0.5, -1.5]], dtype=torch.float64))
    assert torch.equal(shrinkage(z, x0, 0.0, None, None), z)


def test_min_l1_is_sparser_and_cheaper_in_l1_than_min_l2():
    model = _mlp(D=6, seed=2)
    x, t = _factuals(model, n=60, seed=5)
    l1 = make_method("min_l1", beta=0.05, learning_rate=0.05).search(model, x, t)  # ART's 9 × 100 iterations
    l2 = make_method("min_l2", learning_rate=0.05).search(model, x, t)
    both = l1.mature & l2.mature
    assert int(both.sum()) == 60  # feasible problems are solved
    d1, d2 = (l1.counterfactual - x)[both], (l2.counterfactual - x)[both]
    assert float(d1.abs().sum(1).mean()) < float(d2.abs().sum(1).mean())
    assert float(d2.norm(dim=1).mean()) < float(d1.norm(dim=1).mean()) * 1.05
    assert float((d1.abs() > 1e-9).float().sum(1).mean()) < float((d2.abs() > 1e-9).float().sum(1).mean())


def test_elastic_net_invariants():
    model = _mlp()
    x, t = _factuals(model, n=30)
    x = x.clamp(-2, 2)
    cons = Constraints.build(6, domain=(-2.0, 2.0), mutability=MUT)
    res = make_method("min_l2", learning_rate=0.05, max_iter=40, binary_search_steps=5).search(model, x, t, cons)
    d = res.counterfactual - x
    assert torch.equal(res.counterfactual[:, 0], x[:, 0])
    assert bool((d[:, 1] >= 0).all() and (d[:, 3] <= 0).all())
    assert bool((res.counterfactual.abs() <= 2).all())
    assert torch.equal(res.mature, model(res.counterfactual).argmax(1) == t)
    assert torch.equal(res.counterfactual[~res.mature], x[~res.mature])  # never flipped: the factual, as ART
    already = make_method("min_l2").search(model, x, 1 - t)
    assert bool(already.initially_valid.all()) and torch.equal(already.counterfactual, x)


# -- Min-ε PGD --------------------------------------------------------------------------------------------------

def reference_pgd_one(model, x0, t, eps_max, n_levels, steps, lo=None, hi=None, mut=None):
    for k in range(1, n_levels + 1):
        eps = eps_max * k / n_levels
        alpha = 2 * eps / steps
        x = x0.clone()
        for _ in range(steps):
            s = x.clone().requires_grad_(True)
            g = torch.autograd.grad(F.cross_entropy(model(s[None]), torch.tensor([t])), s)[0]
            for d, m in enumerate(mut or []):
                if m == "none" or (m == "increase" and g[d] > 0) or (m == "decrease" and g[d] < 0):
                    g[d] = 0.0  # descent on CE: x moves along −g
            if g.norm() > 0:
                x = x - alpha * g / g.norm()
            if (x - x0).norm() > eps:
                x = x0 + (x - x0) * (eps / (x - x0).norm())
            if lo is not None:
                for d in range(len(x)):
                    x[d] = min(max(x[d], min(lo[d], x0[d])), max(hi[d], x0[d]))
        if int(model(x[None]).argmax(1)) == t:
            return x, k * steps
    return x, n_levels * steps


@pytest.mark.parametrize("with_constraints", [False, True])
def test_min_eps_pgd_batched_equals_per_row_reference(with_constraints):
    model = _mlp()
    x, t = _factuals(model, n=8)
    lo = hi = mut = cons = None
    if with_constraints:
        lo, hi, mut = [-2.0] * 6, [2.0] * 6, MUT
        cons = Constraints.build(6, domain=(lo, hi), mutability=mut)
    gen = MinEpsPGDGenerator(max_epsilon=2.0, n_levels=5, steps=10, random_start=False)
    res = gen.search(model, x, t, cons)
    for i in range(len(x)):
        ref, spent = reference_pgd_one(model, x[i], int(t[i]), 2.0, 5, 10, lo, hi, mut)
        assert torch.allclose(res.counterfactual[i], ref, atol=1e-10), i
        assert int(res.steps[i]) == spent
    assert len(set(res.steps.tolist())) > 1  # rows stopped at different bounds


def test_min_eps_pgd_on_a_linear_model_stops_at_the_first_bound_past_the_boundary():
    """Linear model: the boundary is at L2 distance |a|/‖w‖; PGD moves straight along ±w to the ball's edge, so the
    answer is x + ε_k·ŵ with ε_k the first level above that distance."""
    model = build_model({"type": "linear"}, 4, 2, seed=1).to(torch.float64)
    lin = model[0]
    w = (lin.weight[1] - lin.weight[0]).detach()
    b = float((lin.bias[1] - lin.bias[0]).detach())
    u = w / w.norm()
    base = torch.tensor([[0.3, -0.2, 0.1, 0.0], [1.0, 0.0, -1.0, 0.5], [0.0, 0.5, 0.5, -0.5]], dtype=torch.float64)
    dist = torch.tensor([0.23, 0.61, 1.37], dtype=torch.float64)
    x = base - ((base @ w + b) / w.norm())[:, None] * u - dist[:, None] * u  # class 0, at distance `dist`
    t = torch.ones(3, dtype=torch.long)
    res = MinEpsPGDGenerator(max_epsilon=2.0, n_levels=10, steps=20, random_start=False).search(model, x, t)
    eps_k = torch.ceil(dist / 0.2) * 0.2
    assert torch.allclose(res.counterfactual, x + eps_k[:, None] * u, atol=1e-10)
    assert res.steps.tolist() == (torch.ceil(dist / 0.2) * 20).long().tolist() and bool(res.mature.all())


def test_min_eps_pgd_invariants_per_row_bounds_and_seed():
    model = _mlp()
    x, t = _factuals(model, n=40)
    x = x.clamp(-2, 2)
    cons = Constraints.build(6, domain=(-2.0, 2.0), mutability=MUT)
    eps = torch.linspace(0.5, 3.0, 40, dtype=torch.float64)
    gen = MinEpsPGDGenerator(n_levels=10, steps=20, random_start=True, seed=4)
    res = gen.search(model, x, t, cons, max_epsilon=eps)
    d = res.counterfactual - x
    assert bool((d.norm(dim=1) <= eps + 1e-9).all()) and bool((res.counterfactual.abs() <= 2).all())
    assert torch.equal(res.counterfactual[:, 0], x[:, 0]) and bool((d[:, 1] >= 0).all() and (d[:, 3] <= 0).all())
    assert torch.equal(res.mature, model(res.counterfactual).argmax(1) == t) and int(res.mature.sum()) >= 25
    again = MinEpsPGDGenerator(n_levels=10, steps=20, random_start=True, seed=4).search(model, x, t, cons,
                                                                                       max_epsilon=eps)
    assert torch.equal(res.counterfactual, again.counterfactual)
    X = torch.tensor([[3.0, 4.0], [0.0, 1.0], [6.0, 8.0]])
    assert median_norm(X) == 5.0


# -- latent random search ---------------------------------------------------------------------------------------

def test_latent_random_search_picks_the_closest_valid_decoded_sample():
    model = _mlp(D=6)
    vae = VAE(6, latent_dim=3, hidden=8, seed=0).to(torch.float64)
    x, t = _factuals(model, n=5)
    cons = Constraints.build(6, domain=(-3.0, 3.0), mutability=MUT)
    gen = LatentRandomSearch(vae, n_samples=64, radius=2.0, seed=11)
    res = gen.search(model, x, t, cons)
    assert torch.equal(res.counterfactual[:, 0], x[:, 0]) and bool((res.counterfactual.abs() <= 3).all())
    assert torch.equal(res.mature, model(res.counterfactual).argmax(1) == t)
    # the same draws, selected row by row
    with torch.no_grad():
        z0 = vae.encode_params(x)[0]
        dec0 = torch.clamp(cons.project(vae.decode(z0), x, cons.codes()), -3, 3)
        todo = (model(dec0).argmax(1) != t).nonzero().squeeze(1)
        g = torch.Generator().manual_seed(11)
        n = len(todo) * 64
        u = torch.randn((n, 3), generator=g, dtype=torch.float64)
        u = u / u.norm(dim=1, keepdim=True)
        r = torch.rand((n, 1), generator=g, dtype=torch.float64) * 2.0
        for j, i in enumerate(todo.tolist()):
            zs = z0[i] + r[j * 64:(j + 1) * 64] * u[j * 64:(j + 1) * 64]
            cand = torch.clamp(cons.project(vae.decode(zs), x[i].expand(64, 6), cons.codes()), -3, 3)
            ok = model(cand).argmax(1) == t[i]
            if ok.any():
                dists = (cand - x[i]).norm(dim=1).masked_fill(~ok, math.inf)
                assert torch.allclose(res.counterfactual[i], cand[dists.argmin()], atol=1e-12)
            else:
                assert torch.allclose(res.counterfactual[i], dec0[i]) and not bool(res.mature[i])


# -- prototype-guided ----------------------------------------------------------------------------------------------

def test_prototype_is_the_kth_nearest_training_point_of_the_target_class():
    model = _mlp()
    X_train, _ = _factuals(model, n=300, seed=8)
    x, t = _factuals(model, n=7)
    gen = PrototypeGenerator(X_train, k=5)
    proto = gen.prototypes(model, x, t)
    pred = model(X_train).argmax(1)
    for i in range(len(x)):
        pool = [p for p, c in zip(X_train, pred, strict=True) if int(c) == int(t[i])]
        pool.sort(key=lambda p: float((p - x[i]).norm()))
        assert torch.equal(proto[i], pool[4])


def test_prototype_term_pulls_towards_the_prototype_and_theta_zero_is_the_elastic_net():
    model = _mlp()
    X_train, _ = _factuals(model, n=300, seed=8)
    x, t = _factuals(model, n=30)
    kw = dict(max_iter=40, binary_search_steps=4)
    plain = PrototypeGenerator(X_train, theta=0.0, **kw).search(model, x, t)
    en = ElasticNetGenerator("EN", beta=0.1, confidence=0.0, initial_const=10.0, art_zero_gradient=False,
                             **kw).search(model, x, t)
    assert torch.equal(plain.counterfactual, en.counterfactual)
    gen = PrototypeGenerator(X_train, theta=5.0, **kw)
    guided = gen.search(model, x, t)
    proto = gen.prototypes(model, x, t)
    ok = guided.mature & plain.mature
    assert int(ok.sum()) >= 25
    to_proto = lambda r: (r.counterfactual[ok] - proto[ok]).norm(dim=1).mean()  # noqa: E731
    assert float(to_proto(guided)) < float(to_proto(plain))
    with pytest.raises(ValueError, match="X_train"):
        PrototypeGenerator(None)


# -- the registry and SNS on top ---------------------------------------------------------------------------------

def test_every_method_with_and_without_sns():
    model = _mlp()
    x, t = _factuals(model, n=20)
    vae = VAE(6, latent_dim=3, hidden=8, seed=0).to(torch.float64)
    small = {"min_l1": dict(beta=0.05, learning_rate=0.05, max_iter=20, binary_search_steps=3, initial_const=1.0),
             "min_l2": dict(learning_rate=0.05, max_iter=20, binary_search_steps=3, initial_const=1.0),
             "min_eps_pgd": dict(max_epsilon=3.0, steps=10), "latent_random": dict(n_samples=200, radius=4.0),
             "prototype": dict(X_train=_factuals(model, n=200, seed=9)[0], max_iter=20, binary_search_steps=3)}
    assert len(METHODS) == 10
    for name in METHODS:
        base_name = name.removesuffix("+sns")
        kw = dict(small[base_name], vae=vae) if base_name == "latent_random" else small[base_name]
        if name.endswith("+sns"):
            gen = make_method(name, sns={"radius": 0.4, "step_size": 0.02, "max_steps": 20}, **kw)
            assert isinstance(gen, WithSNS) and gen.params()["sns"]["radius"] == 0.4
            base = gen.base.search(model, x, t)
            res = gen.search(model, x, t)
            assert torch.equal(res.factual, x)
            assert bool(((res.counterfactual - base.counterfactual).norm(dim=1) <= 0.4 + 1e-9).all())
            assert bool(res.mature[base.mature].all())  # SNS never loses the label of a valid start
            assert torch.equal(res.counterfactual[~base.mature], base.counterfactual[~base.mature])
            assert torch.equal(res.mature, base.mature)  # ... and never repairs a failed search
        else:
            res = make_method(name, **kw).search(model, x, t)
        assert torch.equal(res.mature, model(res.counterfactual).argmax(1) == t)
        assert float(res.mature.float().mean()) > 0.5, name


def test_bad_method_names_and_settings_fail_clearly():
    with pytest.raises(ValueError, match="unknown name 'min_l3'.*min_l1"):
        make_method("min_l3")
    with pytest.raises(ValueError, match="sns.radius"):
        make_method("min_l2+sns", sns={"radius": 0.0})
    with pytest.raises(ValueError, match="without SNS"):
        make_method("min_l2", sns={"radius": 0.1})
    with pytest.raises(ValueError, match="needs a trained VAE"):
        make_method("latent_random")
    with pytest.raises(ValueError, match="X_train"):
        make_method("prototype+sns")
    with pytest.raises(ValueError, match="decision_rule"):
        ElasticNetGenerator("L3")
    with pytest.raises(ValueError, match="max_epsilon"):
        MinEpsPGDGenerator(max_epsilon=0)
    assert isinstance(make_method("min_eps_pgd+sns", sns=SNSGenerator(radius=1.0)).sns, SNSGenerator)
