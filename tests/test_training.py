"""The CT epoch structure (reference §1.3–1.4) and end-to-end training behaviour."""

import numpy as np
import pytest
import torch

from ctbench.constraints import Constraints
from ctbench.data import load_dataset
from ctbench.generators import Convergence, make_generator
from ctbench.models import build_model
from ctbench.training import Objective, TrainingDivergedError, TrainParams, generate_epoch_counterfactuals, train
from ctbench.training.trainer import sample_positives, sample_targets, split_obs


def test_split_obs_contiguous_groups():
    assert split_obs(10, 3) == [(0, 4), (4, 7), (7, 10)]
    groups = split_obs(5000, 26)
    sizes = [b - a for a, b in groups]
    assert sizes[:8] == [193] * 8 and set(sizes[8:]) == {192} and groups[-1][1] == 5000


def test_targets_never_predicted_and_uniform():
    g = torch.Generator().manual_seed(0)
    pred = torch.randint(0, 10, (50_000,), generator=g)
    t = sample_targets(pred, 10, g)
    assert not bool((t == pred).any())
    counts = torch.bincount(t[pred == 3], minlength=10).double()
    others = counts[torch.arange(10) != 3]
    assert counts[3] == 0 and float(others.std() / others.mean()) < 0.1


def test_positives_have_target_label_and_cover_class():
    g = torch.Generator().manual_seed(1)
    y = torch.tensor([0, 1, 1, 2, 0, 1, 2, 2, 2])
    target = torch.randint(0, 3, (3000,), generator=g)
    idx = sample_positives(y, target, 3, g)
    assert torch.equal(y[idx], target)
    assert set(idx[target == 2].tolist()) == {3, 6, 7, 8}
    with pytest.raises(ValueError, match="no training points"):
        sample_positives(torch.tensor([0, 0]), torch.tensor([1]), 2, g)


def test_positive_protection_rules():
    cons = Constraints.build(4, mutability=["both", "none", "increase", "decrease"])
    x_plus = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    x_cf = torch.tensor([[5.0, 5.0, 5.0, 5.0], [-5.0, -5.0, -5.0, -5.0]])
    out = cons.protect_positive(x_plus, x_cf)
    assert out.tolist() == [[1.0, 5.0, 5.0, 1.0], [1.0, -5.0, 1.0, -5.0]]
    assert Constraints.build(4).protect_positive(x_plus, x_cf) is x_plus


def _toy(n=600, D=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = (rng.standard_normal((n, D)) + 2.0 * (2 * y[:, None] - 1)).astype(np.float32)
    return torch.tensor(X), torch.tensor(y)


@pytest.mark.parametrize("label", ["true", "predicted"])
def test_epoch_counterfactuals_follow_reference(label):
    from ctbench.fidelity import resolve_fidelity

    X, y = _toy()
    model = build_model({"type": "mlp"}, 3, 2, seed=0)
    fid = resolve_fidelity("reference", {"adversarial_label": label})
    cons = Constraints.build(3, mutability=[0])
    g = torch.Generator().manual_seed(0)
    ep = generate_epoch_counterfactuals(model, X, y, 2, make_generator({"type": "ecco"}, fid), cons,
                                        Convergence("threshold", 0.9, 5), nce=100, n_batches=7, fidelity=fid, gen=g)
    assert [len(gr) for gr in ep.groups] == [15, 15] + [14] * 5
    cat = {k: torch.cat([getattr(gr, k) for gr in ep.groups]) for k in ("x_cf", "x_ae", "target", "x_plus", "y_ae")}
    # immutable feature 0: x⁺ takes the counterfactual's value
    assert torch.equal(cat["x_plus"][:, 0], cat["x_cf"][:, 0])
    # immature rows: x' is x⁺ itself (mutable features identical)
    same = (cat["x_cf"] == cat["x_plus"]).all(1)
    assert abs(float(same.float().mean()) - (1 - ep.share_mature)) < 1e-6
    with torch.no_grad():
        p = torch.softmax(model(cat["x_cf"]), 1).gather(1, cat["target"][:, None]).squeeze(1)
    assert bool((p[~same] >= 0.9).all())  # mature ones met the threshold
    if label == "predicted":
        assert not bool((cat["y_ae"] == cat["target"]).any())  # predicted label never equals the target
    assert ep.mean_steps <= 5


def test_ct_on_linearly_separable_data_trains_and_matures():
    data = load_dataset("lin_sep")
    model = build_model({"type": "mlp"}, 2, 2, seed=0)
    cons = Constraints.build(2, domain=data.domain)
    model, log = train(model, data.X_train, data.y_train, objective=Objective("full", lambda_reg=0.01),
                       generator=make_generator({"type": "ecco"}), params=TrainParams(epochs=100, batch_size=30),
                       constraints=cons, convergence=Convergence("threshold", 0.5, 30), X_val=data.X_val,
                       y_val=data.y_val)
    with torch.no_grad():
        acc = float((model(torch.tensor(data.X_test)).argmax(1).numpy() == data.y_test).mean())
    assert acc >= 0.99
    assert log["share_mature"].iloc[-1] > 0.5
    assert list(log.columns[:6]) == ["epoch", "loss", "clf", "div", "reg", "adv"]
    assert len(log) == 100 and log["nonfinite_batches"].iloc[-1] == 0


def _short_run(seed, **kw):
    X, y = _toy()
    model = build_model({"type": "mlp"}, 3, 2, seed=seed)
    params = TrainParams(epochs=3, batch_size=50, nce=60, seed=seed, **kw)
    return train(model, X, y, objective=Objective("full"), generator=make_generator({"type": "ecco"}),
                 params=params, convergence=Convergence("threshold", 0.75, 10))


def test_same_seed_same_weights_different_seed_different():
    a, la = _short_run(0)
    b, lb = _short_run(0)
    c, _ = _short_run(1)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert not all(torch.equal(pa, pc) for pa, pc in zip(a.parameters(), c.parameters(), strict=True))
    assert la.drop(columns=["seconds", "search_seconds"]).equals(lb.drop(columns=["seconds", "search_seconds"]))


def test_nonfinite_loss_is_detected_not_saved():
    X, y = _toy()
    model = build_model({"type": "mlp"}, 3, 2, seed=0)
    with torch.no_grad():
        model[0].weight[0, 0] = float("nan")
    with pytest.raises(TrainingDivergedError, match="non-finite loss"):
        train(model, X, y, objective=Objective("vanilla"), generator=None, params=TrainParams(epochs=2))
    with pytest.raises(ValueError, match="NaN or Inf"):
        Xbad = X.clone()
        Xbad[0, 0] = float("inf")
        train(build_model({"type": "mlp"}, 3, 2), Xbad, y, objective=Objective("vanilla"), generator=None,
              params=TrainParams(epochs=1))


def test_tolerated_nonfinite_batches_are_skipped_and_counted():
    X, y = _toy(n=100)
    model = build_model({"type": "mlp"}, 3, 2, seed=0)
    obj = Objective("full", lambda_div=float("inf"))
    with pytest.warns(RuntimeWarning, match="skipping non-finite"):
        _, log = train(model, X, y, objective=obj, generator=make_generator({"type": "ecco"}),
                       params=TrainParams(epochs=1, batch_size=50, nce=10, max_nonfinite_batches=5),
                       convergence=Convergence("threshold", 0.75, 3))
    assert log["nonfinite_batches"].iloc[-1] >= 1


def test_vanilla_generates_nothing_and_burnin_delays_counterfactuals():
    X, y = _toy()
    _, log = train(build_model({"type": "mlp"}, 3, 2), X, y, objective=Objective("vanilla"), generator=None,
                   params=TrainParams(epochs=2))
    assert log["share_mature"].isna().all()
    _, log = _short_run(0, burnin=0.5)  # round(0.5·3) = 2 epochs without counterfactuals
    assert log["share_mature"].isna().tolist() == [True, True, False]


def test_bad_params_fail_clearly():
    with pytest.raises(ValueError, match="burnin"):
        TrainParams(burnin=2.0)
    X, y = _toy()
    with pytest.raises(ValueError, match="needs a counterfactual generator"):
        train(build_model({"type": "mlp"}, 3, 2), X, y, objective=Objective("full"), generator=None,
              params=TrainParams(epochs=1))
