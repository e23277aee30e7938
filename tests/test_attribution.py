import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from ctbench.evaluation.integrated_gradients import (
    class_attribution_maps,
    draw_round_indices,
    ig_rounds,
    ig_summary,
    integrated_gradients,
    make_baseline,
    random_baseline,
    standardise_attributions,
)
from ctbench.models import build_model
from ctbench.report.figures.robustness_figures import plot_attribution_maps


def _smooth_mlp(d=5, k=3, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, k))


def _data(n=20, d=5, k=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g), torch.randint(0, k, (n,), generator=g), g


def _target_out(model, X, t, output="logit"):
    with torch.no_grad():
        out = model(X)
        if output == "prob":
            out = out.softmax(1)
        return out.gather(1, t[:, None]).squeeze(1)


def test_ig_linear_model_is_exact():
    model = build_model({"type": "linear"}, 4, 3, seed=2)
    X, t, g = _data(10, 4, 3)
    B = random_baseline(X, generator=g)
    ig = integrated_gradients(model, X, t, B, steps=3)
    W = model[0].weight.detach()
    np.testing.assert_allclose(ig.numpy(), ((X - B) * W[t]).numpy(), atol=1e-6)
    ig_right = integrated_gradients(model, X, t, B, steps=2, rule="right")
    np.testing.assert_allclose(ig_right.numpy(), ((X - B) * W[t]).numpy(), atol=1e-6)
    # int target and a (D,) baseline broadcast
    ig0 = integrated_gradients(model, X, 1, torch.zeros(4), steps=1)
    np.testing.assert_allclose(ig0.numpy(), (X * W[1]).numpy(), atol=1e-6)


@pytest.mark.parametrize("output", ["logit", "prob"])
def test_ig_completeness_smooth_mlp(output):
    model = _smooth_mlp()
    X, t, g = _data()
    B = random_baseline(X, generator=g)
    delta = _target_out(model, X, t, output) - _target_out(model, B, t, output)
    assert float(delta.abs().mean()) > 0.05
    ig = integrated_gradients(model, X, t, B, steps=200, output=output, batch_size=97)
    np.testing.assert_allclose(ig.sum(1).numpy(), delta.numpy(), atol=1e-5)
    coarse = integrated_gradients(model, X, t, B, steps=2, output=output)
    assert float((coarse.sum(1) - delta).abs().max()) > 1e-4  # the tolerance above is not vacuous


def test_ig_completeness_relu_mlp_and_chunking_invariance():
    model = build_model({"type": "mlp", "hidden": 16}, 5, 3, seed=0)
    X, t, g = _data()
    B = random_baseline(X, generator=g)
    delta = _target_out(model, X, t) - _target_out(model, B, t)
    ig = integrated_gradients(model, X, t, B, steps=1000, batch_size=5000)
    np.testing.assert_allclose(ig.sum(1).numpy(), delta.numpy(), atol=2e-3)
    a = integrated_gradients(model, X, t, B, steps=20, batch_size=7)
    b = integrated_gradients(model, X, t, B, steps=20, batch_size=100000)
    np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6)


def test_ig_of_ignored_feature_is_zero():
    model = build_model({"type": "mlp", "hidden": 16}, 5, 3, seed=0)
    with torch.no_grad():
        model[0].weight[:, 2] = 0.0
    X, t, g = _data()
    B = random_baseline(X, generator=g)
    assert float((X - B)[:, 2].abs().min()) > 0
    ig = integrated_gradients(model, X, t, B, steps=30)
    assert torch.all(ig[:, 2] == 0)
    assert float(ig[:, [0, 1, 3, 4]].abs().sum()) > 0


def test_baselines():
    X = torch.randn(500, 3) * 5
    g = torch.Generator().manual_seed(0)
    b = random_baseline(X, generator=g)
    assert b.shape == X.shape and float(b.min()) >= -1 and float(b.max()) <= 1 and float(b.std()) > 0.4
    assert torch.equal(random_baseline(X, generator=torch.Generator().manual_seed(3)),
                       random_baseline(X, generator=torch.Generator().manual_seed(3)))
    r = make_baseline(X, "data_range", torch.Generator().manual_seed(0))
    assert bool((r >= X.min(0).values).all()) and bool((r <= X.max(0).values).all()) and float(r.abs().max()) > 1
    assert torch.equal(make_baseline(X, "zeros"), torch.zeros_like(X))
    with pytest.raises(ValueError, match="unknown baseline"):
        make_baseline(X, "blur")


def test_standardisation_formula():
    np.testing.assert_allclose(standardise_attributions([1.0, -3.0]), [0.25, 0.75])  # |g| / (max − min)
    np.testing.assert_allclose(standardise_attributions([0.5, 0.4]), [5.0, 4.0])  # explodes for similar values
    np.testing.assert_allclose(standardise_attributions([1.0, -3.0, 2.0]), [0.8, 0.0, 1.0])  # min–max
    np.testing.assert_allclose(standardise_attributions([2.0, 4.0, 3.0, 6.0]), [0.0, 0.5, 0.25, 1.0])


def test_round_indices_are_deterministic_and_shared():
    a = draw_round_indices(50, n_rounds=4, n_samples=30, seed=5)
    assert a.shape == (4, 30) and a.min() >= 0 and a.max() < 50
    np.testing.assert_array_equal(a, draw_round_indices(50, n_rounds=4, n_samples=30, seed=5))
    assert not np.array_equal(a, draw_round_indices(50, n_rounds=4, n_samples=30, seed=6))
    assert len(np.unique(a[0])) < 30 or len(np.unique(a)) < a.size  # with replacement

    X, y, _ = _data(50, 4, 2)
    ct = build_model({"type": "mlp", "hidden": 8}, 4, 2, seed=0)
    bl = build_model({"type": "mlp", "hidden": 8}, 4, 2, seed=1)
    kw = dict(protected=[0], n_rounds=4, n_samples=30, seed=5, steps=8)
    f_ct, idx_ct = ig_rounds(ct, X, y, return_indices=True, **kw)
    f_bl, idx_bl = ig_rounds(bl, X, y, return_indices=True, **kw)
    np.testing.assert_array_equal(idx_ct, idx_bl)
    np.testing.assert_array_equal(idx_ct, a)
    assert list(f_ct.columns) == ["round", "value"] and f_ct["round"].tolist() == [0, 1, 2, 3]
    pd.testing.assert_frame_equal(f_ct, ig_rounds(ct, X, y, indices=a, **kw))
    pd.testing.assert_frame_equal(f_ct, ig_rounds(ct, X, y, **kw))
    assert not f_ct["value"].equals(f_bl["value"])


@pytest.mark.parametrize("d, protected", [(2, [0]), (4, [1, 3])])
def test_ig_rounds_value_by_hand_on_linear_model(d, protected):
    X, y, _ = _data(40, d, 2, seed=3)
    model = build_model({"type": "linear"}, d, 2, seed=4)
    W = model[0].weight.detach().double()
    idx = draw_round_indices(40, n_rounds=3, n_samples=25, seed=0)
    frame = ig_rounds(model, X, y, protected, indices=idx, baseline="zeros", steps=1)
    for r in range(3):
        g = (X[idx[r]].double() * W[y[idx[r]]]).mean(0).numpy()  # IG = (x − 0)·w_y for a linear model
        span = g.max() - g.min()
        s = np.abs(g) / span if d == 2 else (g - g.min()) / span
        assert frame["value"][r] == pytest.approx(s[protected].mean(), rel=1e-5)
    mask = np.zeros(d, dtype=bool)
    mask[protected] = True
    pd.testing.assert_frame_equal(frame, ig_rounds(model, X, y, mask, indices=idx, baseline="zeros", steps=1))
    with pytest.raises(ValueError, match="protected"):
        ig_rounds(model, X, y, [d], indices=idx)


def test_ig_summary_quantiles():
    s = ig_summary(np.arange(101.0))
    assert s == pytest.approx({"median": 50.0, "lb_2.5": 2.5, "ub_97.5": 97.5})
    frame = pd.DataFrame({"round": range(5), "value": [1.0, 2.0, 3.0, 4.0, 5.0]})
    assert ig_summary(frame)["median"] == 3.0
    assert ig_summary(frame)["lb_2.5"] == pytest.approx(1.1)


def test_class_attribution_maps_shape_range_and_plot(tmp_path):
    g = torch.Generator().manual_seed(0)
    X = torch.rand(24, 784, generator=g) * 2 - 1
    y = torch.arange(24) % 3
    model = build_model({"type": "mlp", "hidden": 8}, 784, 4, seed=0)
    maps = class_attribution_maps(model, X, y, n_classes=4, steps=4)
    assert maps.shape == (4, 28, 28)
    for c in range(3):
        assert np.nanmin(maps[c]) == 0.0 and np.nanmax(maps[c]) == pytest.approx(1.0)
        assert np.all((maps[c] >= 0) & (maps[c] <= 1))
    assert np.all(np.isnan(maps[3]))  # no samples of class 3
    # row-major reshape: a model that only looks at pixel (row 2, col 5) lights up exactly there
    lin = build_model({"type": "linear"}, 784, 3, seed=0)
    with torch.no_grad():
        lin[0].weight.zero_()
        lin[0].weight[:, 2 * 28 + 5] = 1.0
    one = class_attribution_maps(lin, X.abs() + 2, y, n_classes=3, steps=2, baseline="zeros")
    assert all(one[c, 2, 5] == 1.0 and one[c].sum() == 1.0 for c in range(3))
    flat = class_attribution_maps(build_model({"type": "mlp"}, 5, 2, seed=0), X[:, :5], y % 2, 2, steps=4)
    assert flat.shape == (2, 5)
    paths = plot_attribution_maps(maps[:3], tmp_path / "ig_maps", titles=["a", "b", "c"])
    assert [p.name for p in paths] == ["ig_maps.png", "ig_maps.pdf"]
    assert all(p.stat().st_size > 0 for p in paths)
