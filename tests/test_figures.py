"""Figure 1 and the MNIST figures (runs: ctbench/experiments/figure_runs/, drawing:
ctbench/report/figures/paper_figures.py,
written by ctbench/cli/figure_cmds.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ctbench.cli.figure_cmds import write_figure1, write_mnist_figures
from ctbench.experiments.figure_runs import PANELS, figure1, mnist_figures

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CTBENCH_DATA") or REPO.parent / "shared" / "data")
HAVE_MNIST = (DATA / "mnist" / "t10k-images-idx3-ubyte.gz").is_file()


@pytest.fixture(scope="module")
def fig1(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig1")
    return out, write_figure1(figure1(seed=0), out)  # the full 30 epochs (about 5 s)


def test_figure1_writes_files(fig1):
    out, res = fig1
    for name in ("figure1.png", "figure1.pdf", "figure1.csv", "figure1.json"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "figure1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "figure1.pdf").read_bytes()[:5] == b"%PDF-"
    assert not [p for p in out.iterdir() if p.name.startswith(".")], "temporary files left behind"
    table = pd.read_csv(out / "figure1.csv")
    assert set(table["panel"]) == {p[0] for p in PANELS}
    assert table.groupby("panel").size().nunique() == 1  # the same factuals in every panel
    assert table.groupby("test_index")[["x1", "x2"]].nunique().max().max() == 1
    side = json.loads((out / "figure1.json").read_text())
    assert side["settings"]["generator"]["type"] == "generic" and side["settings"]["model"] == {"type": "linear"}


def test_figure1_immutable_panels_keep_feature_0(fig1):
    _, res = fig1
    t = res["table"]
    imm = t[t["panel"].isin(["c", "d"])]
    assert (imm["cf_x1"].to_numpy() == imm["x1"].to_numpy()).all()  # exactly, not approximately
    assert (imm["cf_x2"] != imm["x2"]).all()  # the mutable feature did move
    free = t[t["panel"].isin(["a", "b"])]
    assert (free["cf_x1"] != free["x1"]).all()  # without the constraint the first feature moves too
    assert t["immutable_search"].tolist() == [p in ("c", "d") for p in t["panel"]]


def test_figure1_ct_differs_from_bl(fig1):
    _, res = fig1
    p = res["panels"]
    assert p["a"]["w"] == p["c"]["w"]  # one BL model serves (a) and (c)
    assert not np.allclose(p["a"]["w"], p["b"]["w"])
    assert not np.allclose(p["b"]["w"], p["d"]["w"])  # protection changes CT
    t = res["table"].set_index(["panel", "test_index"])
    assert not np.allclose(t.loc["a"][["cf_x1", "cf_x2"]], t.loc["b"][["cf_x1", "cf_x2"]])


def test_figure1_shows_the_papers_tilt(fig1):
    """BL and CT weigh both features alike in magnitude (the LS centres the authors' code draws differ by
    (-3.58, 4.51): a ratio of 0.79; on the symmetric calibrated centres it is 1); CT with the first feature protected
    tilts the boundary towards the mutable feature (panel d), and its counterfactuals stay valid."""
    _, res = fig1
    p = res["panels"]
    assert 0.6 < p["a"]["sensitivity_ratio"] < 1.4 and 0.6 < p["b"]["sensitivity_ratio"] < 1.4
    assert p["d"]["sensitivity_ratio"] < 0.5 * min(p["a"]["sensitivity_ratio"], p["b"]["sensitivity_ratio"])
    assert p["d"]["valid"] == 1.0 and p["c"]["valid"] == 1.0
    assert np.linalg.norm(p["b"]["w"]) > 2 * np.linalg.norm(p["a"]["w"])  # CT's sharper boundary


@pytest.mark.skipif(not HAVE_MNIST, reason=f"MNIST files not found in {DATA}")
def test_mnist_figures(tmp_path, monkeypatch):
    from ctbench.api import train_from_config
    from ctbench.paper_settings import model_config

    monkeypatch.setenv("CTBENCH_DATA", str(DATA))
    monkeypatch.setenv("CTBENCH_CACHE", str(tmp_path / "cache"))
    paths = {}
    for name, objective in (("ct", "full"), ("bl", "vanilla")):
        cfg = model_config("mnist", "mutability", objective, 0, epochs=1,
                           data_params={"n_per_class": 40, "n_val": 50},
                           overrides={"training.nce": 40, "training.batch_size": 100})
        paths[name] = train_from_config(cfg).save(tmp_path / f"{name}.pt")
    out = tmp_path / "figs"
    res = write_mnist_figures(mnist_figures(paths["ct"], paths["bl"], n_factuals=2, targets=(1, 2), max_iter=40,
                                            classes=(5, 9), attribution_samples=4, steps=8), out)
    for stem in ("mnist_counterfactuals", "mnist_attribution"):
        for ext in ("png", "pdf", "csv"):
            assert (out / f"{stem}.{ext}").stat().st_size > 0
    cf = res["counterfactuals"]
    assert len(cf) == 2 * 2 * 2 and set(cf["model"]) == {"BL", "CT"}
    assert (cf["factual"] == 0).all() and set(cf["target"]) == {1, 2}
    assert (cf["steps"] == 40).all()  # max-iter convergence: every search takes all T steps
    assert (cf["max_change_protected"] == 0).all()  # the models' protected rows stay fixed
    assert cf.groupby("test_index")["model"].nunique().eq(2).all()  # the same factuals for BL and CT
    attr = res["attribution"]
    assert set(attr["class"]) == {5, 9} and (attr["n_images"] == 4).all()
    assert attr[["mean_protected", "mean_other"]].apply(lambda s: s.between(0, 1)).all().all()
    # the appendix's 10x10 grids (Figures 4-5): every factual class towards every other class, same factuals
    grid = pd.read_csv(out / "mnist_grid.csv")
    assert (out / "mnist_grid_ct.png").stat().st_size > 0 and (out / "mnist_grid_bl.png").stat().st_size > 0
    assert len(grid) == 2 * 90 and set(grid["model"]) == {"BL", "CT"}
    assert set(zip(grid["factual"], grid["target"], strict=True)) == {(i, j) for i in range(10) for j in range(10)
                                                                      if i != j}
    assert grid.groupby("factual")["test_index"].nunique().eq(1).all()  # one factual per class, both models
    assert (grid["steps"] == 40).all()  # the figure's max-iter convergence, all 180 searches in two batches
