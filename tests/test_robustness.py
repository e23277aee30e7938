import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from ctbench.evaluation.robustness import (
    DEFAULT_EPS_GRID,
    accuracy,
    fgsm,
    macro_f1,
    pgd,
    robustness_curve,
)
from ctbench.models import build_model
from ctbench.report.figures.robustness_figures import plot_robustness


class FixedPredictions(nn.Module):
    """Predicts the class stored in column 0 of the input (one-hot logits)."""

    def __init__(self, n_classes):
        super().__init__()
        self.k = n_classes

    def forward(self, x):
        return F.one_hot(x[:, 0].long(), self.k).float()


def _blobs(n=300, d=5, seed=0, shift=0.8):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n,), generator=g)
    X = torch.randn(n, d, generator=g) * 0.6 + shift * (2 * y[:, None].float() - 1)
    return X, y


@pytest.fixture(scope="module")
def trained_mlp():
    torch.manual_seed(0)
    X, y = _blobs(400, seed=1, shift=0.35)
    model = build_model({"type": "mlp", "hidden": 32}, X.shape[1], 2, seed=0)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(150):
        opt.zero_grad()
        F.cross_entropy(model(X), y).backward()
        opt.step()
    opt.zero_grad(set_to_none=True)
    Xt, yt = _blobs(200, seed=2, shift=0.35)
    return model, Xt, yt


def test_accuracy_and_macro_f1_against_hand_computation():
    y_true = np.array([0, 0, 1, 1, 2, 2])
    y_pred = np.array([0, 1, 1, 1, 0, 2])
    X = torch.tensor(y_pred, dtype=torch.float32)[:, None].repeat(1, 3)
    model = FixedPredictions(4)  # class 3 is in neither truth nor prediction → skipped
    f1 = {0: 2 * 1 / (2 * 1 + 1 + 1), 1: 2 * 2 / (2 * 2 + 1 + 0), 2: 2 * 1 / (2 * 1 + 0 + 1)}
    assert accuracy(model, X, y_true) == pytest.approx(4 / 6)
    assert macro_f1(model, X, y_true) == pytest.approx(np.mean(list(f1.values())))
    assert macro_f1(model, X, y_true) != pytest.approx(sum(f1.values()) / 4)
    # a class present only in the predictions counts with F1 = 0
    y_pred2 = np.array([0, 0, 1, 3])
    X2 = torch.tensor(y_pred2, dtype=torch.float32)[:, None]
    assert macro_f1(model, X2, np.array([0, 0, 1, 1]), batch_size=3) == pytest.approx((1 + 2 / 3 + 0) / 3)


def test_fgsm_matches_closed_form_on_linear_model():
    g = torch.Generator().manual_seed(0)
    model = build_model({"type": "linear"}, 4, 2, seed=3)
    with torch.no_grad():
        model[0].bias.copy_(torch.tensor([0.3, -0.2]))
    X = torch.randn(50, 4, generator=g)
    y = torch.randint(0, 2, (50,), generator=g)
    W, b = model[0].weight.detach().numpy().astype(np.float64), model[0].bias.detach().numpy().astype(np.float64)
    Xn = X.numpy().astype(np.float64)
    logits = Xn @ W.T + b
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    onehot = np.eye(2)[y.numpy()]
    expected = Xn + 0.07 * np.sign((p - onehot) @ W)  # ∇ₓ CE_i = (p_i − onehot_i)ᵀ W
    out = fgsm(model, X, y, 0.07)
    assert out.shape == X.shape
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-6)
    assert len(np.unique(np.sign((p - onehot) @ W), axis=0)) > 1  # not a trivial constant perturbation
    clamped = fgsm(model, X, y, 0.5, clamp=(-0.2, 0.2))
    assert bool((clamped <= torch.tensor(0.2)).all()) and bool((clamped >= torch.tensor(-0.2)).all())
    assert int((clamped.abs() == torch.tensor(0.2)).sum()) > 0
    assert torch.equal(fgsm(model, X, y, 0.0), X)
    # numpy inputs are accepted
    np.testing.assert_allclose(fgsm(model, X.numpy(), y.numpy(), 0.07).numpy(), expected, atol=1e-6)


def test_pgd_stays_in_ball_respects_clamp_and_is_identity_at_zero():
    model = build_model({"type": "mlp", "hidden": 16}, 6, 3, seed=1)
    g = torch.Generator().manual_seed(0)
    X = torch.rand(40, 6, generator=g) * 2 - 1
    y = torch.randint(0, 3, (40,), generator=g)
    for eps in (0.03, 0.2):
        adv = pgd(model, X, y, eps, step=0.05, n_steps=15, generator=torch.Generator().manual_seed(1))
        assert float((adv - X).abs().max()) <= eps + 1e-6
        assert float((adv - X).abs().max()) > 0.5 * eps
    adv = pgd(model, X, y, 0.3, step=0.05, n_steps=10, generator=torch.Generator().manual_seed(1), clamp=(-1.0, 1.0))
    assert float(adv.max()) <= 1.0 and float(adv.min()) >= -1.0
    assert float((adv - X).abs().max()) <= 0.3 + 1e-6
    lo, hi = torch.full((6,), -0.9), torch.full((6,), 0.8)
    adv = pgd(model, X, y, 0.3, n_steps=5, clamp=(lo, hi), generator=torch.Generator().manual_seed(2))
    assert bool((adv <= hi).all()) and bool((adv >= lo).all())
    assert torch.equal(pgd(model, X, y, 0.0, generator=torch.Generator().manual_seed(0)), X)
    a1 = pgd(model, X, y, 0.1, n_steps=5, generator=torch.Generator().manual_seed(7))
    a2 = pgd(model, X, y, 0.1, n_steps=5, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a1, a2)


def test_pgd_without_random_start_ascends_the_loss():
    model = build_model({"type": "mlp", "hidden": 16}, 6, 3, seed=1)
    X = torch.rand(40, 6, generator=torch.Generator().manual_seed(0))
    y = torch.randint(0, 3, (40,), generator=torch.Generator().manual_seed(1))
    adv = pgd(model, X, y, 0.1, step=0.01, n_steps=20, random_start=False)
    with torch.no_grad():
        assert F.cross_entropy(model(adv), y) > F.cross_entropy(model(X), y)


def test_robustness_curve_columns_clean_accuracy_and_batching(trained_mlp):
    model, X, y = trained_mlp
    model.train()
    eps = [0.0, 0.05, 0.3]
    df = robustness_curve(model, X, y, eps_grid=eps, seed=0, batch_size=64, n_steps=10, step=0.05)
    assert model.training  # mode restored
    assert list(df.columns) == ["attack", "eps", "accuracy"]
    assert len(df) == 6 and set(df["attack"]) == {"fgsm", "pgd"}
    clean = accuracy(model, X, y)
    assert clean > 0.8
    at0 = df[df["eps"] == 0.0].set_index("attack")["accuracy"]
    assert at0["fgsm"] == pytest.approx(clean) and at0["pgd"] == pytest.approx(clean)
    assert df[df["eps"] == 0.3]["accuracy"].max() < clean
    # batching does not change results (no random start → deterministic)
    kw = dict(eps_grid=eps, n_steps=10, step=0.05, random_start=False)
    a = robustness_curve(model, X, y, batch_size=17, **kw)
    b = robustness_curve(model, X, y, batch_size=None, **kw)
    pd.testing.assert_frame_equal(a, b)
    assert not any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_robustness_curve_default_grid_and_errors(trained_mlp):
    model, X, y = trained_mlp
    np.testing.assert_allclose(DEFAULT_EPS_GRID, [i / 90 for i in range(10)])
    df = robustness_curve(model, X[:20], y[:20], attacks=("fgsm",))
    np.testing.assert_allclose(df["eps"].to_numpy(), DEFAULT_EPS_GRID)
    with pytest.raises(ValueError, match="unknown attack"):
        robustness_curve(model, X, y, attacks=("cw",))


def test_pgd_at_least_as_strong_as_fgsm(trained_mlp):
    model, X, y = trained_mlp
    eps = [0.1, 0.2, 0.3, 0.4]
    df = robustness_curve(model, X, y, eps_grid=eps, seed=0, n_steps=20, step=0.03)
    acc = df.pivot(index="eps", columns="attack", values="accuracy")
    assert acc["pgd"].mean() <= acc["fgsm"].mean()
    assert (acc["pgd"] <= acc["fgsm"] + 0.02).all()
    assert acc["pgd"].iloc[-1] < acc["pgd"].iloc[0]


def test_plot_robustness_writes_png_and_pdf(tmp_path):
    df = pd.concat([
        pd.DataFrame({"attack": a, "eps": [0.0, 0.1], "accuracy": [0.9, v], "model": m})
        for a in ("fgsm", "pgd") for m, v in (("CT", 0.8), ("BL", 0.5))
    ])
    paths = plot_robustness(df, tmp_path / "sub" / "robust.png")
    assert [p.suffix for p in paths] == [".png", ".pdf"]
    assert all(p.exists() and p.stat().st_size > 0 for p in paths)
    with pytest.raises(ValueError, match="missing"):
        plot_robustness(df.drop(columns="eps"), tmp_path / "x")
