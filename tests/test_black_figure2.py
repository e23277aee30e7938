"""Black et al.'s Figure 2 (run: ctbench/experiments/figure_runs/black2.py, drawing:
ctbench/report/figures/black_figures.py, written by ctbench/cli/figure_cmds.py) and its workflow wiring."""

from __future__ import annotations

import copy
import json
from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from ctbench.cli.figure_cmds import write_black_figure2
from ctbench.experiments import figure_runs
from ctbench.experiments.figure_runs.black2 import black_figure2, hidden_preactivations
from ctbench.report.figures.black_figures import black_figure2_plot
from ctbench.report.run_set import STAGE_FILES

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def run():
    """The quick run (10 epochs, about 5 CPU-s); the table keeps its attrs, a deep copy goes to the writer."""
    t = black_figure2(seed=0, quick=True)
    return t, dict(t.attrs)


def _affine_gradient(model, x: np.ndarray) -> np.ndarray:
    """∇(f₁ − f₀) of the MLP's affine piece at ``x``, from its weights and activation pattern only."""
    lins = [m for m in model if isinstance(m, torch.nn.Linear)]
    W = [m.weight.detach().double().numpy() for m in lins]
    b = [m.bias.detach().double().numpy() for m in lins]
    J, h = np.eye(len(x)), np.asarray(x, dtype=np.float64)
    for Wk, bk in zip(W[:-1], b[:-1], strict=True):
        u = Wk @ h + bk
        D = np.diag((u > 0).astype(float))
        J, h = D @ Wk @ J, np.maximum(u, 0)
    return (W[-1][1] - W[-1][0]) @ J


def test_drawn_gradient_is_the_regions_affine_map(run):
    table, x = run
    model, pts, grid = x["model"], x["points"], x["grid"]
    # up to 3 arrows in regions the boundary crosses, then up to 1 in one it does not (BLACK_FIG2["n_points"]); the
    # quick model on Moons' Julia points has test points in fewer distinct regions than that
    crossed = pts["crossed"].tolist()
    assert 1 <= len(pts) <= 4 and sum(crossed) <= 3 and len(crossed) - sum(crossed) <= 1
    assert crossed == sorted(crossed, reverse=True)
    for p in pts.itertuples():
        np.testing.assert_allclose([p.grad1, p.grad2], _affine_gradient(model, np.array([p.x1, p.x2])), rtol=1e-4)
        cells = grid[grid["region"] == p.region]
        # the region's cells: one affine map, the same gradient everywhere; the boundary crosses it iff f changes sign
        for c in cells.sample(min(len(cells), 5), random_state=0).itertuples():
            np.testing.assert_allclose(_affine_gradient(model, np.array([c.x1, c.x2])), [p.grad1, p.grad2],
                                       rtol=1e-4)
        assert p.crossed == bool((cells["logit"] > 0).any() and (cells["logit"] <= 0).any())


def test_dashed_lines_sit_where_a_preactivation_changes_sign(run):
    table, x = run
    model = x["model"]
    xs, ys, pre = x["axes"]
    fig = black_figure2_plot(table, x["grid"], x["points"], x["curves"], *x["train"], xs, ys, pre,
                             x["meta"]["flatness"])
    ax = fig.axes[0]
    dashed = {c.get_gid(): c for c in ax.collections if str(c.get_gid()).startswith("activation_constraint_")}
    changing = [u for u in range(pre.shape[1]) if pre[:, u].min() < 0 < pre[:, u].max()]
    assert sorted(int(g.rsplit("_", 1)[1]) for g in dashed) == changing and changing
    h = xs[1] - xs[0]
    for gid, cs in dashed.items():
        u = int(gid.rsplit("_", 1)[1])
        v = np.concatenate([p.vertices for p in cs.get_paths()])
        assert len(v) > 1
        around = np.concatenate([v + d for d in ([h, 0], [-h, 0], [0, h], [0, -h])])
        with torch.no_grad():
            z = hidden_preactivations(model, torch.as_tensor(around, dtype=torch.float32))[0][:, u].numpy()
        z = z.reshape(4, len(v))
        assert ((z.min(0) < 0) & (z.max(0) > 0)).all(), gid   # unit u changes sign within a grid step of every vertex


def test_max_slope_equals_a_finite_difference(run):
    table, x = run
    model = copy.deepcopy(x["model"]).double()
    v = table[table["valid"]]
    cf = torch.tensor(v[["cf1", "cf2"]].to_numpy(), dtype=torch.float64)
    tgt = torch.tensor(v["target"].to_numpy())
    ts = np.linspace(0, 1, x["meta"]["settings"]["t_points"])
    eps = 1e-6

    def sigma(t):
        with torch.no_grad():
            return torch.softmax(model(t * cf), 1).gather(1, tgt[:, None]).squeeze(1).numpy()
    fd = np.max([(sigma(t + eps) - sigma(t - eps)) / (2 * eps) for t in ts], axis=0)
    # float32 run vs float64 difference: a t next to a ReLU kink may fall on either side (a few 1e-4 at most)
    np.testing.assert_allclose(v["max_slope"], fd, rtol=1e-3, atol=5e-4)
    assert (v["max_slope"] > 1e-3).any()                    # not vacuous: some curves climb


def test_black_figure2_writes_its_files_and_the_medians(run, tmp_path):
    table, x = run
    t = table.copy()
    t.attrs.update(copy.copy(x))
    res = write_black_figure2(t, tmp_path)
    names = ("black_figure2.png", "black_figure2.pdf", "black_figure2.csv", "black_figure2_curves.csv",
             "black_figure2_regions.csv", "black_figure2.json")
    for name in names:
        assert (tmp_path / name).stat().st_size > 0, name
    side = json.loads((tmp_path / "black_figure2.json").read_text())
    rows = pd.read_csv(tmp_path / "black_figure2.csv")
    both = rows[rows.groupby("row")["valid"].transform("all")]
    for m, g in both.groupby("method"):
        assert side["flatness"]["all"][m]["median_max_slope"] == pytest.approx(g["max_slope"].median())
        assert side["flatness"]["all"][m]["median_sigma_final"] == pytest.approx(g["sigma_final"].median())
    assert side["baseline"] == "zero vector" and res["meta"]["quick"] is True
    curves = pd.read_csv(tmp_path / "black_figure2_curves.csv")
    assert set(curves["method"]) == {"min_l2", "min_l2+sns"} and curves["t"].min() == 0 and curves["t"].max() == 1
    assert all(any(fnmatch(name, p) for p in STAGE_FILES["black_figure2"]) for name in names)  # the report keeps them


def test_black_figure2_is_a_figures_job_and_a_report_stage():
    cfg = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())
    job = [j for j in figure_runs.jobs(cfg) if j["figure"] == "black_figure2"]
    assert job == [{"figure": "black_figure2", "quick": False, "seed": int(cfg["seeds"][0]),
                    "fidelity": cfg.get("fidelity", "reference")}]
    assert STAGE_FILES["black_figure2"] == ("black_figure2.*", "black_figure2_*.csv")
    rules = (ROOT / "workflow/rules/figures.smk").read_text()
    assert "rule black_figure2:" in rules and "ctbench black-figure2 --seed {params.seed}" in rules
    report = (ROOT / "workflow/rules/report.smk").read_text()
    assert report.count('j["figure"] == "black_figure2"') == 2


def test_the_book_says_where_sns_flattens_the_curve_from_the_files(tmp_path):
    """The sentence under Figure 2 is read from black_figure2.json/.csv: flip the medians and the text flips."""
    from ctbench.report.book.figure_pages import render_black_figure2_finding

    assert render_black_figure2_finding(tmp_path) == ""                  # the figure did not run: nothing said

    def write(base_slope, sns_slope):
        m = {"min_l2": {"n": 3, "median_max_slope": base_slope, "median_sns_integral": 0.7},
             "min_l2+sns": {"n": 3, "median_max_slope": sns_slope, "median_sns_integral": 0.9}}
        other = {"min_l2": {**m["min_l2"], "median_max_slope": 30.0},
                 "min_l2+sns": {**m["min_l2+sns"], "median_max_slope": 50.0}}
        flat = {"all": m, "target_is_baseline_class": m, "target_is_other_class": other}
        (tmp_path / "black_figure2.json").write_text(json.dumps({"flatness": flat}))
        pd.DataFrame({"method": ["min_l2", "min_l2+sns"] * 2, "row": [0, 0, 1, 1], "valid": True,
                      "cost_l2": [0.5, 1.5, 0.7, 1.1]}).to_csv(tmp_path / "black_figure2.csv", index=False)
        return render_black_figure2_finding(tmp_path)

    text = write(18.9, 0.0002)
    assert "SNS lowers the median maxₜ dσ/dt from 18.9 to 0.0002" in text
    assert "must cross the decision boundary, SNS raises the median maxₜ dσ/dt from 30 to 50" in text
    assert "median ℓ2 cost of 1.3 against 0.6" in text and "raises the path integral" in text
    assert "SNS raises the median maxₜ dσ/dt from 18.9 to 25" in write(18.9, 25.0)
