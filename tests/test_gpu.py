"""GPU paths (run where CUDA exists: ``pytest -m gpu``)."""

import pytest
import torch

from ctbench.api import train_from_config
from ctbench.generators import Convergence, make_generator
from ctbench.models import build_model

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]


def test_search_on_gpu_matches_cpu():
    model = build_model({"type": "mlp"}, 12, 2, seed=0).double()
    x = torch.randn(2048, 12, dtype=torch.float64)
    y = (model(x).argmax(1) + 1) % 2
    gen = make_generator({"type": "ecco", "lambda_cost": 0.001})
    conv = Convergence("threshold", 0.75, 30)
    cpu = gen.search(model, x, y, convergence=conv)
    gpu = gen.search(model.cuda(), x.cuda(), y.cuda(), convergence=conv)
    torch.testing.assert_close(gpu.counterfactual.cpu(), cpu.counterfactual, rtol=1e-9, atol=1e-9)
    assert torch.equal(gpu.steps.cpu(), cpu.steps)


def test_training_on_gpu():
    trained = train_from_config({"data": {"name": "lin_sep"}, "device": "cuda", "training": {"epochs": 10}})
    assert next(trained.model.parameters()).is_cuda and trained.meta["acc_test"] > 0.99


def test_population_on_gpu_matches_cpu():
    import numpy as np

    from ctbench.training import Objective, TrainParams
    from ctbench.training.population import Member, train_population

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    X = rng.standard_normal((300, 3)) + 1.5 * (2 * y[:, None] - 1)

    def members():
        return [Member(build_model({"type": "mlp"}, 3, 2, seed=s).double(), Objective(obj),
                       TrainParams(epochs=3, batch_size=30, nce=50, seed=s),
                       make_generator({"type": "ecco"}) if obj != "vanilla" else None,
                       Convergence("threshold", 0.75, 10), name=f"{obj}{s}")
                for s, obj in enumerate(["full", "vanilla", "energy", "adversarial"])]

    cpu = train_population(members(), X, y, dtype=torch.float64)
    gpu = train_population(members(), X, y, dtype=torch.float64, device="cuda")
    for c, g in zip(cpu, gpu, strict=True):
        assert g.ok and next(g.model.parameters()).is_cuda
        for p, q in zip(c.model.parameters(), g.model.parameters(), strict=True):
            torch.testing.assert_close(q.cpu(), p, rtol=1e-8, atol=1e-8)
