"""benchmarks/floors.py: the FLOP formulas give hand-computed values on tiny shapes (issue 21's computed floors)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location("floors", Path(__file__).resolve().parents[1] / "benchmarks/floors.py")
floors = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(floors)


def test_mlp_forward_is_two_in_out_per_layer():
    # 2 → 3 → 2: 2·(2·3 + 3·2) = 24; two hidden layers 2 → 3 → 3 → 2: 24 + 2·3·3 = 42
    assert floors.mlp_forward(2, 3, 1, 2) == 24
    assert floors.mlp_forward(2, 3, 2, 2) == 42
    assert floors.model_forward({"type": "linear", "n_features": 5, "n_classes": 2}) == 20


def test_two_layer_mlp_training_flops():
    fwd = floors.mlp_forward(2, 3, 1, 2)
    # 10 rows, 2 epochs: 3 forwards per row per epoch; 5 counterfactuals, epoch 1 at 2 steps, epoch 2 not searched
    f = floors.training_flops(fwd, n_train=10, epochs=2, nce=5, mean_steps=[2.0, float("nan")])
    assert f == {"sgd": 3 * 24 * 10 * 2, "search": 2 * 24 * 5 * 2, "ce_loss": 3 * 24 * 5 * 1}
    assert floors.training_flops(fwd, 10, 2) == {"sgd": 1440.0, "search": 0.0, "ce_loss": 0.0}


def test_counterfactuals_per_epoch_as_the_trainer_draws_them():
    assert floors.n_counterfactuals(1000, n_train=3000, batch_size=30) == 1000   # nce
    assert floors.n_counterfactuals(10, n_train=3000, batch_size=30) == 100      # one per batch at least
    assert floors.n_counterfactuals(5000, n_train=700, batch_size=32) == 700     # the training set at most
    assert floors.n_counterfactuals(None, n_train=700, batch_size=32) == 700


def test_lenet_forward_counts_convs_per_output_pixel():
    conv1 = 2 * 1 * 25 * 6 * 28 * 28
    conv2 = 2 * 6 * 25 * 16 * 14 * 14
    dense = 2 * (784 * 120 + 120 * 84 + 84 * 10)
    assert floors.lenet_forward(10) == conv1 + conv2 + dense == 1_386_000


def test_evaluation_and_report_kernels():
    assert floors.ig_flops(24, rounds=2, samples=3, steps=4) == 2 * 24 * 2 * 3 * 5
    assert floors.attack_flops(24, rows=10, n_eps=2, pgd_steps=40) == {"fgsm": 2 * 10 * 3 * 24,
                                                                       "pgd": 2 * 10 * 81 * 24}
    assert floors.ip_flops(rows=4, pool=5, dim=3) == 60
    assert floors.mmd_flops(np.array([1, 2]), n_sub=1, dim=2) == (2 ** 2 + 3 ** 2) * 2
    assert floors.bootstrap_flops(rows=10, n_boot=1000, n_metrics=3) == 40_000


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="bad MLP shape"):
        floors.mlp_forward(0, 3, 1, 2)
    with pytest.raises(ValueError, match="no FLOP formula"):
        floors.model_forward({"type": "resnet"})


def test_stages_fold_per_seed_groups_and_consistency_shards():
    """``evaluate_seeds`` counts as ``evaluate`` and Seizure's consistency shards with their merge job (whose sidecar
    counts every retrained model); ``train_final_seed`` stays a stage of its own (its counter reads the per-seed
    jobs)."""
    import pandas as pd

    stages = pd.DataFrame({"stage": ["evaluate", "evaluate_seeds", "consistency_black2022", "consistency_shard",
                                     "train_final_seed"], "jobs": [15, 24, 5, 4, 5],
                           "cpu_seconds": [277.0, 459.3, 302.9, 407.2, 355.4]})
    out = floors.fold_seed_groups(stages).set_index("stage")
    assert out.loc["evaluate", "jobs"] == 39 and out.loc["evaluate", "cpu_seconds"] == pytest.approx(736.3)
    assert out.loc["consistency_black2022", "jobs"] == 9
    assert out.loc["consistency_black2022", "cpu_seconds"] == pytest.approx(710.1)
    assert "consistency_shard" not in out.index and out.loc["train_final_seed", "jobs"] == 5
