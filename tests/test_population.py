"""Populations: stacked models, the batched search over members, and the population trainer.

The reference for every check is the single-model code path (``GradientGenerator.search`` and ``trainer.train``),
run in float64 so that agreement can be asserted to round-off.
"""

import copy

import numpy as np
import pytest
import torch

from ctbench.constraints import Constraints
from ctbench.fidelity import resolve_fidelity
from ctbench.generators import Convergence, make_generator
from ctbench.generators.population import MemberSearchSettings, PopulationSearchResult, population_search
from ctbench.generators.vae import VAE
from ctbench.models import build_model
from ctbench.stacked import StackedMLP, stackable
from ctbench.training import Objective, TrainParams, train
from ctbench.training.population import Member, train_population

F64 = torch.float64


def _models(specs, D=3, K=2):
    return [build_model(spec, D, K, seed=s).double() for s, spec in enumerate(specs)]


@pytest.mark.parametrize("spec", [{"type": "mlp"}, {"type": "mlp", "layers": 2, "hidden": 8}, {"type": "linear"}])
def test_stacked_forward_member_and_input_grad_match_each_model(spec):
    models = _models([spec] * 4, D=5, K=3)
    st = StackedMLP.from_models(models)
    x = torch.randn(4, 7, 5, dtype=F64)
    logits = st(x)
    for g, m in enumerate(models):
        torch.testing.assert_close(logits[g], m(x[g]), rtol=0, atol=1e-12)
        back = st.member(g)
        assert type(back) is type(m)
        for a, b in zip(back.parameters(), m.parameters(), strict=True):
            assert torch.equal(a, b)
        # refilled in place: another member's model object takes member g's weights, strides and all
        other = st.member((g + 1) % 4)
        same = st.member(g, into=other)
        assert same is other
        for a, b in zip(same.parameters(), m.parameters(), strict=True):
            assert torch.equal(a, b) and a.stride() == b.stride()
    # the hand-written input gradient equals autograd's for an arbitrary upstream gradient
    dl = torch.randn(4, 7, 3, dtype=F64)
    logits, hidden = st.forward_cached(x)
    xg = x.clone().requires_grad_(True)
    (auto,) = torch.autograd.grad((st(xg) * dl).sum(), xg)
    torch.testing.assert_close(st.input_grad(hidden, dl), auto, rtol=0, atol=1e-12)


def test_unstackable_models_are_refused_by_name():
    lenet = build_model({"type": "lenet"}, 784, 10, seed=0)
    assert not stackable(lenet)
    with pytest.raises(ValueError, match="cannot be stacked"):
        StackedMLP.from_models([lenet])
    with pytest.raises(ValueError, match="differs from member 0"):
        StackedMLP.from_models(_models([{"type": "mlp"}, {"type": "mlp", "hidden": 8}]))


def _search_case(with_constraints):
    D = 4
    models = _models([{"type": "mlp"}] * 3, D=D)
    gens = [make_generator({"type": "ecco", "lambda_energy": 5.0}),
            make_generator({"type": "generic", "lambda_cost": 0.01, "step_size": 0.3}),
            make_generator({"type": "ecco", "lambda_energy": 1.0, "lambda_cost": 0.0})]
    convs = [Convergence("threshold", 0.75, 30), Convergence("threshold", 0.9, 12), Convergence("max_iter", 0.5, 7)]
    cons = None
    if with_constraints:
        cons = Constraints.build(D, domain=([-2.0] * D, [2.0] * D), mutability=["none", "increase", "both", "both"],
                                 categorical_groups=[[2, 3]])
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 50, D, generator=g, dtype=F64)
    if with_constraints:
        x[..., 2:] = torch.nn.functional.one_hot(torch.randint(0, 2, (3, 50), generator=g), 2).to(F64)
    st = StackedMLP.from_models(models)
    with torch.no_grad():
        target = (st(x).argmax(-1) + 1) % 2
    return models, gens, convs, cons, x, target, st


@pytest.mark.parametrize("with_constraints", [False, True])
def test_population_search_equals_single_searches(with_constraints):
    models, gens, convs, cons, x, target, st = _search_case(with_constraints)
    valid = torch.ones(3, 50, dtype=torch.bool)
    valid[1, 40:] = False  # member 1 has only 40 factuals: padding is never searched
    res = population_search(st, x, target, MemberSearchSettings.build(gens, convs, dtype=F64), cons, valid)
    for g in range(3):
        n = int(valid[g].sum())
        ref = gens[g].search(models[g], x[g, :n], target[g, :n], cons, convs[g])
        for name in ("counterfactual", "nascent", "prob_target"):
            torch.testing.assert_close(getattr(res, name)[g, :n], getattr(ref, name), rtol=0, atol=1e-10)
        for name in ("mature", "steps", "initially_valid"):
            assert torch.equal(getattr(res, name)[g, :n], getattr(ref, name)), name
    if with_constraints:
        assert torch.equal(res.counterfactual[..., 0], x[..., 0])           # immutable: bit-identical
        assert bool((res.counterfactual[..., 1] >= x[..., 1]).all())          # increase-only
        assert bool((res.counterfactual[..., 2:].abs() <= 2.0).all())         # domain (mutable features)
        assert not res.counterfactual.requires_grad


def test_revise_population_search_equals_single_searches_with_each_members_random_stream():
    from ctbench.generators.population import LatentSpace

    models, _, _, cons, x, target, st = _search_case(True)
    vae = VAE(4, 2, 8, seed=0)
    vae.fit(x.reshape(-1, 4).float(), epochs=2, batch_size=50, seed=0)
    vae.double()
    gens = [make_generator({"type": "revise", "lambda_cost": c}, vae=vae) for c in (0.0, 0.01, 0.1)]
    convs = [Convergence("threshold", 0.75, 15), Convergence("threshold", 0.6, 9), Convergence("max_iter", 0.5, 5)]
    rngs = [torch.Generator().manual_seed(10 + g) for g in range(3)]
    res = population_search(st, x, target, MemberSearchSettings.build(gens, convs, dtype=F64), cons,
                            latent=LatentSpace(vae, rngs))
    for g in range(3):
        ref = gens[g].search(models[g], x[g], target[g], cons, convs[g], torch.Generator().manual_seed(10 + g))
        torch.testing.assert_close(res.counterfactual[g], ref.counterfactual, rtol=0, atol=1e-10)
        torch.testing.assert_close(res.nascent[g], ref.nascent, rtol=0, atol=1e-10)
        assert torch.equal(res.steps[g], ref.steps) and torch.equal(res.mature[g], ref.mature)
        # the member's stream was consumed exactly as the single search consumed its own
        after = _consumed(gens[g], models[g], x[g], target[g], cons, convs[g], 10 + g)
        assert torch.equal(torch.rand(3, generator=rngs[g]), torch.rand(3, generator=after))
    assert torch.equal(res.counterfactual[..., 0], x[..., 0])  # REVISE projects onto the mutability set


def _consumed(gen, model, x, target, cons, conv, seed):
    rng = torch.Generator().manual_seed(seed)
    gen.search(model, x, target, cons, conv, rng)
    return rng


def test_search_settings_reject_unbatchable_generators():
    from ctbench.generators.base import GradientGenerator

    class Normalised(GradientGenerator):  # a custom direction hook cannot be batched
        def direction(self, grad):
            return -grad / grad.norm(dim=-1, keepdim=True)

    with pytest.raises(ValueError, match="cannot be batched"):
        MemberSearchSettings.build([Normalised()], [Convergence()])


def _data(n=240, D=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.standard_normal((n, D)) + 1.5 * (2 * y[:, None] - 1)
    return X, y


def _member(seed, objective="full", *, gen="ecco", tau=0.75, T=10, nce=40, lr=1e-3, burnin=0.0, epochs=3,
            batch_size=32, layers=1, rows=None, name=None, **obj):
    model = build_model({"type": "mlp", "layers": layers}, 3, 2, seed=seed).double()
    generator = None if objective == "vanilla" else make_generator({"type": gen})
    return Member(model, Objective(objective, **obj),
                  TrainParams(epochs=epochs, batch_size=batch_size, nce=nce, seed=seed, lr=lr, burnin=burnin),
                  generator, Convergence("threshold", tau, T), name=name or f"m{seed}{objective}", rows=rows)


def _single(member, X, y, **kw):
    m = member
    rows = np.arange(len(X)) if m.rows is None else np.asarray(m.rows)
    model = copy.deepcopy(m.model)  # train_population leaves the members' initial models untouched
    return train(model, X[rows], y[rows], objective=m.objective, generator=m.generator, params=m.params,
                 convergence=m.convergence, dtype=F64, **kw)


LOGGED = ["loss", "clf", "div", "reg", "adv", "share_mature", "mean_steps", "nonfinite_batches"]


def _assert_same(result, ref_model, ref_log):
    assert result.ok, result.error
    for a, b in zip(result.model.parameters(), ref_model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.log[LOGGED].to_numpy(float), ref_log[LOGGED].to_numpy(float),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.log["acc_train"], ref_log["acc_train"], atol=1e-6)


@pytest.mark.parametrize("mutability", [None, [0]])
def test_each_member_equals_the_single_model_trainer(mutability):
    X, y = _data()
    cons = Constraints.build(3, domain=([-5.0] * 3, [5.0] * 3), mutability=mutability)
    members = [_member(0, "full"), _member(1, "vanilla"), _member(2, "energy", gen="generic", tau=0.9, T=12),
               _member(3, "adversarial", nce=25, lr=3e-3, tau=0.6, T=8), _member(4, "full", burnin=0.5, T=30),
               _member(5, "full", lambda_reg=0.5, layers=1, nce=None)]
    results = train_population(members, X, y, constraints=cons, dtype=F64, X_val=X[:40], y_val=y[:40])
    # one program per rows-per-batch pattern: (full, energy) share nce 40 and no burn-in; the others differ in
    # counterfactuals (vanilla), nce (25, all rows) or burn-in
    assert [r.population_size for r in results] == [2, 1, 2, 1, 1, 1]
    for m, r in zip(members, results, strict=True):
        ref_model, ref_log = _single(m, X, y, constraints=cons, X_val=X[:40], y_val=y[:40])
        _assert_same(r, ref_model, ref_log)
    assert results[1].log["share_mature"].isna().all()               # vanilla: no counterfactuals
    assert results[4].log["share_mature"].isna().tolist() == [True, True, False]  # burn-in round(0.5·3) = 2


def test_member_by_member_search_equals_the_single_model_trainer(monkeypatch):
    """The epoch search member by member (``_search_each``: large factual sets), forced here for every size: each
    member's model object is made once and refilled each epoch, and every member still equals its single run."""
    import ctbench.training.population_search as ps

    monkeypatch.setattr(ps, "PER_MEMBER_SEARCH_FLOATS", 0)
    calls = []
    real = ps.EpochSearch._search_each

    def spy(self, *args):
        calls.append(1)
        return real(self, *args)

    monkeypatch.setattr(ps.EpochSearch, "_search_each", spy)
    X, y = _data()
    members = [_member(0, "full"), _member(1, "full", lambda_reg=0.5), _member(2, "energy", gen="generic", tau=0.9)]
    results = train_population(members, X, y, dtype=F64, X_val=X[:40], y_val=y[:40])
    assert len(calls) == 3 and [r.population_size for r in results] == [3, 3, 3]  # one search a epoch, 3 epochs
    for m, r in zip(members, results, strict=True):
        ref_model, ref_log = _single(m, X, y, X_val=X[:40], y_val=y[:40])
        _assert_same(r, ref_model, ref_log)


def test_leave_one_out_members_and_shuffled_batches():
    X, y = _data(n=257)
    fid = resolve_fidelity("reference", {"shuffle_batches": True})
    loo = [None, np.delete(np.arange(257), 3), np.delete(np.arange(257), 256)]
    members = [_member(0, rows=r, name=f"loo{i}", layers=2) for i, r in enumerate(loo)]
    results = train_population(members, X, y, dtype=F64, fidelity=fid)
    for m, r in zip(members, results, strict=True):
        ref_model, ref_log = _single(m, X, y, fidelity=fid)
        _assert_same(r, ref_model, ref_log)
    # same initial weights, different data: the models differ
    assert not torch.equal(next(results[0].model.parameters()), next(results[1].model.parameters()))


def test_a_member_does_not_depend_on_its_companions():
    X, y = _data()
    a1, a2 = _member(7, name="a"), _member(7, name="a")
    r1 = train_population([a1, _member(1, "vanilla")], X, y, dtype=F64)[0]
    r2 = train_population([_member(2, tau=0.9, nce=None), a2, _member(3, "energy", lr=1e-2)], X, y, dtype=F64)[1]
    for p, q in zip(r1.model.parameters(), r2.model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-12)


def _float32(member):
    member.model = member.model.float()
    return member


@pytest.mark.parametrize("who", ["vanilla", "full", "loo"])
def test_a_members_weights_are_bitwise_the_same_whatever_its_companions(who):
    """float32, as the workflow trains: a baseline trained beside CT members, a CT member beside members with
    another nce, burn-in or rows, a leave-one-out member beside full-data members — each equals itself trained
    alone, bit for bit (the group key keeps every member's mini-batch sums over its own rows only; a padded sum
    changed the baseline's output bias in the last bit, and with it every number computed from the baseline)."""
    X, y = _data(n=250)
    X = X.astype(np.float32)
    loo = np.delete(np.arange(250), 5)
    me = {"vanilla": lambda: _member(7, "vanilla", name="me", epochs=4),
          "full": lambda: _member(7, name="me", nce=40, epochs=4),
          "loo": lambda: _member(7, name="me", rows=loo, epochs=4)}[who]
    others = [_member(1, nce=25, epochs=4), _member(2, "vanilla", epochs=4), _member(3, burnin=0.5, epochs=4),
              _member(4, nce=40, epochs=4), _member(5, rows=loo, epochs=4), _member(6, epochs=4, name="all-rows")]
    alone = train_population([_float32(me())], X, y)[0]
    crowd = train_population([_float32(m) for m in [*others[:3], me(), *others[3:]]], X, y)[3]
    assert alone.ok and crowd.ok
    for p, q in zip(alone.model.parameters(), crowd.model.parameters(), strict=True):
        assert torch.equal(p, q)


def test_members_that_cannot_share_a_program_are_grouped_and_still_exact():
    X, y = _data()
    vae = VAE(3, 2, 8, seed=0)
    vae.fit(X, epochs=2, batch_size=50, seed=0)
    vae.double()
    revise = _member(4, name="revise")
    revise.generator = make_generator({"type": "revise"}, vae=vae)
    revise2 = _member(6, name="revise2", tau=0.9, T=5)
    revise2.generator = make_generator({"type": "revise", "lambda_cost": 0.01}, vae=vae)
    lenet_like = _member(8, name="custom")
    lenet_like.model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
    members = [_member(0), _member(1, batch_size=50), _member(2, epochs=2), revise, _member(5), revise2, lenet_like]
    results = train_population(members, X, y, dtype=F64)
    assert [r.population_size for r in results] == [4, 1, 1, 4, 4, 4, 1]  # REVISE trains with the others
    for m, r in zip(members, results, strict=True):
        _assert_same(r, *_single(m, X, y))


def test_a_diverging_member_is_reported_and_the_others_finish():
    X, y = _data()
    members = [_member(0, name="fine"), _member(1, name="boom", lambda_div=float("inf")), _member(2, "vanilla")]
    results = train_population(members, X, y, dtype=F64)
    fine, boom, bl = results
    assert fine.ok and bl.ok and fine.model is not None
    assert boom.model is None and "'boom'" in boom.error and "non-finite loss at epoch 1" in boom.error
    assert "seed 1" in boom.error  # the member's settings are named
    _assert_same(fine, *_single(members[0], X, y))


def test_tolerated_nonfinite_batches_are_skipped_per_member():
    X, y = _data()
    m = _member(1, lambda_div=float("inf"))
    m.params = TrainParams(epochs=1, batch_size=32, nce=40, seed=1, max_nonfinite_batches=100)
    with pytest.warns(RuntimeWarning, match="skipped"):
        (r,) = train_population([m], X, y, dtype=F64)
    assert r.ok and r.log["nonfinite_batches"].iloc[-1] == 8
    with pytest.warns(RuntimeWarning):
        ref_model, ref_log = _single(m, X, y)
    _assert_same(r, ref_model, ref_log)


@pytest.mark.parametrize("change, message", [
    (lambda m: setattr(m, "generator", None), "needs a counterfactual generator"),
    (lambda m: setattr(m, "rows", [0, 1, 10_000]), "rows must lie in"),
    (lambda m: setattr(m, "rows", [0, 0, 1]), "repeated"),
    (lambda m: setattr(m, "rows", []), "empty"),
    (lambda m: setattr(m, "objective", "full"), "objective must be"),
])
def test_invalid_members_are_rejected_before_training(change, message):
    X, y = _data()
    bad = _member(1, name="bad")
    change(bad)
    with pytest.raises(ValueError, match=message) as err:
        train_population([_member(0), bad], X, y, dtype=F64)
    assert "'bad'" in str(err.value)
    with pytest.raises(ValueError, match="unique"):
        train_population([_member(0, name="x"), _member(1, name="x")], X, y)


def test_seed_and_leave_one_out_constructors():
    from ctbench.training.population import leave_one_out_members, seed_members

    X, y = _data(n=100)
    def unnamed(m):
        m.name = ""
        return m

    seeds = seed_members(lambda s: unnamed(_member(s, "vanilla")), [3, 5, 8])
    assert [m.name for m in seeds] == ["seed3", "seed5", "seed8"] and [m.params.seed for m in seeds] == [3, 5, 8]
    loo = leave_one_out_members(lambda: unnamed(_member(0, "vanilla")), 100, [0, 42, 99])
    for m, r in zip(loo, [0, 42, 99], strict=True):
        assert len(m.rows) == 99 and r not in set(m.rows.tolist())
        assert torch.equal(next(m.model.parameters()), next(loo[0].model.parameters()))  # same initial weights
    with pytest.raises(ValueError, match="not in 0..99"):
        leave_one_out_members(lambda: _member(0), 100, [100])
    results = train_population(seeds + loo, X, y, dtype=F64)
    # all rows and 99 rows: two programs (a member's mini-batch sums never run over rows padded for another)
    assert all(r.ok for r in results) and [r.population_size for r in results] == [3] * 6


@pytest.mark.parametrize("log_accuracy", [True, False])
def test_the_learning_check_runs_without_per_epoch_accuracies(log_accuracy):
    """Retraining studies skip the per-epoch accuracy pass; a member that learns nothing must still be caught."""
    X, y = _data(n=600)
    Xv, yv = _data(n=100, seed=1)
    stuck = _member(0, "vanilla", lr=1e-12, epochs=12, name="stuck")  # 12 epochs × 19 batches > 200 updates
    with torch.no_grad():  # a constant classifier: always class 0
        for p in stuck.model.parameters():
            p.zero_()
        stuck.model[-1].bias[0] = 1.0
    fine = _member(1, "vanilla", lr=1e-2, epochs=12, name="fine")
    r_stuck, r_fine = train_population([stuck, fine], X, y, X_val=Xv, y_val=yv, dtype=F64,
                                       log_accuracy=log_accuracy)
    assert r_fine.ok and not r_stuck.ok and "training did not learn" in r_stuck.error
    assert r_stuck.log["acc_val"].isna().all() != log_accuracy


def test_a_members_counterfactuals_are_bitwise_the_same_whatever_its_companions_keep_in_the_layout():
    """float32: a member's last straggling rows used to be computed in a layout of a few rows when alone (compaction
    follows the busiest member), where ATen's naive batched product rounds differently from the BLAS kernels of
    the large layout it shares with a slow companion; the layout now keeps ``MIN_LAYOUT_ROWS`` rows."""
    from ctbench.generators.population import MIN_LAYOUT_ROWS

    n = 200
    me = build_model({"type": "mlp"}, 2, 2, seed=0)
    with torch.no_grad():  # logit₁ − logit₀ ≈ 2·x₁ (two ReLU units carry ±x₁), plus small random weights
        me[0].weight.mul_(0.1)
        me[0].bias.zero_()
        me[2].weight.mul_(0.1)
        me[2].bias.zero_()
        me[0].weight[:2] = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])
        me[2].weight[:, :2] = torch.tensor([[-1.0, 1.0], [1.0, -1.0]])
    x = torch.rand(1, n, 2, generator=torch.Generator().manual_seed(0)) - 1.0  # x₁ in [−1, 0): ~25 steps
    x[0, :3, 0] -= 5.0                                                         # three rows ~75 steps away
    target = torch.ones(1, n, dtype=torch.long)
    slow = build_model({"type": "mlp"}, 2, 2, seed=99)  # a companion whose rows all run to T
    gens = [make_generator({"type": "generic", "step_size": 0.05}),
            make_generator({"type": "generic", "step_size": 1e-6})]
    convs = [Convergence("threshold", 0.75, 200)] * 2
    both = population_search(StackedMLP.from_models([me, slow]), torch.cat([x, torch.randn(1, n, 2)]),
                             torch.cat([target, target]), MemberSearchSettings.build(gens, convs))
    alone = population_search(StackedMLP.from_models([me]), x, target, MemberSearchSettings.build(gens[:1], convs[:1]))
    steps = alone.steps[0].sort().values
    assert int(steps[-3]) > 60 and int(steps[-4]) < 40 < MIN_LAYOUT_ROWS * 2  # three stragglers: the case bites
    assert int(both.steps[1].min()) > 150                                      # the companion keeps a wide layout
    for name in PopulationSearchResult.__dataclass_fields__:
        assert torch.equal(getattr(both, name)[0], getattr(alone, name)[0]), name


def test_a_search_of_fewer_rows_than_the_minimal_layout_is_padded_and_cut():
    from ctbench.generators.population import MIN_LAYOUT_ROWS

    models = _models([{"type": "mlp"}] * 2, D=3)
    st = StackedMLP.from_models(models)
    x = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(1), dtype=F64)
    target = torch.ones(2, 5, dtype=torch.long)
    gens = [make_generator({"type": "generic"})] * 2
    convs = [Convergence("threshold", 0.75, 20)] * 2
    res = population_search(st, x, target, MemberSearchSettings.build(gens, convs, dtype=F64))
    assert res.counterfactual.shape == (2, 5, 3) and res.steps.shape == (2, 5) and 5 < MIN_LAYOUT_ROWS
    for m in range(2):
        ref = gens[m].search(models[m], x[m], target[m], None, convs[m])
        torch.testing.assert_close(res.counterfactual[m], ref.counterfactual, rtol=0, atol=1e-10)
        assert torch.equal(res.steps[m], ref.steps)
