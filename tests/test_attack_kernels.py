"""The in-place robustness curve (ctbench.evaluation.attack_kernels) gives the accuracies of
``evaluation.robustness`` bit for bit (issue 21, evaluation stage)."""

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from ctbench.evaluation import attack_kernels, robustness


def _model(d, k, kind, seed):
    torch.manual_seed(seed)
    if kind == "mlp":
        return nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Linear(32, k))
    return nn.Sequential(nn.Linear(d, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, k))


def _data(n, d, k, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, d, generator=g), torch.randint(k, (n,), generator=g)


@pytest.mark.parametrize("eps,clamp,random_start", [(0.0, None, True), (0.05, None, True), (0.1, (0.0, 1.0), True),
                                                    (0.0, (0.2, 0.8), True), (0.03, None, False)])
def test_pgd_is_the_eager_pgd_bit_for_bit(eps, clamp, random_start):
    m = _model(50, 4, "mlp", 0)
    X, y = _data(300, 50, 4, 1)
    ref = robustness.pgd(m, X, y, eps, n_steps=7, random_start=random_start, clamp=clamp,
                         generator=torch.Generator().manual_seed(3))
    new = attack_kernels.pgd(m, X, y, eps, n_steps=7, random_start=random_start, clamp=clamp,
                             generator=torch.Generator().manual_seed(3))
    assert torch.equal(ref, new)
    if eps > 0:
        assert not torch.equal(new, X if clamp is None else X.clamp(*clamp))  # the attack moved the points


@pytest.mark.parametrize("kind,d,k,n,batch,clamp,eps_grid", [
    ("mlp", 784, 10, 700, 256, None, None),        # MNIST shape, the default grid (ε = 0 first)
    ("mlp", 12, 3, 500, 2048, (0.0, 1.0), [0.0, 0.1, 0.5, 1.0]),  # one batch, a domain clamp
    ("deep", 20, 3, 400, 150, None, [0.0, 0.2, 0.0, 0.5]),  # another model, ε = 0 twice, a ragged last batch
])
def test_robustness_curve_is_the_eager_curve(kind, d, k, n, batch, clamp, eps_grid):
    m = _model(d, k, kind, 5)
    X, _ = _data(n, d, k, 6)
    with torch.no_grad():
        y = m(X).argmax(1)  # clean accuracy 1, so that the attacks have something to take away
    args = dict(eps_grid=eps_grid, seed=2, batch_size=batch, n_steps=8, clamp=clamp)
    ref = robustness.robustness_curve(m, X, y, **args)
    new = attack_kernels.robustness_curve(m, X, y, **args)
    pd.testing.assert_frame_equal(ref, new, check_exact=True)
    assert ref["accuracy"].nunique() > 2  # the attacks did something


def test_robustness_curve_checks_its_attacks():
    m = _model(4, 2, "mlp", 0)
    X, y = _data(10, 4, 2, 0)
    with pytest.raises(ValueError, match="unknown attack"):
        attack_kernels.robustness_curve(m, X, y, attacks=("fgsm", "cw"))
    only = attack_kernels.robustness_curve(m, X, y, attacks=("pgd",), eps_grid=np.array([0.0, 0.1]), n_steps=2)
    assert list(only["attack"]) == ["pgd", "pgd"]


def test_the_curve_leaves_the_models_parameters_as_it_found_them():
    m = _model(6, 2, "mlp", 1)
    m[0].bias.requires_grad_(False)
    X, y = _data(30, 6, 2, 1)
    attack_kernels.robustness_curve(m, X, y, eps_grid=[0.0, 0.1], n_steps=2)
    assert [p.requires_grad for p in m.parameters()] == [True, False, True, True]
    with pytest.raises(ValueError):
        attack_kernels.robustness_curve(m, X, y[:5], eps_grid=[0.1], n_steps=2)
    assert [p.requires_grad for p in m.parameters()] == [True, False, True, True]
