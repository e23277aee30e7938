"""Contracts, as scikit-learn's ``check_estimator`` runs one contract over every estimator (issue 22, item 6).

* Every generator (the CT paper's three and every method of the consistency study, ± SNS): constraints hold (the
  domain, increase/decrease-only features), immutable features never move (bit for bit), the batched search equals
  the per-row search (deterministic methods), the same inputs and seed give the same result bit for bit, and its
  ``params()`` round-trip through its constructor.
* Every fidelity switch: flipping it changes some output on a small case; a switch that changes nothing, or a new
  switch without a case here, fails.
"""

from __future__ import annotations

import inspect
from dataclasses import fields, replace

import numpy as np
import pytest
import torch

from ctbench.constraints import Constraints
from ctbench.fidelity import PRESETS, Fidelity, resolve_fidelity
from ctbench.generators import (
    CONSISTENCY_METHODS,
    GENERATORS,
    VAE,
    Convergence,
    GradientGenerator,
    SNSGenerator,
    WithSNS,
    make_generator,
    make_method,
)
from ctbench.models import build_model

F64 = torch.float64
D, K = 5, 2
MUT = ["none", "increase", "decrease", "both", "both"]
LO, HI = [-2.0] * D, [2.0] * D


@pytest.fixture(scope="module")
def case():
    g = torch.Generator().manual_seed(0)
    X = (torch.randn(300, D, generator=g, dtype=F64) * 0.8).clamp(-1.9, 1.9)
    model = build_model({"type": "mlp", "hidden": 16}, D, K, seed=0).double()
    with torch.no_grad():
        pred = model(X).argmax(1)
    x = X[:24]
    target = 1 - pred[:24]
    vae = VAE(D, 2, 8, seed=0)
    vae.fit(X.float(), epochs=2, batch_size=50, seed=0)
    vae.double()
    cons = Constraints.build(D, domain=(LO, HI), mutability=MUT)
    return model, X, x, target, vae, cons


def _small(name: str) -> dict:
    """Settings that keep each method to a fraction of a second."""
    if name.startswith(("min_l1", "min_l2")):
        return {"max_iter": 20, "binary_search_steps": 3}
    if name.startswith("min_eps_pgd"):
        return {"max_epsilon": 2.0, "n_levels": 3, "steps": 8}
    if name.startswith("latent_random"):
        return {"n_samples": 64}
    if name.startswith("prototype"):
        return {"max_iter": 20, "binary_search_steps": 2}
    return {}


def _build(name: str, case):
    model, X, _, _, vae, _ = case
    if name in GENERATORS:
        return make_generator({"type": name, "lambda_cost": 0.01}, vae=vae)
    kw = _small(name)
    if name.startswith("prototype"):
        kw["X_train"] = X
    sns = {"max_steps": 5} if name.endswith("+sns") else None
    return make_method(name, vae=vae, sns=sns, **kw)


ALL = [*GENERATORS, *CONSISTENCY_METHODS, "sns"]
#: searches that draw random numbers per row in batch order: their rows depend on the rows before them
STOCHASTIC = {"revise", "min_eps_pgd", "min_eps_pgd+sns", "latent_random", "latent_random+sns", "min_l1+sns",
              "min_l2+sns", "prototype+sns", "sns"}


def _search(gen, case, rows=slice(None), seed=0):
    model, _, x, target, _, cons = case
    conv = Convergence("threshold", 0.75, 20)
    start = x[rows]
    if isinstance(gen, SNSGenerator):  # SNS starts from points already in the target class: the model's own class
        with torch.no_grad():
            own = model(start).argmax(1)
        return gen.search(model, start, own, cons, conv, torch.Generator().manual_seed(seed))
    return gen.search(model, start, target[rows], cons, conv, torch.Generator().manual_seed(seed))


def _gen(name, case):
    return SNSGenerator(radius=0.3, max_steps=5) if name == "sns" else _build(name, case)


@pytest.mark.parametrize("name", ALL)
def test_generator_contract(name, case):
    model, X, x, target, vae, cons = case
    gen = _gen(name, case)
    res = _search(gen, case)
    cf = res.counterfactual
    # constraints: immutable features bit-identical, directions kept, the domain (or the factual's value) respected
    assert torch.equal(cf[:, 0], x[:, 0]), "an immutable feature moved"
    assert bool((cf[:, 1] >= x[:, 1]).all()) and bool((cf[:, 2] <= x[:, 2]).all()), "a direction was broken"
    lo, hi = torch.tensor(LO, dtype=F64), torch.tensor(HI, dtype=F64)
    assert bool(((cf >= torch.minimum(lo, x) - 1e-12) & (cf <= torch.maximum(hi, x) + 1e-12)).all()), "left the box"
    assert cf.shape == x.shape and res.mature.shape == (len(x),) and not cf.requires_grad
    # deterministic: the same inputs and seed, the same result bit for bit
    again = _search(_gen(name, case), case)
    for f in ("counterfactual", "mature", "steps"):
        assert torch.equal(getattr(res, f), getattr(again, f)), f
    # batched equals per-row (rows are independent) for the methods that draw no random numbers per row
    if name not in STOCHASTIC:
        for i in (0, 7, 23):
            one = _search(gen, case, slice(i, i + 1))
            torch.testing.assert_close(one.counterfactual[0], cf[i], rtol=0, atol=1e-12)
            assert bool(one.mature[0]) == bool(res.mature[i])
    # parameters round-trip: the constructor rebuilds the same generator from params()
    assert _rebuilt(gen, case).params() == gen.params()


def _rebuilt(gen, case):
    _, X, _, _, vae, _ = case
    if isinstance(gen, WithSNS):
        p = gen.params()
        return WithSNS(_rebuilt(gen.base, case), SNSGenerator(**{k: v for k, v in p["sns"].items() if k != "type"}))
    p = gen.params()
    sig = inspect.signature(type(gen).__init__).parameters
    var_kw = any(v.kind is inspect.Parameter.VAR_KEYWORD for v in sig.values())  # ECCo passes **kw to its base
    base_sig = inspect.signature(GradientGenerator.__init__).parameters if var_kw else {}
    kw = {k: v for k, v in p.items() if (k in sig or k in base_sig) and k not in ("type", "self")}
    for key, obj in (("vae", vae), ("X_train", X)):  # objects, recorded by their summary
        if key in sig:
            kw[key] = obj
    missing = [k for k, v in sig.items() if k not in kw and k != "self" and v.default is inspect.Parameter.empty
               and v.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)]
    assert not missing, f"{gen.name}: params() lacks constructor argument(s) {missing}"
    return type(gen)(**kw)


def test_every_generator_is_covered():
    assert set(GENERATORS) | set(CONSISTENCY_METHODS) <= set(ALL)
    assert issubclass(GENERATORS["generic"], GradientGenerator)


# -- every fidelity switch changes some output ---------------------------------------------------------------------

def _flipped(name: str, value):
    """The switch's other value: the paper preset's where it differs, else the other choice / a changed number."""
    other = getattr(PRESETS["paper"], name)
    if other != value:
        return other
    alternatives = {"adversarial_label": "predicted", "maturity": "threshold_or_exhausted", "test_sizes": "paper",
                    "elastic_net_box": "art"}
    if name in alternatives:
        return alternatives[name]
    if isinstance(value, bool):
        return not value
    return value * 2


def _search_probe(spec, conv, x_scale=1.0):
    def probe(fid):
        model = build_model({"type": "mlp", "hidden": 8}, 3, 2, seed=0).double()
        x = torch.randn(20, 3, generator=torch.Generator().manual_seed(1), dtype=F64) * x_scale
        with torch.no_grad():
            target = 1 - model(x).argmax(1)
        res = make_generator(spec, fid).search(model, x, target, None, conv)
        return torch.cat([res.counterfactual, res.nascent, res.mature[:, None].double()], 1)
    return probe


def _nascent_inclusive(fid):
    """A path whose first point lies exactly at distance ε: in the closed ball (code), out of the open one (paper)."""
    model = build_model({"type": "linear"}, 3, 2, seed=0).double()
    x = torch.zeros(1, 3, dtype=F64)
    target = 1 - model(x).argmax(1)
    gen = make_generator({"type": "generic"}, fid)
    first = gen.search(model, x, target, None, Convergence("max_iter", 0.5, 1)).counterfactual
    eps = float((first - x).abs().amax())
    gen = make_generator({"type": "generic"}, replace(fid, nascent_epsilon=eps))
    return gen.search(model, x, target, None, Convergence("max_iter", 0.5, 3)).nascent


def _train_probe(tau=0.75, flip_labels=False):
    def probe(fid):
        from ctbench.training import Objective, TrainParams, train
        g = np.random.default_rng(0)
        X = g.normal(size=(120, 3))
        y = (X[:, 0] > 0).astype(int)
        if flip_labels:
            y[:30] = 1 - y[:30]
        model = build_model({"type": "mlp", "hidden": 8}, 3, 2, seed=0)
        model, _ = train(model, X, y, objective=Objective("full"), generator=make_generator({"type": "ecco"}, fid),
                         params=TrainParams(epochs=2, batch_size=30, nce=60, seed=0), fidelity=fid,
                         convergence=Convergence("threshold", tau, 5))
        return torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return probe


def _data_probe(attr):
    def probe(fid):
        from ctbench.data import load_dataset
        data = load_dataset("lin_sep", fidelity=fid)
        return np.asarray(attr(data), dtype=float)
    return probe


def _adult_groups(fid):
    from ctbench.data import load_dataset
    try:
        data = load_dataset("adult", fidelity=fid)
    except FileNotFoundError:
        pytest.skip("adult_substring_groups: the Adult data file is absent (CTBENCH_DATA)")
    return np.asarray([len(g) for g in data.categorical_groups] + [len(data.categorical_groups)], dtype=float)


def _zero_reg_adv(fid):
    from ctbench.paper_settings import model_config
    from ctbench.training.pipeline import effective_objective
    obj, _ = effective_objective(model_config("lin_sep", "mutability", "full"), fid, "synthetic")
    return np.asarray([obj.lambda_reg, obj.lambda_adv])


_MODELS: dict = {}


def _eval_probe(column, **kw):
    def probe(fid):
        from ctbench.api import train_from_config
        from ctbench.data import load_dataset
        from ctbench.evaluation.protocol import EvalProtocol, evaluate_counterfactuals
        if not _MODELS:
            _MODELS["CT"] = train_from_config({"data": {"name": "lin_sep"}, "training": {"epochs": 2, "nce": 100}})
        data = load_dataset("lin_sep")
        prot = EvalProtocol(lambdas=(0.1, 5.0), n_individuals=10, n_runs=2)
        df = evaluate_counterfactuals(_MODELS, data.X_test, data.y_test, prot, fid, n_classes=2, **kw)
        return df[column].to_numpy(dtype=float)
    return probe


def _elastic_net_box(fid):
    """The consistency study's Min-ℓ2 takes the box from the switch; on z-scored data the boxes part."""
    from ctbench.experiments.consistency_search import SearchContext
    model = build_model({"type": "mlp", "hidden": 8}, 3, 2, seed=0)
    x = torch.randn(20, 3, generator=torch.Generator().manual_seed(2)) * 1.5
    with torch.no_grad():
        target = 1 - model(x).argmax(1)
    gen, _ = SearchContext(1.0, 0.3, elastic_net_box=fid.elastic_net_box).base_generator("min_l2")
    cons = Constraints.build(3, domain=([-4.0] * 3, [4.0] * 3))
    return gen.search(model, x, target, cons).counterfactual


PROBES = {
    "ce_step_size": _search_probe({"type": "generic"}, Convergence("threshold", 0.75, 10)),
    "nascent_epsilon": _search_probe({"type": "generic"}, Convergence("threshold", 0.9, 30), x_scale=0.2),
    "nascent_inclusive": _nascent_inclusive,
    "maturity": _search_probe({"type": "generic"}, Convergence("threshold", 0.999, 2)),
    "adversarial_label": _train_probe(flip_labels=True),
    "initially_valid_is_immature": _train_probe(tau=0.3),
    "shuffle_batches": _train_probe(),
    "domain_n_sigma": _data_probe(lambda d: d.domain),
    "blob_centers": _data_probe(lambda d: d.X_train[:5]),
    "test_sizes": _data_probe(lambda d: [len(d.y_test)]),
    "synthetic_mutability_zero_reg_adv": _zero_reg_adv,
    "adult_substring_groups": _adult_groups,
    "snap_categorical_at_eval": _eval_probe("cost", categorical_groups=[[0, 1]]),
    "mmd_length_scale": _eval_probe("ip_star_raw"),
    "redraw_pairs_per_run": _eval_probe("factual"),
    "redraw_per_lambda": _eval_probe("index"),
    "elastic_net_box": _elastic_net_box,
}

SWITCH_NAMES = [f.name for f in fields(Fidelity) if f.name != "mode"]


def test_every_switch_has_a_case():
    assert set(PROBES) == set(SWITCH_NAMES), "a fidelity switch without a case in PROBES (or a stale case)"


@pytest.mark.parametrize("name", SWITCH_NAMES)
def test_switch_changes_some_output(name):
    if name not in PROBES:
        pytest.fail(f"fidelity switch {name!r} has no case: add one to PROBES")
    base = resolve_fidelity("reference")
    flipped = replace(base, **{name: _flipped(name, getattr(base, name))})
    a, b = PROBES[name](base), PROBES[name](flipped)
    a, b = (v.detach().double() if isinstance(v, torch.Tensor) else torch.tensor(np.array(v, dtype=float))
            for v in (a, b))
    assert a.shape != b.shape or not torch.equal(a.nan_to_num(-7.0), b.nan_to_num(-7.0)), \
        f"flipping {name} changed nothing on its case"


def test_data_switches_are_the_switches_that_shape_data():
    """``DATA_SWITCHES`` (what the workflow's data rule depends on) is exactly the switches whose case loads data, and
    every other switch leaves a loaded dataset (arrays, domain, groups, metadata) as it is."""
    from ctbench.data import load_dataset
    from ctbench.fidelity import DATA_SWITCHES

    data_cases = {n for n, p in PROBES.items() if p is _adult_groups or p.__qualname__.startswith("_data_probe")}
    assert data_cases == set(DATA_SWITCHES) - {"mode"}
    base = resolve_fidelity("reference")
    small = {"n_draws": 400, "n_train": 100, "n_val": 40, "n_test": 40}
    ref = {ds: load_dataset(ds, fidelity=base, **small) for ds in ("lin_sep", "moons")}
    for name in (n for n in SWITCH_NAMES if n not in DATA_SWITCHES):
        flipped = replace(base, **{name: _flipped(name, getattr(base, name))})
        for ds, a in ref.items():
            b = load_dataset(ds, fidelity=flipped, **small)
            for attr in ("X_train", "y_train", "X_val", "X_test", "y_test"):
                assert np.array_equal(getattr(a, attr), getattr(b, attr)), f"{name} changed {ds}.{attr}"
            assert (a.domain, a.categorical_groups, a.meta) == (b.domain, b.categorical_groups, b.meta), name
