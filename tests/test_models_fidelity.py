import math

import pytest
import torch

from ctbench.fidelity import PRESETS, resolve_fidelity
from ctbench.models import LeNet, build_model


def test_mlp_shape_and_flux_initialisation():
    m = build_model({"type": "mlp", "hidden": 32, "layers": 1}, 108, 2, seed=3)
    assert m(torch.zeros(5, 108)).shape == (5, 2)
    w = m[0].weight.detach()
    bound = math.sqrt(6 / (108 + 32))  # Glorot uniform
    assert float(w.abs().max()) <= bound and float(w.abs().max()) > 0.9 * bound
    assert all(float(layer.bias.abs().max()) == 0.0 for layer in (m[0], m[2]))
    w = {s: build_model({"type": "mlp"}, 4, 2, seed=s)[0].weight for s in (1, 2)}
    assert torch.equal(w[1], build_model({"type": "mlp"}, 4, 2, seed=1)[0].weight) and not torch.equal(w[1], w[2])
    deep = build_model({"type": "mlp", "layers": 3}, 4, 2)
    assert sum(isinstance(x, torch.nn.ReLU) for x in deep) == 3


def test_linear_and_lenet():
    assert build_model({"type": "linear"}, 2, 2)(torch.zeros(1, 2)).shape == (1, 2)
    net = build_model({"type": "lenet"}, 784, 10, seed=0)
    assert net(torch.zeros(3, 784)).shape == (3, 10)
    assert net.head[1].in_features == 784  # 7·7·16
    with pytest.raises(ValueError, match="784"):
        LeNet(100)


def test_model_config_errors():
    with pytest.raises(ValueError, match="unknown model"):
        build_model({"type": "resnet"}, 2, 2)
    with pytest.raises(ValueError, match="unknown key"):
        build_model({"type": "mlp", "width": 3}, 2, 2)


def test_fidelity_presets_and_overrides():
    ref, paper = PRESETS["reference"], PRESETS["paper"]
    assert (ref.ce_step_size, paper.ce_step_size) == (0.1, 0.25)
    assert (ref.domain_n_sigma, paper.domain_n_sigma) == (2.0, 3.0)
    assert (ref.mmd_length_scale, paper.mmd_length_scale) == (5.0, 0.5)
    assert ref.nascent_inclusive and not paper.nascent_inclusive
    f = resolve_fidelity("reference", {"adversarial_label": "predicted"})
    assert f.mode == "reference" and f.adversarial_label == "predicted"
    assert f.to_dict()["adversarial_label"] == "predicted"
    with pytest.raises(ValueError, match="unknown switch"):
        resolve_fidelity("reference", {"ce_stepsize": 0.2})
    with pytest.raises(ValueError, match="not one of"):
        resolve_fidelity("reference", {"adversarial_label": "random"})
    with pytest.raises(ValueError, match="unknown mode"):
        resolve_fidelity("preprint")
