"""``ctbench train --search-threads N`` and the search's ``workers`` (issue 21): the rows of one search split into N
chunks searched at once, each on one thread at one intra-op thread. For LeNet's search a row's bits do not depend
on the batch it is searched in, so any split, down to one row at a time, gives the one-thread search bit for bit,
and a CT LeNet trained with it is the one-thread model. (An earlier version ran the search at N intra-op threads,
which split each operator's rows and moved the model: benchmarks/results/lenet-threads-cpu2.md.)"""

import json
import os
import threading
from pathlib import Path

import pytest
import torch

from ctbench.cli import main
from ctbench.cli.search_threads import search_threads, unsplit_search_note
from ctbench.errors import UserInputError
from ctbench.generators import row_chunks
from ctbench.generators.base import Convergence
from ctbench.generators.ecco import ECCoGenerator
from ctbench.generators.generic import GenericGenerator
from ctbench.generators.result import CounterfactualResult
from ctbench.models import LeNet

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CTBENCH_DATA", ROOT.parent / "shared" / "data"))
TINY = {"data": {"name": "mnist", "params": {"n_per_class": 20, "n_val": 20}}, "model": {"type": "lenet"},
        "training": {"epochs": 2, "batch_size": 50, "nce": 200}, "seed": 1}
FIELDS = ("counterfactual", "nascent", "steps", "prob_target", "mature", "initially_valid")


@pytest.fixture
def threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32) if t.dtype == torch.float32 else t


def sharp_case(n: int = 300):
    g = torch.Generator().manual_seed(0)
    model, x = LeNet(generator=g), torch.rand(n, 784, generator=g)
    target = torch.randint(0, 10, (n,), generator=g)
    with torch.no_grad():  # sharper logits, so that rows pass τ at every step from 0 to 12
        model.head[-1].weight.mul_(20)
    return model, x, target


@pytest.mark.parametrize("gen", [ECCoGenerator(step_size=0.05), GenericGenerator(step_size=0.05, lambda_cost=0.01)])
def test_a_rows_bits_do_not_depend_on_its_batch(gen, threads):
    """One search of 300 rows at one thread; the same rows in 2 and 3 workers, and the first 12 rows each searched
    alone (batches of one row, whose tails pass every small size): every field bit for bit."""
    torch.set_num_threads(1)
    model, x, target = sharp_case()
    conv = Convergence("threshold", 0.5, 12)
    whole = gen.search(model, x, target, convergence=conv)
    assert len(whole.steps.unique()) == 13  # rows retired at every step: the batch shrank 12 times
    for workers in (2, 3):
        split = gen.search(model, x, target, convergence=conv, workers=workers)
        for f in FIELDS:
            assert torch.equal(bits(getattr(split, f)), bits(getattr(whole, f))), (workers, f)
    for i in range(12):
        alone = gen.search(model, x[i:i + 1], target[i:i + 1], convergence=conv)
        for f in FIELDS:
            assert torch.equal(bits(getattr(alone, f)), bits(getattr(whole, f)[i:i + 1])), (i, f)
    assert torch.get_num_threads() == 1


def test_chunks_run_at_one_intra_op_thread_on_their_own_threads(threads):
    """Three chunks, each on a worker thread at one intra-op thread, concatenated in row order; the caller's
    thread count is untouched; small batches are not split below MIN_CHUNK_ROWS rows a chunk."""
    torch.set_num_threads(2)
    seen = []

    def search(x, t):  # a stand-in search that records where it ran and marks its rows
        seen.append((threading.current_thread().name, torch.get_num_threads(), x.shape[0]))
        flag = torch.zeros(x.shape[0], dtype=torch.bool)
        return CounterfactualResult(x, t, x + 1, x.clone(), flag, t.clone(), x[:, 0], flag)

    x, t = torch.arange(200.0)[:, None].repeat(1, 3), torch.arange(200)
    res = row_chunks.search_row_chunks(search, x, t, workers=3)
    assert torch.equal(res.counterfactual, x + 1) and torch.equal(res.steps, t)  # rows back in their order
    assert torch.get_num_threads() == 2
    assert sorted(n for *_, n in seen) == [66, 67, 67]
    assert all(name.startswith("ctbench-search") and k == 1 for name, k, _ in seen)
    assert row_chunks.chunk_bounds(100, 8) == [(0, 100)]
    assert row_chunks.chunk_bounds(130, 8) == [(0, 65), (65, 130)]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="workers"):
            row_chunks.search_row_chunks(search, x, t, workers=bad)


def test_search_threads_sets_the_row_workers_of_every_search_and_prediction(threads):
    """Inside ``search_threads(n)`` a search not given ``workers`` and ``predict_row_chunks`` split their rows over
    n threads (the trainer's epoch search, its prediction and its accuracy passes), and the labels are one pass's."""
    torch.set_num_threads(1)
    model, x, _ = sharp_case(400)
    whole = model(x).argmax(1)
    with search_threads(3):
        assert row_chunks.current_workers() == 3
        assert torch.equal(row_chunks.predict_row_chunks(model, x), whole)
    with search_threads(None):
        assert row_chunks.current_workers() == 1
    assert row_chunks.current_workers() == 1 and torch.get_num_threads() == 1
    for bad in (0, -2, 1.5, True):
        with pytest.raises(UserInputError, match="--search-threads"), search_threads(bad):
            pass


@pytest.mark.skipif(not (DATA / "mnist").is_dir(), reason="the MNIST files are not in CTBENCH_DATA")
def test_cli_search_threads_trains_the_one_thread_model(tmp_path, monkeypatch, threads):
    monkeypatch.setenv("CTBENCH_DATA", str(DATA))
    one, two = tmp_path / "one.pt", tmp_path / "two.pt"
    cfg = json.dumps(TINY)
    assert main(["train", "--config-json", cfg, "--out", str(one), "--quiet"]) == 0
    assert main(["train", "--config-json", cfg, "--out", str(two), "--quiet", "--search-threads", "3"]) == 0
    a, b = (torch.load(p, weights_only=True) for p in (one, two))
    assert a["state_dict"].keys() == b["state_dict"].keys()
    assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
    assert b["meta"]["search_threads"] == 3 and "search_threads" not in a["meta"]
    logs = [json.loads(Path(f"{m}.json").read_text())["log"] for m in (one, two)]
    assert logs[0]["acc_train"] == logs[1]["acc_train"]
    assert logs[0]["acc_val"] == logs[1]["acc_val"] and logs[0]["loss"] == logs[1]["loss"]
    assert json.loads(Path(f"{two}.json").read_text())["search_threads"] == 3
    # a population searches together: refused, not silently ignored
    assert main(["train", "--config-json", cfg, "--config-json", cfg, "--out", str(tmp_path / "p.pt"),
                 "--out", str(tmp_path / "q.pt"), "--quiet", "--search-threads", "2"]) != 0
    assert not (tmp_path / "p.pt").exists()


def test_a_bad_thread_count_is_refused_before_training(tmp_path, capsys):
    out = tmp_path / "m.pt"
    assert main(["train", "--out", str(out), "--quiet", "--search-threads", "0"]) == 2
    assert "--search-threads: expected a positive integer, got 0" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.skipif(not (DATA / "mnist").is_dir(), reason="the MNIST files are not in CTBENCH_DATA")
def test_cli_evaluate_with_search_threads_writes_the_one_thread_rows(tmp_path, monkeypatch, threads):
    """``ctbench evaluate --search-threads 3`` on a LeNet: every column but the timings equal to one thread's."""
    import pandas as pd

    monkeypatch.setenv("CTBENCH_DATA", str(DATA))
    model = tmp_path / "m.pt"
    assert main(["train", "--config-json", json.dumps({**TINY, "training": {**TINY["training"], "epochs": 1}}),
                 "--out", str(model), "--quiet"]) == 0
    frames = []
    for extra in ([], ["--search-threads", "3"]):
        out = tmp_path / f"e{len(extra)}.csv"
        assert main(["evaluate", "--model", f"CT={model}", "--experiment", "single", "--set", "n_runs=4",
                     "--set", "n_individuals=50", "--set", "lambdas=[0.5]", "--out", str(out), "--quiet",
                     *extra]) == 0
        frames.append(pd.read_csv(out).drop(columns=["seconds"]))
    assert len(frames[0]) >= 192  # three chunks of at least 64 rows
    pd.testing.assert_frame_equal(frames[0], frames[1], check_exact=True)


def test_unsplit_search_note_names_revise_only():
    """``--search-threads n`` on a REVISE model: its search stays one chunk (latent draws in row order), and the
    command says so; for the generators whose search is split, and for n ≤ 1, there is nothing to say."""
    note = unsplit_search_note({"generator": {"type": "revise"}}, 3)
    assert note and "--search-threads 3" in note and "revise" in note
    assert unsplit_search_note({"generator": {"type": "REVISE"}}, 2)
    for cfg, n in (({"generator": {"type": "revise"}}, 1), ({"generator": {"type": "revise"}}, None),
                   ({"generator": {"type": "ecco"}}, 4), ({"generator": {"type": "generic"}}, 2), ({}, 2)):
        assert unsplit_search_note(cfg, n) is None


def test_revise_search_stays_one_chunk_under_row_workers(monkeypatch):
    """What the note says: inside ``search_threads(3)`` REVISE's search is handed one worker (its latent draws are
    one stream in row order) and gives the unsplit search's counterfactuals bit for bit; a feature-space generator
    is handed the three workers."""
    from ctbench.generators import make_generator
    from ctbench.generators.vae import VAE
    from ctbench.models import build_model

    torch.set_num_threads(1)
    x = torch.randn(60, 4, generator=torch.Generator().manual_seed(0))
    model = build_model({"type": "mlp"}, 4, 2, seed=0)
    target = 1 - model(x).argmax(1)
    vae = VAE(4, 2, 8, seed=0)
    vae.fit(x, epochs=2, batch_size=30, seed=0)
    revise = make_generator({"type": "revise"}, vae=vae)
    conv = Convergence("threshold", 0.75, 10)
    alone = revise.search(model, x, target, None, conv, torch.Generator().manual_seed(1))
    seen = []
    real = row_chunks.search_row_chunks

    def spy(search, xs, ts, workers):
        seen.append(workers)
        return real(search, xs, ts, workers)

    import ctbench.generators.base as base

    monkeypatch.setattr(base, "search_row_chunks", spy)
    with search_threads(3):
        split = revise.search(model, x, target, None, conv, torch.Generator().manual_seed(1))
        make_generator({"type": "generic"}).search(model, x, target, None, conv)
    assert seen == [1, 3]
    assert torch.equal(split.counterfactual, alone.counterfactual)
