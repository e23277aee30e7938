"""The search problem both LeNet search benchmarks time (issue 21): the final MNIST CT settings on the initial LeNet
(seed 0), ``rows`` real MNIST training images drawn with seed 0, and a target ≠ the prediction for each. Shared so
that the profile (``lenet_search_profile.py``) and the thread study (``lenet_search_threads.py``) search the same
rows."""

import torch

from ctbench.generators.base import Convergence
from ctbench.paper_settings import model_config
from ctbench.training.pipeline import prepare_training


def search_problem(rows: int, steps: int):
    """``(prepared training, model, factuals, targets, convergence)`` for one search of ``rows`` factuals and at most
    ``steps`` steps."""
    p = prepare_training(model_config("mnist", "single", "full", 0, epochs=1, overrides={"model": {"type": "lenet"}}))
    X, model = torch.as_tensor(p.data.X_train, dtype=torch.float32), p.model
    gen = torch.Generator().manual_seed(0)
    xf = X[torch.randperm(X.shape[0], generator=gen)[:rows]]
    with torch.no_grad():
        target = (model(xf).argmax(1) + 1 + torch.randint(0, 9, (rows,), generator=gen)) % 10
    return p, model, xf, target, Convergence(p.conv.kind, p.conv.tau, steps)
