"""Black et al.'s Figure 1 (run: ctbench/experiments/figure_runs/black.py, drawing:
ctbench/report/figures/black_figures.py, written by ctbench/cli/figure_cmds.py) and its workflow wiring."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from ctbench.cli.figure_cmds import write_black_figure1
from ctbench.data import load_dataset
from ctbench.experiments import figure_runs
from ctbench.experiments.figure_runs.black import BLACK_FIG1, black_figure1, grid_points, predict, train_plain
from ctbench.fidelity import resolve_fidelity
from ctbench.report.run_set import STAGE_FILES

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def moons():
    fid = resolve_fidelity("reference", {})
    return load_dataset("moons", fidelity=fid), fid


def test_grid_needs_2d_data():
    with pytest.raises(ValueError, match="needs 2D data"):
        grid_points(np.zeros((5, 3)), 10, 1.0)
    xs, ys, P = grid_points(np.array([[0.0, 0.0], [1.0, 2.0]]), 4, 0.5)
    assert P.shape == (16, 2) and xs[0] == -0.5 and ys[-1] == 2.5


def test_same_seed_pair_never_disagrees(moons):
    data, fid = moons
    _, _, P = grid_points(np.asarray(data.X_train), 40, 1.0)
    a, b = (predict(train_plain(data, BLACK_FIG1["models"]["deep"], 3, 2, fid), P) for _ in range(2))
    assert (a != b).sum() == 0


def test_linear_pair_disagrees_exactly_between_its_two_boundaries(moons):
    """Two linear models from different seeds disagree where their log-odds differ in sign: the wedge between
    their two boundary lines, nowhere else."""
    data, fid = moons
    _, _, P = grid_points(np.asarray(data.X_train), 60, 1.0)
    ms = [train_plain(data, BLACK_FIG1["models"]["linear"], s, 1, fid) for s in (0, 1)]
    dis = predict(ms[0], P) != predict(ms[1], P)
    side = []
    for m in ms:
        lin = [x for x in m.modules() if isinstance(x, torch.nn.Linear)][0]
        W, b = lin.weight.detach().double().numpy(), lin.bias.detach().double().numpy()
        side.append(P @ (W[1] - W[0]) + (b[1] - b[0]) > 0)
    assert dis.any() and np.array_equal(dis, side[0] != side[1])


def test_black_figure1_writes_its_files(tmp_path):
    res = write_black_figure1(black_figure1(seed=0, quick=True), tmp_path)
    for name in ("black_figure1.png", "black_figure1.pdf", "black_figure1.csv", "black_figure1.json"):
        assert (tmp_path / name).stat().st_size > 0, name
    side = json.loads((tmp_path / "black_figure1.json").read_text())
    assert side["seeds"] == [0, 1] and set(side["disagreement_share"]) == {"deep", "linear"}
    assert res["meta"]["quick"] is True


def test_black_figure1_is_a_figures_job_and_a_report_stage():
    cfg = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())
    job = [j for j in figure_runs.jobs(cfg) if j["figure"] == "black_figure1"]
    assert job == [{"figure": "black_figure1", "quick": False, "seed": int(cfg["seeds"][0]),
                    "fidelity": cfg.get("fidelity", "reference")}]
    assert not [j for j in figure_runs.jobs({**cfg, "figures": {"enabled": False}})]
    assert STAGE_FILES["black_figure1"] == ("black_figure1.*",)
    rules = (ROOT / "workflow/rules/figures.smk").read_text()
    assert "rule black_figure1:" in rules and "ctbench black-figure1 --seed {params.seed}" in rules
    report = (ROOT / "workflow/rules/report.smk").read_text()
    assert report.count('j["figure"] == "black_figure1"') == 2          # the report's --stages and the book inputs
