"""``training.grad_chunks`` (issue 21): a mini-batch's loss and weight gradients over fixed row chunks, summed in
chunk order, each chunk at one intra-op thread. The sums are the whole batch's (checked in float64, where rounding
cannot hide a wrong weight), and the bits depend on the chunk count only: any number of workers, any caller thread
count, the same model."""

import json
import os
from pathlib import Path

import pytest
import torch

from ctbench.checks import check_value
from ctbench.cli import main
from ctbench.errors import ConfigError
from ctbench.experiments import lenet
from ctbench.models import MLP, LeNet
from ctbench.training.grad_chunks import chunked_loss_and_grads, even_bounds
from ctbench.training.members import Member, validate_members
from ctbench.training.objectives import CounterfactualGroup, Objective
from ctbench.training.trainer import TrainParams

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CTBENCH_DATA", ROOT.parent / "shared" / "data"))
TINY = {"data": {"name": "mnist", "params": {"n_per_class": 20, "n_val": 20}}, "model": {"type": "lenet"},
        "training": {"epochs": 2, "batch_size": 50, "nce": 200, "grad_chunks": 3}, "seed": 1}


@pytest.fixture
def threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def case(model: torch.nn.Module, d: int, n: int, m: int, dtype=torch.float64):
    g = torch.Generator().manual_seed(0)
    model = model.to(dtype)
    x = torch.rand(n, d, generator=g, dtype=dtype)
    y = torch.randint(0, 2 if d < 784 else 10, (n,), generator=g)
    k = 2 if d < 784 else 10
    grp = CounterfactualGroup(*(torch.rand(m, d, generator=g, dtype=dtype) for _ in range(2)),
                              torch.randint(0, k, (m,), generator=g), torch.rand(m, d, generator=g, dtype=dtype),
                              torch.randint(0, k, (m,), generator=g))
    return model, x, y, grp


@pytest.mark.parametrize("name", ["full", "vanilla", "energy", "adversarial"])
@pytest.mark.parametrize("arch", ["mlp", "lenet"])
@pytest.mark.parametrize("n,m,k", [(60, 25, 3), (13, 2, 4)])  # (13, 2, 4): chunks without tuples
def test_chunk_sums_are_the_whole_batch_loss_and_gradients(name, arch, n, m, k):
    g = torch.Generator().manual_seed(1)
    net, d = (MLP(5, 2, hidden=8, generator=g), 5) if arch == "mlp" else (LeNet(generator=g), 784)
    model, x, y, grp = case(net, d, n, m)
    obj = Objective(name, lambda_reg=0.01)
    params = list(model.parameters())
    loss, parts = obj(model, x, y, grp)
    whole = torch.autograd.grad(loss, params)
    c_loss, c_parts, c_grads = chunked_loss_and_grads(obj, model, x, y, grp, k)
    torch.testing.assert_close(c_loss, loss.detach(), rtol=1e-12, atol=0)
    assert c_parts.keys() == parts.keys()
    for key in parts:
        torch.testing.assert_close(c_parts[key], parts[key].detach(), rtol=1e-12, atol=1e-15)
    for a, b in zip(c_grads, whole, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-13)


def test_the_bits_depend_on_the_chunks_not_on_workers_or_threads(threads):
    """float32 LeNet, 5 chunks: 1, 2, 3 and 8 workers, the caller at 1 or 2 intra-op threads, bit for bit; and the
    caller's thread count is left as it was."""
    g = torch.Generator().manual_seed(2)
    model, x, y, grp = case(LeNet(generator=g), 784, 230, 90, torch.float32)
    obj = Objective("full", lambda_reg=0.01)
    torch.set_num_threads(1)
    ref = chunked_loss_and_grads(obj, model, x, y, grp, 5, workers=1)
    for caller in (1, 2):
        torch.set_num_threads(caller)
        for workers in (1, 2, 3, 8):
            got = chunked_loss_and_grads(obj, model, x, y, grp, 5, workers=workers)
            assert torch.equal(got[0], ref[0]), (caller, workers)
            assert all(torch.equal(got[1][k], ref[1][k]) for k in ref[1])
            assert all(torch.equal(a, b) for a, b in zip(got[2], ref[2], strict=True)), (caller, workers)
            assert torch.get_num_threads() == caller


def test_even_bounds():
    assert even_bounds(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert even_bounds(2, 4) == [(0, 0), (0, 1), (1, 1), (1, 2)]


def test_the_setting_is_checked_and_refused_where_it_does_not_apply():
    assert check_value("training.grad_chunks", 4) == 4
    with pytest.raises(ValueError, match="training.grad_chunks"):
        TrainParams(grad_chunks=0)
    with pytest.raises(ConfigError, match="lenet.grad_chunks: expected a positive integer"):
        lenet.grad_chunks({"lenet": {"grad_chunks": 0}})
    assert lenet.grad_chunks({"lenet": {}}) == 1 and lenet.grad_chunks({"lenet": {"grad_chunks": 8}}) == 8
    member = Member(MLP(3, 2, generator=torch.Generator().manual_seed(0)), Objective("vanilla"),
                    TrainParams(grad_chunks=2), None)
    with pytest.raises(ValueError, match="grad_chunks=2 is for a model trained alone"):
        validate_members([member], 10)


@pytest.mark.skipif(not (DATA / "mnist").is_dir(), reason="the MNIST files are not in CTBENCH_DATA")
def test_cli_trains_the_same_model_at_any_search_threads(tmp_path, monkeypatch, threads):
    """A CT LeNet with grad_chunks 3 at 1 and 3 threads (search and gradient chunks): weights and per-epoch logs bit
    for bit; the chunked run is not the whole-batch run (the setting is in the model's config, not a speed knob)."""
    monkeypatch.setenv("CTBENCH_DATA", str(DATA))
    runs = {}
    for name, extra in [("one", []), ("three", ["--search-threads", "3"])]:
        out = tmp_path / f"{name}.pt"
        assert main(["train", "--config-json", json.dumps(TINY), "--out", str(out), "--quiet", *extra]) == 0
        runs[name] = (torch.load(out, weights_only=True)["state_dict"], json.loads(Path(f"{out}.json").read_text()))
    (a, side_a), (b, side_b) = runs["one"], runs["three"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    for col in ("loss", "clf", "div", "reg", "adv", "acc_train", "acc_val", "share_mature"):
        assert side_a["log"][col] == side_b["log"][col], col
    assert side_a["config"]["training"]["grad_chunks"] == 3
    whole = tmp_path / "whole.pt"
    cfg = {**TINY, "training": {**TINY["training"], "grad_chunks": 1}}
    assert main(["train", "--config-json", json.dumps(cfg), "--out", str(whole), "--quiet"]) == 0
    c = torch.load(whole, weights_only=True)["state_dict"]
    assert not all(torch.equal(a[k], c[k]) for k in a)  # float sums in another order (the math: tests above)


def test_a_non_finite_chunked_loss_stops_training_with_the_divergence_error():
    """A NaN weight makes every chunk's loss NaN: the summed loss is caught by the trainer's check, as the whole
    batch's is, and the run stops with TrainingDivergedError naming the setting to change; no update is applied."""
    from ctbench.training.health import TrainingDivergedError
    from ctbench.training.trainer import train

    g = torch.Generator().manual_seed(0)
    model = MLP(4, 2, hidden=8, generator=g)
    with torch.no_grad():
        model[0].weight[0, 0] = float("nan")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    X, y = torch.rand(40, 4, generator=g), torch.randint(0, 2, (40,), generator=g)
    why = r"non-finite loss nan at epoch 1, batch 1 .*training\.max_nonfinite_batches=0"
    with pytest.raises(TrainingDivergedError, match=why):
        train(model, X, y, objective=Objective("vanilla"), generator=None,
              params=TrainParams(epochs=2, batch_size=10, nce=None, grad_chunks=3))
    after = model.state_dict()
    assert all(torch.equal(before[k].nan_to_num(), after[k].nan_to_num()) for k in before)  # no update applied
