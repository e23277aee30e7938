"""Per-counterfactual metrics (ct_reference.md §7.3): hand-made answers and brute-force references."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from ctbench.evaluation import (
    cost_l1,
    implausibility,
    ip_star,
    mmd2_unbiased,
    redundancy,
    strict_validity,
    validity,
)


# ------------------------------------------------------------------------------------------ validity, cost, redundancy
def test_validity_is_argmax_flip_for_logits_and_probs():
    logits = torch.tensor([[2.0, 1.0, 0.0], [0.0, 0.1, 0.0], [-1.0, -3.0, 5.0]])
    target = torch.tensor([0, 0, 2])
    assert validity(logits, target).tolist() == [True, False, True]
    assert validity(torch.softmax(logits, -1), target).tolist() == [True, False, True]
    assert validity(logits.numpy(), np.array([0, 0, 2])).tolist() == [True, False, True]
    # label flip, not a threshold: p = 0.36 for class 1 still counts as valid
    assert validity(torch.tensor([[0.32, 0.36, 0.32]]), torch.tensor([1])).tolist() == [True]


def test_strict_validity_threshold_inclusive():
    p = torch.tensor([0.5, 0.949, 0.95, 1.0])
    assert strict_validity(p, 0.95).tolist() == [False, False, True, True]
    assert strict_validity(p, 0.5).tolist() == [True, True, True, True]


def test_cost_l1_by_hand_and_images_flattened():
    x = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    x_cf = torch.tensor([[1.0, -2.0], [1.0, 1.5]])
    # |1−0| + |−2−0| = 3 ;  |1−1| + |1.5−1| = 0.5
    assert cost_l1(x, x_cf).tolist() == [3.0, 0.5]
    img = torch.zeros(2, 1, 2, 2)
    img_cf = img.clone()
    img_cf[0, 0, 0, 0] = -1.0
    img_cf[0, 0, 1, 1] = 0.25
    img_cf[1] = 0.5  # four pixels × 0.5
    assert cost_l1(img, img_cf).tolist() == [1.25, 2.0]


def test_redundancy_share_of_unchanged_features():
    x = torch.zeros(2, 4)
    x_cf = torch.tensor([[0.0, 1e-6, 0.5, -1.0], [0.0, 0.0, 0.0, 2e-5]])
    # row 0: |Δ| = 0, 1e−6 below 1e−5 → 2/4 ; row 1: three zeros, 2e−5 ≥ 1e−5 → 3/4
    assert redundancy(x, x_cf).tolist() == [0.5, 0.75]
    assert redundancy(x, x_cf, tol=1e-4).tolist() == [0.5, 1.0]
    # strict inequality: a change of exactly tol counts as changed
    assert redundancy(torch.zeros(1, 2), torch.tensor([[0.0, 0.5]]), tol=0.5).tolist() == [0.5]


# -------------------------------------------------------------------------------------------------------------- IP
def test_implausibility_single_location_per_class_is_exact():
    # all class-1 reference points sit at (3, 4), all class-0 points at (−1, 0): every draw gives the same distance
    X_ref = torch.tensor([[3.0, 4.0]] * 5 + [[-1.0, 0.0]] * 4)
    y_ref = torch.tensor([1] * 5 + [0] * 4)
    x_cf = torch.tensor([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0], [0.0, 0.0]])
    target = torch.tensor([1, 1, 0, 0])
    ip = implausibility(x_cf, target, X_ref, y_ref, generator=0)
    # |0−3|+|0−4| = 7 ; 0 ; |1+1|+|1−0| = 3 ; |0+1|+|0| = 1
    assert ip.tolist() == pytest.approx([7.0, 0.0, 3.0, 1.0])


def test_implausibility_reproduces_the_per_counterfactual_draw():
    rng = np.random.default_rng(1)
    X_ref = torch.tensor(rng.normal(size=(5, 3)))
    y_ref = torch.tensor([1, 0, 1, 1, 0])
    x_cf = torch.tensor(rng.normal(size=(4, 3)))
    x_cf[1] = x_cf[0]  # identical counterfactuals, same target → different draws → (almost surely) different IP
    target = torch.tensor([1, 1, 0, 1])
    ip = implausibility(x_cf, target, X_ref, y_ref, k=1000, generator=7)
    # by hand: K = min(N_ref = 5, 1000) = 5 draws with replacement per counterfactual, class 0 first, then class 1
    g = torch.Generator().manual_seed(7)
    expected = torch.empty(4, dtype=torch.float64)
    for c in (0, 1):
        rows = torch.nonzero(target == c).flatten()
        pool = X_ref[y_ref == c]
        idx = torch.randint(pool.shape[0], (rows.numel(), 5), generator=g)
        for a, i in enumerate(rows.tolist()):
            expected[i] = np.mean([np.abs(x_cf[i].numpy() - pool[j].numpy()).sum() for j in idx[a].tolist()])
    assert torch.allclose(ip, expected, rtol=1e-12)
    assert ip[0] != ip[1]
    # chunking does not change the answer
    ip_small = implausibility(x_cf, target, X_ref, y_ref, k=1000, generator=7, chunk_bytes=1)
    assert torch.allclose(ip, ip_small, rtol=1e-12)


def test_implausibility_converges_to_mean_over_class_and_nan_for_empty_class():
    # class-1 points at 0 and at 2 (1-D): the mean distance from x' = 0 over many draws is ≈ (0 + 2)/2 = 1
    X_ref = torch.tensor([[0.0], [2.0]] * 1000)
    y_ref = torch.ones(2000, dtype=torch.long)
    x_cf = torch.zeros(50, 1)
    ip = implausibility(x_cf, torch.ones(50, dtype=torch.long), X_ref, y_ref, k=1000, generator=3)
    # each value is 2·Binomial(1000, ½)/1000: sd ≈ 0.03 per CE, ≈ 0.0045 for the mean of 50
    assert ip.mean().item() == pytest.approx(1.0, abs=0.02)
    assert ip.std().item() > 0.005  # independent draws per counterfactual
    out = implausibility(torch.zeros(2, 1), torch.tensor([1, 5]), X_ref, y_ref)
    assert out[0].item() == pytest.approx(1.0, abs=0.2) and math.isnan(out[1].item())


# ------------------------------------------------------------------------------------------------------------- MMD
def _mmd2_brute(X, Y, ell):
    def k(a, b):
        return math.exp(-float(((a - b) ** 2).sum()) / (2 * ell**2))

    m, n = len(X), len(Y)
    sxx = sum(k(X[i], X[j]) for i in range(m) for j in range(m) if i != j)
    syy = sum(k(Y[i], Y[j]) for i in range(n) for j in range(n) if i != j)
    sxy = sum(k(X[i], Y[j]) for i in range(m) for j in range(n))
    return sxx / (m * (m - 1)) + syy / (n * (n - 1)) - 2 * sxy / (m * n)


@pytest.mark.parametrize("ell", [0.3, 1.0, 5.0])
@pytest.mark.parametrize("m,n,d", [(7, 11, 3), (12, 5, 4), (2, 2, 1)])
def test_mmd2_unbiased_matches_brute_force_double_loop(ell, m, n, d):
    rng = np.random.default_rng(m * 100 + n)
    X = rng.normal(size=(m, d))
    Y = rng.normal(loc=0.5, size=(n, d))
    assert mmd2_unbiased(X, Y, ell) == pytest.approx(_mmd2_brute(X, Y, ell), rel=1e-10, abs=1e-14)
    assert mmd2_unbiased(torch.tensor(X, dtype=torch.float32), torch.tensor(Y), ell) == pytest.approx(
        _mmd2_brute(X.astype(np.float32).astype(float), Y, ell), rel=1e-6, abs=1e-10)


def test_mmd2_same_distribution_near_zero_shifted_clearly_positive():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2))
    Y = rng.normal(size=(600, 2))
    Z = rng.normal(loc=1.5, size=(600, 2))
    same = mmd2_unbiased(X, Y, 1.0)
    shifted = mmd2_unbiased(X, Z, 1.0)
    assert abs(same) < 0.005
    assert shifted > 0.2  # population value for a 1.5 shift per coordinate and ℓ = 1 is ≈ 0.39
    assert math.isnan(mmd2_unbiased(X[:1], Y, 1.0)) and math.isnan(mmd2_unbiased(X, Y[:1], 1.0))


def test_mmd2_identical_samples_is_negative():
    # X = Y: MMD² = 2(a − 1)/m with a = mean off-diagonal kernel < 1 → negative (why IP* clamps at 0)
    X = np.array([[0.0], [1.0], [3.0]])
    a = (2 * math.exp(-0.5) + 2 * math.exp(-4.5) + 2 * math.exp(-2.0)) / 6
    assert mmd2_unbiased(X, X, 1.0) == pytest.approx(2 * (a - 1) / 3, rel=1e-12)


# -------------------------------------------------------------------------------------------------------------- IP*
def _ipstar_data():
    rng = np.random.default_rng(5)
    X_ref = rng.normal(size=(60, 2))
    y_ref = np.repeat([0, 1, 2], 20)
    X_ref[y_ref == 1] += 3.0
    frame = pd.DataFrame({
        "objective": ["full"] * 12 + ["vanilla"] * 10,
        "factual": [0] * 6 + [2] * 6 + [0] * 10,
        "target": [1] * 6 + [1] * 3 + [0] * 3 + [1] * 10,
    })
    x_cf = rng.normal(size=(22, 2))
    return frame, x_cf, X_ref, y_ref


def test_ip_star_groups_share_a_value_equal_to_the_group_mmd():
    frame, x_cf, X_ref, y_ref = _ipstar_data()
    clamped, raw = ip_star(x_cf, frame[["objective", "factual"]], frame["target"], X_ref, y_ref, length_scale=1.0)
    groups = frame.groupby(["objective", "factual", "target"]).indices
    assert len(groups) == 4  # (full, 0, 1), (full, 2, 1), (full, 2, 0), (vanilla, 0, 1)
    for (_, _, t), idx in groups.items():
        vals = raw.numpy()[idx]
        assert np.all(vals == vals[0])
        # groups and pools are ≤ n_sub = 100 → no subsampling: exactly the MMD of the group against its class
        assert vals[0] == pytest.approx(mmd2_unbiased(x_cf[idx], X_ref[y_ref == t], 1.0), rel=1e-12)
    assert torch.equal(clamped, raw.clamp(min=0.0))
    assert len(set(np.round(raw.numpy(), 12))) == 4


def test_ip_star_groups_are_independent_and_clamped():
    frame, x_cf, X_ref, y_ref = _ipstar_data()
    keys = frame[["objective", "factual"]]
    _, raw = ip_star(x_cf, keys, frame["target"], X_ref, y_ref, 1.0)
    x2 = x_cf.copy()
    x2[12:] += 10.0  # move only the vanilla group
    _, raw2 = ip_star(x2, keys, frame["target"], X_ref, y_ref, 1.0)
    assert torch.equal(raw[:12], raw2[:12]) and not torch.allclose(raw[12:], raw2[12:])
    # a group whose counterfactuals are the target class's reference rows has a negative raw MMD² → clamped to 0
    x3 = x_cf.copy()
    x3[12:] = X_ref[20:30]
    frame3 = frame.copy()
    clamped3, raw3 = ip_star(x3, frame3[["objective", "factual"]], frame3["target"], X_ref[20:30], y_ref[20:30], 1.0)
    assert (raw3[12:] < 0).all() and (clamped3[12:] == 0).all()
    # a single-row group has no MMD
    c1, r1 = ip_star(x_cf[:1], np.array([0]), np.array([1]), X_ref, y_ref, 1.0)
    assert math.isnan(r1.item()) and math.isnan(c1.item())


def test_ip_star_subsampling_is_seeded_and_reproducible():
    rng = np.random.default_rng(9)
    X_ref = rng.normal(size=(300, 2))
    y_ref = np.repeat([0, 1], 150)
    x_cf = rng.normal(size=(150, 2))
    keys = np.zeros(150, dtype=int)
    target = np.ones(150, dtype=int)
    a = ip_star(x_cf, keys, target, X_ref, y_ref, 0.5, n_sub=100, seed=2025)[1]
    b = ip_star(x_cf, keys, target, X_ref, y_ref, 0.5, n_sub=100, seed=2025)[1]
    c = ip_star(x_cf, keys, target, X_ref, y_ref, 0.5, n_sub=100, seed=1)[1]
    assert torch.equal(a, b) and a[0] != c[0]
    # by hand: one generator, X' subsample first (randperm(150)[:100]), then X⁺ (randperm(150)[:100])
    g = torch.Generator().manual_seed(2025)
    i_cf = torch.randperm(150, generator=g)[:100].numpy()
    i_ref = torch.randperm(150, generator=g)[:100].numpy()
    assert a[0].item() == pytest.approx(mmd2_unbiased(x_cf[i_cf], X_ref[150:][i_ref], 0.5), rel=1e-12)
