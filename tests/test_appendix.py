"""The paper's appendix items: grid performance (Tables 4-6), final hyper-parameters (Table 2), tuning figures
(Figures 30-65), the 10x10 MNIST grid figure (Figures 4-5) and their book includes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ctbench.experiments.figure_runs import pick_factuals
from ctbench.facts import DATASETS, PAPER_DATASETS
from ctbench.paper_settings import model_config
from ctbench.report.book import appendix_pages
from ctbench.report.figures.mnist_grid import grid_figure
from ctbench.report.figures.tuning_figures import (
    paper_figure_number,
    split_tuning,
    tuning_ip_figure,
    tuning_mature_figure,
    tuning_points,
)
from ctbench.report.tables.appendix_tables import final_hyperparameters_table, grid_performance, write_appendix
from ctbench.report.tables.paper_tables import PUBLISHED_DIR
from ctbench.workflow import Workflow


def _chunk_rows(grid: str, dataset: str, points: dict[str, dict], bl: dict, n_lambda: dict[str, int]) -> pd.DataFrame:
    """Chunk-CSV rows: one per (point, test-time λ_egy); accuracy/F1 repeat over a point's rows as in run_chunk."""
    rows = []
    for pid, v in points.items():
        for k in range(n_lambda[pid]):
            rows.append({"grid": grid, "dataset": dataset, "seed": 0, "point": pid, "baseline_key": "bl",
                         "lambda_energy_eval": [0.1, 0.5, 1.0, 5.0][k], "acc_test_ct": v["acc"], "f1_test_ct": v["f1"],
                         "acc_test_bl": bl["acc"], "f1_test_bl": bl["f1"], "ip_change_pct": v.get("ip", -1.0) * (k + 1),
                         "error": np.nan, **v.get("params", {})})
    return pd.DataFrame(rows)


def test_grid_performance_is_the_mean_over_models_not_rows(tmp_path):
    pts = {"a": {"acc": 0.90, "f1": 0.80}, "b": {"acc": 1.00, "f1": 1.00}, "c": {"acc": 0.95, "f1": 0.85}}
    df = _chunk_rows("gen_params", "lin_sep", pts, {"acc": 0.99, "f1": 0.98}, {"a": 4, "b": 1, "c": 2})
    failed = pd.DataFrame([{"grid": "gen_params", "dataset": "lin_sep", "seed": 0, "point": "d", "baseline_key": "bl",
                            "error": "diverged"}])
    path = tmp_path / "c.csv"
    pd.concat([df, failed]).to_csv(path, index=False)
    out = grid_performance([path]).set_index(["variable", "objective"])
    acc = np.array([0.90, 1.00, 0.95])
    assert out.loc[("Accuracy", "Full"), "mean"] == pytest.approx(acc.mean())  # row mean would be 0.9214
    assert out.loc[("Accuracy", "Full"), "sd"] == pytest.approx(acc.std(ddof=1))
    assert out.loc[("Accuracy", "Full"), "se"] == pytest.approx(acc.std(ddof=1) / np.sqrt(3))
    assert out.loc[("F1-score", "Full"), "mean"] == pytest.approx(np.mean([0.80, 1.00, 0.85]))
    assert out.loc[("Accuracy", "Full"), "n_models"] == 3  # the failed point is left out
    assert out.loc[("Accuracy", "Vanilla"), "mean"] == pytest.approx(0.99)
    assert out.loc[("Accuracy", "Vanilla"), "n_models"] == 1  # one shared BL, not one per row
    assert (out["table"] == 4).all() and (out["dataset"] == "LS").all()
    assert out.loc[("Accuracy", "Full"), "pub_mean"] == 1.0  # Table 4, LS, Full
    assert out.loc[("Accuracy", "Full"), "diff"] == pytest.approx(acc.mean() - 1.0)
    assert out.loc[("F1-score", "Full"), "pub_mean"] == 1.0  # Table 4's F1 row, compared as accuracy is
    assert out.loc[("F1-score", "Full"), "diff"] == pytest.approx(np.mean([0.80, 1.00, 0.85]) - 1.0)
    # chunks written before F1 was recorded: NaN with zero models, not an error
    old = grid_performance(df.drop(columns=["f1_test_ct", "f1_test_bl"])).set_index(["variable", "objective"])
    assert np.isnan(old.loc[("F1-score", "Full"), "mean"]) and old.loc[("F1-score", "Full"), "n_models"] == 0


def test_published_tables_agree_with_paper_settings():
    """The transcribed Table 2 and the catalog's final settings (the source of every training config) say the same,
    on the paper's nine datasets under the catalog's labels."""
    pub = pd.read_csv(PUBLISHED_DIR / "final_hyperparameters.csv").set_index("dataset")
    assert sorted(pub.index) == sorted(DATASETS[d].label for d in PAPER_DATASETS)
    for ds in PAPER_DATASETS:
        hp = DATASETS[ds].final
        row = pub.loc[DATASETS[ds].label]
        assert (row["tau"], row["nce"], row["lambda_reg"], row["batch_size"]) == (
            hp["tau"], hp["nce"], hp["lambda_reg"], hp["batch_size"]), ds
    perf = pd.read_csv(PUBLISHED_DIR / "grid_performance.csv")
    assert len(perf) == 3 * 4 * 2 * 2 and set(perf["table"]) == {4, 5, 6}


def _sidecar(tmp_path, experiment, dataset, seed, cfg, **meta):
    p = tmp_path / "models" / experiment / dataset / f"{cfg['objective']['name']}_s{seed}.pt.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    side = {"config": cfg, "seed": seed, "objective_effective": cfg["objective"], "fidelity_mode": "reference",
            "dataset": {"meta": {"n_train": 3001, "n_val": 599, "n_test": 900, **meta}},
            "constraints": {"domain": [[-4.0, -3.5], [4.0, 3.9]]}}
    p.write_text(json.dumps(side))
    return p.with_name(p.name[:-5])  # the .pt path, as the report receives it


def test_final_hyperparameters_from_sidecars(tmp_path):
    models = [_sidecar(tmp_path, "single", ds, s, model_config(ds, "single", "full", s))
              for ds in ("lin_sep", "moons") for s in (0, 1)]
    models.append(_sidecar(tmp_path, "single", "lin_sep", 0, model_config("lin_sep", "single", "vanilla", 0)))
    models.append(_sidecar(tmp_path, "mutability", "lin_sep", 0, model_config("lin_sep", "mutability", "full", 0)))
    tuned = tmp_path / "tune" / "moons" / "best.json"
    tuned.parent.mkdir(parents=True)
    tuned.write_text(json.dumps({"tau": 0.5, "lambda_reg": 0.1}))
    df = final_hyperparameters_table(models, [tuned]).set_index("dataset")
    assert list(df.index) == ["LS", "Moon"] and (df["n_seeds"] == 2).all()  # vanilla and mutability left out
    assert df.loc["Moon", "tau"] == 0.9 and df.loc["LS", "lambda_reg"] == 0.01 and df.loc["LS", "n_train"] == 3600
    assert df.loc["LS", "domain"] == "inferred per feature" and df["matches_paper"].all()
    assert (df.loc["Moon", "tuned_tau"], df.loc["Moon", "tuned_lambda_reg"]) == (0.5, 0.1)
    assert np.isnan(df.loc["LS", "tuned_tau"])
    assert df.loc["LS", "pub_n_test"] == 600 and df.loc["LS", "n_test"] == 900
    # a run whose seeds used different settings shows both and does not match the paper
    _sidecar(tmp_path, "single", "moons", 1, model_config("moons", "single", "full", 1, best={"tau": 0.75}))
    mixed = final_hyperparameters_table(models).set_index("dataset")
    assert mixed.loc["Moon", "tau"] == "0.9 / 0.75" and not mixed.loc["Moon", "matches_paper"]


def _tuning_frames():
    rng = np.random.default_rng(0)
    rows, eps = [], []
    for ds in ("moons", "adult"):
        for tau in (0.5, 0.9):
            for reg in (0.1, 0.5):
                pid = f"tau{tau:g}_reg{reg:g}"
                for lam in (0.1, 1.0, 5.0):
                    rows.append({"grid": "tune", "dataset": ds, "seed": 0, "point": pid, "baseline_key": "bl",
                                 "tau": tau, "lambda_reg": reg,
                                 "lambda_energy_eval": lam, "ip_change_pct": rng.normal(-10 * tau, 3),
                                 "cost_change_pct": 0.0, "share_mature_last": reg, "acc_test_ct": 0.9,
                                 "acc_test_bl": 0.91, "error": np.nan})
                for e in (1, 2, 3):
                    eps.append({"grid": "tune", "dataset": ds, "seed": 0, "point": pid, "epoch": e,
                                "share_mature": min(1.0, e * reg * tau)})
    return pd.DataFrame(rows), pd.DataFrame(eps)


def test_tuning_ip_figure_plots_the_csv_values():
    summary, _ = _tuning_frames()
    fig = tuning_ip_figure(summary, "tune")
    axes = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title() for a in axes] == ["Fig. 30: Adult", "Fig. 37: Moons"]  # the paper's numbers and order
    for ax, ds in zip(axes, ("adult", "moons"), strict=True):
        medians = {ln.get_gid().split(":", 1)[1]: ln.get_ydata()[0] for ln in ax.lines
                   if (ln.get_gid() or "").startswith("median:")}
        expected = summary[summary["dataset"] == ds].groupby("point")["ip_change_pct"].median()
        assert medians.keys() == set(expected.index)
        for pid, v in expected.items():
            assert medians[pid] == pytest.approx(v)
    assert paper_figure_number("tune_lr", "mature", "over") == 65 and paper_figure_number("tune", "ip", "mnist") == 36
    # a dataset outside the paper: no figure number, its label as the title (before: "" + None raised TypeError)
    other = summary[summary["dataset"] == "moons"].assign(dataset="my_data")
    assert [a.get_title() for a in tuning_ip_figure(other, "tune").axes if a.get_visible()] == ["my_data"]


def test_tuning_mature_figure_and_points():
    summary, eps = _tuning_frames()
    fig = tuning_mature_figure(eps, summary, "tune")
    ax = [a for a in fig.axes if a.get_visible()][1]
    assert ax.get_title() == "Fig. 46: Moons"
    lines = {ln.get_gid()[5:]: ln for ln in ax.lines if (ln.get_gid() or "").startswith("line:")}
    assert len(lines) == 4
    want = eps[(eps["dataset"] == "moons") & (eps["point"] == "tau0.9_reg0.5")]
    np.testing.assert_allclose(lines["tau0.9_reg0.5"].get_ydata(), want["share_mature"])
    pts = tuning_points(summary).set_index(["dataset", "point"])
    g = summary[(summary["dataset"] == "adult") & (summary["point"] == "tau0.5_reg0.1")]["ip_change_pct"]
    assert pts.loc[("adult", "tau0.5_reg0.1"), "ip_change_median"] == pytest.approx(g.median())
    assert pts.loc[("adult", "tau0.5_reg0.1"), "n_rows"] == 3


def test_write_appendix_routes_tuning_chunks(tmp_path):
    summary, eps = _tuning_frames()
    (tmp_path / "grids").mkdir()
    tune = tmp_path / "grids" / "tune.csv"
    summary.to_csv(tune, index=False)
    eps.to_csv(tmp_path / "grids" / "tune.epochs.csv", index=False)
    search = tmp_path / "grids" / "gp.csv"
    _chunk_rows("gen_params", "lin_sep", {"a": {"acc": 1.0, "f1": 1.0}}, {"acc": 1.0, "f1": 1.0},
                {"a": 1}).to_csv(search, index=False)
    assert split_tuning([search, tune]) == ([search], [tune])
    written = write_appendix(tmp_path / "report", grids=[search, tune])
    assert sorted(written["tuning"]) == sorted(["tuning/tune_ip.png", "tuning/tune_ip.pdf", "tuning/tune_mature.png",
                                                "tuning/tune_mature.pdf", "tuning/tuning_points.csv"])
    nan_ip = summary.assign(ip_change_pct=np.nan)  # a smoke-sized run without a valid CE: the mature figure only
    nan_ip.to_csv(tmp_path / "grids" / "nan.csv", index=False)
    eps.to_csv(tmp_path / "grids" / "nan.epochs.csv", index=False)
    only = write_appendix(tmp_path / "nan_report", grids=[tmp_path / "grids" / "nan.csv"])["tuning"]
    assert "tuning/tune_mature.png" in only and "tuning/tune_ip.png" not in only
    page = appendix_pages.pages(tmp_path / "nan_report")["appendix_tuning"]
    assert "Figures 39–47 of the paper" in page and "lowest median IP change" not in page
    perf = pd.read_csv(tmp_path / "report" / "grid_performance.csv")
    assert set(perf["grid"]) == {"gen_params", "tune"} and (tmp_path / "report" / "grid_performance.md").exists()
    pages = appendix_pages.pages(tmp_path / "report")
    assert "Figures 30–38 of the paper" in pages["appendix_tuning"]
    assert "Figures 48–56" not in pages["appendix_tuning"]  # no tune_lr chunks, no tune_lr figure
    assert "Table 4 of the paper" in pages["appendix_grid_performance"]
    assert "Not yet run" in pages["appendix_mnist_grid"] and "Not yet run" in pages["appendix_hyperparameters"]


def test_grid_figure_shape_and_labels():
    K, D = 10, 16
    images = np.random.default_rng(1).uniform(-1, 1, size=(K, K, D))
    table = pd.DataFrame([{"model": "CT", "factual": i, "target": j, "valid": not (i, j) == (2, 7)}
                          for i in range(K) for j in range(K) if i != j])
    fig = grid_figure(images, table, "CT")
    axes = np.array(fig.axes).reshape(K, K)
    assert [a.get_title() for a in axes[0]] == [str(j) for j in range(K)]
    assert [a.get_ylabel() for a in axes[:, 0]] == [str(i) for i in range(K)]
    for i in range(K):
        for j in range(K):
            assert axes[i, j].get_gid() == f"cell:{i}:{j}"
            np.testing.assert_allclose(axes[i, j].images[0].get_array(), images[i, j].reshape(4, 4))
    edge = {(i, j): axes[i, j].spines["top"].get_edgecolor() for i, j in ((2, 7), (3, 3), (2, 6))}
    assert edge[(2, 7)][:3] == (1.0, 0.0, 0.0) and edge[(3, 3)][:3] != edge[(2, 6)][:3]


def test_pick_factuals_needs_agreement():
    y = np.array([0, 0, 1, 1, 2])
    preds = {"BL": np.array([1, 0, 1, 1, 2]), "CT": np.array([0, 0, 0, 1, 2])}
    idx, agreed = pick_factuals(np.zeros((5, 1)), y, preds, 3)
    assert idx.tolist() == [1, 3, 4] and agreed.all()
    idx, agreed = pick_factuals(np.zeros((5, 1)), y, {"BL": np.array([0, 0, 1, 1, 1])}, 3)
    assert idx[2] == 4 and agreed.tolist() == [True, True, False]  # no agreeing image of class 2: any image of it
    with pytest.raises(ValueError, match="no image of class 3"):
        pick_factuals(np.zeros((5, 1)), y, preds, 4)


def test_grid_captions_and_workflow_feeds_tuning_to_the_report():
    assert appendix_pages.grid_caption("penalties_cost_change").startswith("Figures 18–21 of the paper")
    assert appendix_pages.grid_caption("gen_params_ip_change").startswith("Figures 6–9 of the paper")
    assert appendix_pages.grid_caption("unrelated") is None
    import yaml

    root = Path(__file__).resolve().parent.parent
    cfg = yaml.safe_load((root / "workflow" / "config" / "smoke.yaml").read_text())
    w = Workflow(cfg)
    outs = w.outputs("grid_chunk")
    tune = w.job("tune_best", {"dataset": "lin_sep"})["chunks"]
    tuned = [w.path("grid_chunk", dataset="lin_sep", **dict(zip(tune, v, strict=True)))
             for v in zip(*tune.values(), strict=True)]
    assert tuned and set(tuned) <= set(outs) and any("/grids/gen_params/" in o for o in outs)


def test_cli_appendix_updates_an_existing_report(tmp_path, capsys):
    from ctbench.cli import build_parser

    summary, eps = _tuning_frames()
    chunk = tmp_path / "tune.csv"
    summary.to_csv(chunk, index=False)
    eps.to_csv(tmp_path / "tune.epochs.csv", index=False)
    report = tmp_path / "report"
    report.mkdir()
    (report / "index.json").write_text(json.dumps({"written": {"table1": {"csv": "table1.csv"}}, "provenance": {}}))
    args = build_parser().parse_args(["appendix", "--grids", str(chunk), "--out", str(report)])
    assert args.func(args) == 0
    written = json.loads((report / "index.json").read_text())["written"]
    assert {"table1", "grid_performance", "tuning"} <= set(written) and (report / "tuning" / "tune_ip.png").exists()
    from ctbench.errors import BadFileError

    with pytest.raises(BadFileError, match="not found"):
        args = build_parser().parse_args(["appendix", "--grids", str(tmp_path / "nope.csv"), "--out", str(report)])
        args.func(args)


@pytest.mark.parametrize(("f1_ct", "expected"), [(0.99, "reproduced"), (0.96, "partly")])
def test_grid_effects_carry_f1_and_its_claim_can_fail(tmp_path, f1_ct, expected):
    """Tables 4-6 report F1 beside accuracy: grid_effects.csv has CT − BL macro F1 (f1_diff), and the ledger's F1
    claim (at most ~1 pp lower, read as 1.5) no longer holds when CT's F1 drops by 3 pp on one of four datasets."""
    from ctbench.report.claims import evaluate_claim, load_claims
    from ctbench.report.tables.grid_tables import grid_effects

    frames = [_chunk_rows("gen_params", ds, {"a": {"acc": 1.0, "f1": 1.0}}, {"acc": 1.0, "f1": 1.0}, {"a": 2})
              for ds in ("lin_sep", "circles", "moons")]
    frames.append(_chunk_rows("gen_params", "over", {"a": {"acc": 0.93, "f1": f1_ct}},
                              {"acc": 0.93, "f1": 0.99}, {"a": 2}))
    path = tmp_path / "chunk.csv"
    pd.concat(frames).to_csv(path, index=False)
    eff = grid_effects([path])
    ol = eff[(eff["dataset"] == "over") & (eff["parameter"] == "all")].iloc[0]
    assert ol["f1_diff"] == pytest.approx(f1_ct - 0.99)
    eff.to_csv(tmp_path / "grid_effects.csv", index=False)
    claim = next(c for c in load_claims(Path(__file__).resolve().parents[1] / "claims.yaml")
                 if c.id == "f1_grid_synthetic")
    assert evaluate_claim(claim, tmp_path)["verdict"] == expected
