"""IP* with each class pool's distances computed once per job (ctbench.evaluation.pool_kernels) gives the bits of
``metrics.ip_star`` (issue 21, evaluation stage)."""

import numpy as np
import pandas as pd
import pytest
import torch

from ctbench.evaluation import metrics, protocol
from ctbench.evaluation.pool_kernels import PoolDistances, cached_ip_star, group_ids, ip_star, pool_sqdist, sqdist


@pytest.mark.parametrize("n,d,block", [(300, 784, 256), (257, 12, 64), (5, 2, 256), (130, 108, 7)])
def test_pool_matrix_is_the_full_cdist_bit_for_bit_and_a_pair_does_not_depend_on_its_batch(n, d, block):
    P = torch.rand(n, d, generator=torch.Generator().manual_seed(n)).double()
    full = pool_sqdist(P, block=block)
    assert torch.equal(full, sqdist(P, P)) and torch.equal(full, full.T) and (full.diagonal() == 0).all()
    g = torch.Generator().manual_seed(1)
    for _ in range(5):
        a, b = torch.randint(n, (min(n, 37),), generator=g), torch.randperm(n, generator=g)[:min(n, 100)]
        assert torch.equal(sqdist(P[a], P[b]), full[a][:, b])


def _case(n_cf, d, n_ref, n_cls, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n_ref, d, generator=g)  # float32 like the evaluation set
    y = torch.randint(n_cls, (n_ref,), generator=g)
    cf = torch.rand(n_cf, d, generator=g).double()
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"lambda_energy": rng.choice([0.1, 1.0, 10.0], n_cf), "factual": rng.integers(0, n_cls, n_cf),
                          "run": rng.integers(0, 4, n_cf)})
    target = (frame["factual"].to_numpy() + rng.integers(1, n_cls, n_cf)) % n_cls
    return cf, frame, target, X, y


@pytest.mark.parametrize("n_cf,d,n_ref,n_cls,n_sub,max_rows,cached", [
    (600, 784, 900, 10, 100, 4096, True),  # MNIST-like: pools ≈ 90 rows ≤ n_sub, small groups
    (800, 20, 1500, 3, 100, 4096, True),   # pools of ≈ 500 rows subsampled, groups larger than n_sub
    (800, 20, 1500, 3, 100, 300, False),   # pools above max_rows: per-group distances
    (300, 5, 400, 4, 7, 4096, False),      # tiny n_sub: the groups ask for too few pairs to pay for a pool matrix
])
def test_ip_star_is_metrics_ip_star_bit_for_bit(n_cf, d, n_ref, n_cls, n_sub, max_rows, cached):
    cf, frame, target, X, y = _case(n_cf, d, n_ref, n_cls, n_cf + d)
    pools = PoolDistances(max_rows=max_rows)
    for keys in (["lambda_energy", "factual", "run"], ["lambda_energy", "factual"]):
        ref = metrics.ip_star(cf, frame[keys], target, X, y, 0.5, n_sub=n_sub, seed=7)
        new = ip_star(cf, frame[keys], target, X, y, 0.5, n_sub=n_sub, seed=7, pools=pools)
        assert ref[1].isnan().sum() < len(cf) and torch.equal(ref[0].isnan(), new[0].isnan())
        for a, b in zip(ref, new, strict=True):
            assert torch.equal(a.nan_to_num(-9.0), b.nan_to_num(-9.0))
    assert (pools.built > 0) == cached


def test_the_cache_is_built_once_per_class_and_emptied_for_another_reference_set():
    cf, frame, target, X, y = _case(500, 30, 600, 3, 3)
    pools = PoolDistances()
    keys = frame[["lambda_energy", "factual", "run"]]
    ip_star(cf, keys, target, X, y, 5.0, n_sub=50, seed=1, pools=pools)
    built = pools.built
    assert 0 < built <= 3
    ip_star(cf, keys, target, X, y, 5.0, n_sub=50, seed=2, pools=pools)
    assert pools.built == built  # reused
    X2 = X.clone()
    X2[0] += 1.0
    ref = metrics.ip_star(cf, keys, target, X2, y, 5.0, n_sub=50, seed=3)
    new = ip_star(cf, keys, target, X2, y, 5.0, n_sub=50, seed=3, pools=pools)
    assert pools.built > built and torch.equal(ref[1].nan_to_num(-9.0), new[1].nan_to_num(-9.0))
    X2.mul_(2.0)  # the same tensor changed in place
    new = ip_star(cf, keys, target, X2, y, 5.0, n_sub=50, seed=3, pools=pools)
    ref = metrics.ip_star(cf, keys, target, X2, y, 5.0, n_sub=50, seed=3)
    assert torch.equal(ref[1].nan_to_num(-9.0), new[1].nan_to_num(-9.0))


def test_group_ids_and_other_arguments_as_in_metrics():
    cf, frame, target, X, y = _case(200, 4, 300, 3, 5)
    for keys in (frame["factual"], frame[["run", "lambda_energy"]], frame[["factual"]].to_numpy(),
                 frame["run"].to_numpy()):
        assert np.array_equal(group_ids(keys, target), metrics._group_ids(keys, target))
    torch.manual_seed(11)
    ref = metrics.ip_star(cf.numpy(), frame["factual"], target, X.numpy(), y.numpy(), 1.0, n_sub=20, seed=None)
    torch.manual_seed(11)
    new = ip_star(cf.numpy(), frame["factual"], target, X.numpy(), y.numpy(), 1.0, n_sub=20, seed=None)
    assert torch.equal(ref[1].nan_to_num(-9.0), new[1].nan_to_num(-9.0))
    with pytest.raises(ValueError):
        ip_star(cf, frame["factual"][:10], target, X, y, 1.0)


def test_cached_ip_star_swaps_the_protocols_kernel_for_one_job_only():
    original = protocol.ip_star
    with cached_ip_star() as pools:
        assert protocol.ip_star is not original and isinstance(pools, PoolDistances)
        cf, frame, target, X, y = _case(300, 8, 400, 2, 9)
        protocol.ip_star(cf, frame[["factual", "run"]], target, X, y, 0.5, n_sub=100, seed=4)
        assert pools.built > 0
    assert protocol.ip_star is original
    with pytest.raises(RuntimeError), cached_ip_star():
        raise RuntimeError
    assert protocol.ip_star is original


def test_an_evaluation_with_the_cache_is_the_evaluation_without_it():
    from ctbench.api import train_from_config
    from ctbench.data import load_dataset
    from ctbench.evaluation.protocol import EvalProtocol, evaluate_counterfactuals
    from ctbench.fidelity import resolve_fidelity

    base = {"data": {"name": "lin_sep"}, "training": {"epochs": 2, "nce": 100}}
    models = {"CT": train_from_config(base), "BL": train_from_config({**base, "objective": {"name": "vanilla"}})}
    data = load_dataset("lin_sep")
    prot = EvalProtocol(lambdas=(0.1, 5.0), n_individuals=20, n_runs=8)
    fid = resolve_fidelity("reference")
    ref = evaluate_counterfactuals(models, data.X_test, data.y_test, prot, fid, n_classes=2, dataset="lin_sep")
    with cached_ip_star() as pools:
        new = evaluate_counterfactuals(models, data.X_test, data.y_test, prot, fid, n_classes=2, dataset="lin_sep")
    assert pools.built > 0
    cols = [c for c in ref.columns if c != "seconds"]
    pd.testing.assert_frame_equal(ref[cols], new[cols], check_exact=True)
