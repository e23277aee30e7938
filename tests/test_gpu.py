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
