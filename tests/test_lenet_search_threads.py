"""``ctbench train --search-threads N`` (issue 21): on the shapes tested here LeNet's counterfactual search gives the
same bits at any thread count, so a short CT LeNet trained with its search at N threads and the rest at one is the
one-thread model bit for bit. Not over a whole run: the paper profile's 100-epoch job first differs in epoch 12 at 2
threads (benchmarks/results/lenet-threads-cpu2.md), which is why ``lenet.search_threads`` stays null in paper.yaml."""

import json
import os
from pathlib import Path

import pytest
import torch

from ctbench.cli import main
from ctbench.errors import UserInputError
from ctbench.generators.base import Convergence
from ctbench.generators.ecco import ECCoGenerator
from ctbench.models import LeNet
from ctbench.training import trainer
from ctbench.training.search_threads import search_threads

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CTBENCH_DATA", ROOT.parent / "shared" / "data"))
TINY = {"data": {"name": "mnist", "params": {"n_per_class": 20, "n_val": 20}}, "model": {"type": "lenet"},
        "training": {"epochs": 2, "batch_size": 50, "nce": 60}, "seed": 1}


@pytest.fixture
def threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_the_lenet_search_is_bitwise_across_thread_counts(threads):
    """The premise: rows retire at different steps (the batch shrinks), and every thread count gives the same bits."""
    g = torch.Generator().manual_seed(0)
    model, x = LeNet(generator=g), torch.rand(300, 784, generator=g)
    target = torch.randint(0, 10, (300,), generator=g)
    with torch.no_grad():  # sharper logits, so that rows pass τ at every step from 0 to 12
        model.head[-1].weight.mul_(20)
    runs = []
    for n in (1, 2, 3):
        torch.set_num_threads(n)
        r = ECCoGenerator(step_size=0.05).search(model, x, target, convergence=Convergence("threshold", 0.5, 12))
        runs.append(r)
    assert len(runs[0].steps.unique()) == 13  # rows retired at every step: the batch shrank 12 times
    for r in runs[1:]:
        for f in ("counterfactual", "nascent", "steps", "prob_target", "mature"):
            assert torch.equal(getattr(r, f), getattr(runs[0], f)), f


def test_only_the_search_runs_at_n_threads(threads, monkeypatch):
    seen = []
    monkeypatch.setattr(trainer, "generate_epoch_counterfactuals", lambda: seen.append(torch.get_num_threads()))
    recorder = trainer.generate_epoch_counterfactuals
    torch.set_num_threads(1)
    with search_threads(3):
        trainer.generate_epoch_counterfactuals()
        assert torch.get_num_threads() == 1  # restored after the search
    assert seen == [3] and trainer.generate_epoch_counterfactuals is recorder
    with search_threads(None):
        trainer.generate_epoch_counterfactuals()
    assert seen == [3, 1]
    for bad in (0, -2, 1.5, True):
        with pytest.raises(UserInputError, match="--search-threads"), search_threads(bad):
            pass


@pytest.mark.skipif(not (DATA / "mnist").is_dir(), reason="the MNIST files are not in CTBENCH_DATA")
def test_cli_search_threads_trains_the_one_thread_model(tmp_path, monkeypatch, threads):
    monkeypatch.setenv("CTBENCH_DATA", str(DATA))
    one, two = tmp_path / "one.pt", tmp_path / "two.pt"
    cfg = json.dumps(TINY)
    assert main(["train", "--config-json", cfg, "--out", str(one), "--quiet"]) == 0
    assert main(["train", "--config-json", cfg, "--out", str(two), "--quiet", "--search-threads", "2"]) == 0
    a, b = (torch.load(p, weights_only=True) for p in (one, two))
    assert a["state_dict"].keys() == b["state_dict"].keys()
    assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
    assert b["meta"]["search_threads"] == 2 and "search_threads" not in a["meta"]
    assert json.loads(Path(f"{two}.json").read_text())["search_threads"] == 2
    # a population searches together: refused, not silently ignored
    assert main(["train", "--config-json", cfg, "--config-json", cfg, "--out", str(tmp_path / "p.pt"),
                 "--out", str(tmp_path / "q.pt"), "--quiet", "--search-threads", "2"]) != 0
    assert not (tmp_path / "p.pt").exists()


def test_a_bad_thread_count_is_refused_before_training(tmp_path, capsys):
    out = tmp_path / "m.pt"
    assert main(["train", "--out", str(out), "--quiet", "--search-threads", "0"]) == 2
    assert "--search-threads: expected a positive integer, got 0" in capsys.readouterr().err
    assert not out.exists()
