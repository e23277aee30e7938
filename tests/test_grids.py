"""Appendix grids (Notes 3-12) and the tuning stage: definitions, ids, BL sharing, configs, a tiny chunk, selection."""

from __future__ import annotations

import argparse
import json
import re

import numpy as np
import pandas as pd
import pytest

from ctbench.cli import grid_cmds
from ctbench.config import resolve_train_config
from ctbench.experiments import grids
from ctbench.paper_settings import final_hyperparameters

SAFE = re.compile(r"^[A-Za-z0-9._-]+$")


# -- definitions -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, n_ct, n_models", [
    ("gen_params", 135, 270),      # Note 3: 3 tau x 5 lambda_egy x 3 T x 3 generators x 2 objectives
    ("penalties", 135, 270),       # Note 5: 3 lambda_adv x 3 lambda_div x 5 lambda_reg x 3 generators x 2
    ("training_params", 24, 48),   # Note 7: 2 burnin x 2 nce x 2 epochs x 3 generators x 2
    ("tune", 9, 18),               # Note 9: 3 tau x 3 lambda_reg x 2
    ("tune_lr", 9, 18),            # Note 11: 3 step sizes x 3 lambda_reg x 2
])
def test_grid_sizes_match_the_notes(name, n_ct, n_models):
    pts = grids.grid_points(name)
    assert len(pts) == n_ct == grids.grid_size(name)
    assert grids.grid_size(name, both_objectives=True) == n_models
    assert len({json.dumps(p["params"], sort_keys=True) for p in pts}) == n_ct  # every combination once


@pytest.mark.parametrize("name", sorted(grids.GRIDS))
def test_ids_unique_safe_and_readable(name):
    pts = grids.grid_points(name)
    ids = [p["id"] for p in pts]
    assert len(set(ids)) == len(ids)
    assert all(SAFE.match(i) and "/" not in i for i in ids)
    for p in pts:  # the id spells out every varied value
        for k, v in p["params"].items():
            label = grids.PARAMS[k][1]
            token = f"{label}{v:g}" if isinstance(v, float) else f"{label}{v}"
            assert token in p["id"].split("_"), (p["id"], token)
    json.dumps(pts)  # serialisable (the workflow passes points around as JSON)


def test_example_ids_and_settings():
    gp = {p["id"]: p for p in grids.grid_points("gen_params")}
    p = gp["tau0.75_egy5_T25_ecco"]
    s = p["settings"]
    assert (s["tau"], s["lambda_energy"], s["max_iter"], s["generator"]) == (0.75, 5.0, 25, "ecco")
    # not varied = Note 1 defaults
    assert (s["lambda_reg"], s["lambda_div"], s["lambda_adv"], s["nce"], s["epochs"], s["lambda_cost"]) == \
        (0.1, 0.5, 0.25, 1000, 100, 0.001)
    assert s["step_size"] is None  # the fidelity's CE step (Note 1's 0.25 was never used by the reference)
    assert "adv0.1_div0.01_reg0_revise" in {p["id"] for p in grids.grid_points("penalties")}
    assert "burnin0.5_nce100_ep50_generic" in {p["id"] for p in grids.grid_points("training_params")}
    tune = grids.grid_points("tune")
    assert {p["settings"]["generator"] for p in tune} == {"ecco"}
    assert {p["settings"]["nce"] for p in tune} == {1000}
    assert {p["settings"]["tau"] for p in tune} == {0.5, 0.75, 0.9}
    lr = grids.grid_points("tune_lr")
    assert {p["settings"]["tau"] for p in lr} == {0.5}
    assert {p["settings"]["step_size"] for p in lr} == {0.1, 0.5, 1.0}
    assert {p["settings"]["lambda_reg"] for p in lr} == {0.01, 0.1, 0.5}
    assert "lr0.5_reg0.01" in {p["id"] for p in lr}


def test_overrides_shrink_grids_and_reject_unknown_keys():
    small = grids.grid_points("gen_params", {"tau": [0.75], "generator": ["ecco", "generic"], "max_iter": 25,
                                             "datasets": ["lin_sep"], "seeds": [0], "chunk_size": 4})
    assert len(small) == 1 * 5 * 1 * 2
    assert {p["settings"]["max_iter"] for p in small} == {25}
    fixed = grids.grid_points("tune", {"tau": [0.5], "lambda_reg": [0.1], "fixed": {"epochs": 3, "nce": 50}})
    assert len(fixed) == 1 and fixed[0]["settings"]["epochs"] == 3 and fixed[0]["settings"]["nce"] == 50
    assert fixed[0]["id"] == "tau0.5_reg0.1"
    with pytest.raises(ValueError, match="not a parameter"):
        grids.grid_points("tune", {"max_iter": [5]})
    with pytest.raises(ValueError, match="varied"):
        grids.grid_points("tune", {"fixed": {"tau": 0.5}})
    with pytest.raises(ValueError, match="unknown"):
        grids.grid_points("nope")
    with pytest.raises(ValueError, match="generator"):
        grids.grid_points("gen_params", {"generator": ["wachterx"]})


def test_chunks_cover_points_in_order():
    pts = grids.grid_points("tune")
    ch = grids.chunks(pts, 4)
    assert [len(c) for c in ch] == [4, 4, 1]
    assert [p["id"] for c in ch for p in c] == [p["id"] for p in pts]
    assert grids.chunks(pts, 0) == [pts]


# -- baselines -------------------------------------------------------------------------------------------------------
def test_baseline_key_is_independent_of_generator_and_penalty_parameters():
    for name in ("gen_params", "penalties", "tune", "tune_lr"):
        assert {grids.baseline_key(name, p) for p in grids.grid_points(name)} == {"bl"}
    tp = grids.grid_points("training_params")
    keys = {p["id"]: grids.baseline_key("training_params", p) for p in tp}
    assert set(keys.values()) == {"bl_ep50", "bl_ep100"}
    # burnin, nce, generator do not change the key; epochs does
    assert keys["burnin0_nce100_ep50_ecco"] == keys["burnin0.5_nce1000_ep50_revise"] == "bl_ep50"
    assert keys["burnin0_nce100_ep50_ecco"] != keys["burnin0_nce100_ep100_ecco"]
    assert grids.baseline_keys("training_params") == ["bl_ep50", "bl_ep100"]


def test_baseline_config_shared_by_points_and_vanilla():
    pts = grids.grid_points("gen_params")
    a = grids.baseline_config("gen_params", pts[0], "lin_sep", 3)
    b = grids.baseline_config("gen_params", pts[-1], "lin_sep", 3)  # revise, tau 0.95, T 50
    assert a == b == grids.baseline_config("gen_params", "bl", "lin_sep", 3)
    assert a["objective"]["name"] == "vanilla" and a["generator"]["type"] == "ecco"  # no VAE for the BL
    tp = {p["id"]: p for p in grids.grid_points("training_params")}
    c50 = grids.baseline_config("training_params", "bl_ep50", "lin_sep", 0, epochs_override=7)
    assert c50["training"]["epochs"] == 50  # the grid's epochs win over a profile's override
    assert c50 == grids.baseline_config("training_params", tp["burnin0.5_nce100_ep50_revise"], "lin_sep", 0)
    assert grids.baseline_config("tune", "bl", "lin_sep", 0, epochs_override=7)["training"]["epochs"] == 7
    with pytest.raises(ValueError, match="baseline key"):
        grids.baseline_config("training_params", "bl_ep75", "lin_sep", 0)


# -- configs ---------------------------------------------------------------------------------------------------------
def test_point_config_places_values_and_keeps_note1_defaults():
    p = grids.find_points("gen_params", ["tau0.9_egy20_T5_generic"])[0]
    cfg = resolve_train_config(grids.point_config("gen_params", p, "adult", 2, epochs_override=4))
    assert cfg["convergence"]["tau"] == 0.9 and cfg["convergence"]["max_iter"] == 5
    assert cfg["generator"]["type"] == "generic" and cfg["generator"]["lambda_energy"] == 20.0
    assert cfg["objective"]["name"] == "full" and cfg["objective"]["lambda_reg"] == 0.1  # Note 1, not FINAL
    assert cfg["training"]["nce"] == 1000 and cfg["training"]["batch_size"] == 1000  # batch from FINAL
    assert cfg["training"]["epochs"] == 4 and cfg["seed"] == 2 and cfg["data"]["name"] == "adult"
    pen = grids.find_points("penalties", ["adv1_div0.01_reg0.5_ecco"])[0]
    c = grids.point_config("penalties", pen, "lin_sep", overrides={"vae.epochs": 2})
    assert (c["objective"]["lambda_adv"], c["objective"]["lambda_div"], c["objective"]["lambda_reg"]) == (1.0, 0.01,
                                                                                                          0.5)
    assert c["convergence"]["tau"] == 0.75 and c["training"]["batch_size"] == 30 and c["vae"]["epochs"] == 2
    tp = grids.find_points("training_params", ["burnin0.5_nce100_ep50_ecco"])[0]
    c = grids.point_config("training_params", tp, "lin_sep", epochs_override=3)
    assert (c["training"]["burnin"], c["training"]["nce"], c["training"]["epochs"]) == (0.5, 100, 50)


def test_tune_lr_step_size_follows_fidelity():
    p = grids.find_points("tune_lr", ["lr1_reg0.01"])[0]
    ref = grids.point_config("tune_lr", p, "lin_sep", fidelity="reference")
    assert ref["generator"].get("step_size") is None  # reference: the bug, the fidelity's 0.1 is used
    assert ref["convergence"]["tau"] == 0.5 and ref["objective"]["lambda_reg"] == 0.01
    assert grids.point_config("tune_lr", p, "lin_sep", fidelity="paper")["generator"]["step_size"] == 1.0
    assert grids.point_config("tune_lr", p, "lin_sep", apply_step_size=True)["generator"]["step_size"] == 1.0
    assert grids.point_config("tune_lr", p, "lin_sep", fidelity="paper",
                              apply_step_size=False)["generator"].get("step_size") is None
    other = grids.grid_points("tune")[0]  # grids that do not vary the step never set it
    assert grids.point_config("tune", other, "lin_sep", fidelity="paper")["generator"].get("step_size") is None
    fixed = grids.grid_points("tune", {"fixed": {"step_size": 0.3}})[0]
    assert grids.point_config("tune", fixed, "lin_sep", fidelity="paper")["generator"]["step_size"] == 0.3


# -- a tiny chunk end to end -----------------------------------------------------------------------------------------
EVAL = {"n_runs": 2, "n_individuals": 12, "lambdas": [0.5, 5.0]}
POINTS = ["tau0.75_egy5_T25_ecco", "tau0.9_egy0.5_T5_generic"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ctbench")
    grid_cmds.add_cli(parser.add_subparsers(dest="command", required=True))
    return parser


@pytest.fixture(scope="module")
def chunk(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grid")
    parser = _parser()
    bl = tmp / "bl.pt"
    args = parser.parse_args(["grid", "baseline", "--grid", "gen_params", "--key", "bl", "--dataset", "lin_sep",
                              "--seed", "0", "--epochs", "2", "--out", str(bl), "--quiet"])
    assert args.func(args) == 0
    out = tmp / "chunk.csv"
    df = grids.run_chunk("gen_params", "lin_sep", POINTS, bl, out, EVAL, 0, epochs_override=2,
                         save_models_dir=tmp / "models")
    return {"tmp": tmp, "bl": bl, "out": out, "df": df, "parser": parser}


def test_run_chunk_writes_expected_rows_and_columns(chunk):
    df = pd.read_csv(chunk["out"])
    assert list(df.columns) == grids.SUMMARY_COLUMNS
    assert len(df) == len(POINTS) * len(EVAL["lambdas"])
    assert list(df["point"].unique()) == POINTS
    assert set(df["lambda_energy_eval"]) == {0.5, 5.0}
    assert (df["grid"] == "gen_params").all() and (df["dataset"] == "lin_sep").all()
    assert (df["epochs"] == 2).all() and (df["baseline_key"] == "bl").all()
    g = df.set_index("point")
    assert g.loc[POINTS[1], "generator"].tolist() == ["generic"] * 2 and (g.loc[POINTS[1], "max_iter"] == 5).all()
    assert (df["step_size_effective"] == 0.1).all()  # reference fidelity
    assert df[["ip_ct", "ip_bl", "cost_ct", "cost_bl", "validity_ct", "validity_bl"]].notna().all().all()
    assert ((df["n_ct"] == 24) & (df["n_bl"] == 24)).all()
    # the % change is consistent with the means in the same row
    for m in ("ip", "cost"):
        np.testing.assert_allclose(df[f"{m}_change_pct"], 100 * (df[f"{m}_ct"] - df[f"{m}_bl"]) / df[f"{m}_bl"],
                                   rtol=1e-9)
    # the shared BL gives identical numbers for every point (same protocol seed)
    for lam, d in df.groupby("lambda_energy_eval"):
        assert d["ip_bl"].nunique() == 1 and d["cost_bl"].nunique() == 1, lam


def test_run_chunk_means_match_an_independent_evaluation(chunk):
    """Recompute the CT/BL means of one point from the saved models with the plain protocol."""
    from ctbench.api import load_model
    from ctbench.data import load_dataset
    from ctbench.evaluation.protocol import evaluate_counterfactuals

    bl = load_model(chunk["bl"])
    ct = load_model(chunk["tmp"] / "models" / f"{POINTS[0]}.pt")
    data = load_dataset("lin_sep", fidelity=bl.fidelity)
    X = np.vstack([data.X_train, data.X_val])
    y = np.concatenate([data.y_train, data.y_val])
    # BL once, each CT alone with the same protocol seed (common random numbers across a grid's models)
    ev = pd.concat([evaluate_counterfactuals({name: m}, X, y, grids.grid_protocol(EVAL), bl.fidelity, n_classes=2,
                                             dataset="lin_sep") for name, m in (("BL", bl), ("CT", ct))])
    assert len(X) == 3600  # training data = train + validation (§7.1)
    df = pd.read_csv(chunk["out"])
    row = df[(df["point"] == POINTS[0]) & (df["lambda_energy_eval"] == 5.0)].iloc[0]
    d = ev[ev["lambda_energy"] == 5.0]
    for tag, name in (("ct", "CT"), ("bl", "BL")):
        dm = d[(d["model"] == name) & d["valid"].astype(bool)]
        assert row[f"ip_{tag}"] == pytest.approx(dm["ip"].mean(), rel=1e-6)
        assert row[f"cost_{tag}"] == pytest.approx(dm["cost"].mean(), rel=1e-6)
        assert row[f"validity_{tag}"] == pytest.approx(d.loc[d["model"] == name, "valid"].mean())
    assert row["acc_test_ct"] == pytest.approx(ct.meta["acc_test"])
    assert row["acc_test_bl"] == pytest.approx(bl.meta["acc_test"])
    from ctbench.evaluation.robustness import macro_f1  # macro F1 on the test set (appendix Tables 4-6)

    for tag, m in (("ct", ct), ("bl", bl)):
        assert row[f"f1_test_{tag}"] == pytest.approx(macro_f1(m.model, data.X_test, data.y_test, n_classes=2))
    assert 0.0 < row["f1_test_ct"] <= 1.0


def test_run_chunk_summary_equals_the_full_evaluations_bit_for_bit(chunk):
    """The chunk leaves IP* out of its evaluations (issue 21): its summary is still, bit for bit, that of the
    full protocol (IP* included) on the saved models."""
    from ctbench.api import load_model
    from ctbench.data import load_dataset
    from ctbench.evaluation.protocol import evaluate_counterfactuals

    bl = load_model(chunk["bl"])
    data = load_dataset("lin_sep", fidelity=bl.fidelity)
    X, y = np.vstack([data.X_train, data.X_val]), np.concatenate([data.y_train, data.y_val])

    def full(name, m):
        ev = evaluate_counterfactuals({name: m}, X, y, grids.grid_protocol(EVAL), bl.fidelity, n_classes=2,
                                      dataset="lin_sep")
        assert "ip_star" in ev
        return ev

    ev_bl = full("BL", bl)
    df = pd.read_csv(chunk["out"])
    cols = [c for c in grids.SUMMARY_COLUMNS if c.split("_")[0] in ("n", "validity", "ip", "cost")]
    for point in POINTS:
        ev = pd.concat([ev_bl, full("CT", load_model(chunk["tmp"] / "models" / f"{point}.pt"))], ignore_index=True)
        want = pd.DataFrame(grids.summarise_point(ev, {}))[cols]
        got = df[df["point"] == point][cols].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want, check_exact=True, check_dtype=False)


def test_run_chunk_epoch_log_and_sidecar(chunk):
    ep = pd.read_csv(grids.epochs_path(chunk["out"]))
    assert grids.epochs_path(chunk["out"]).name == "chunk.epochs.csv"
    assert list(ep.columns) == grids.EPOCH_COLUMNS
    assert len(ep) == len(POINTS) * 2 and sorted(ep["epoch"].unique()) == [1, 2]
    assert ep["share_mature"].between(0, 1).all() and (ep["mean_steps"] >= 0).all()
    side = json.loads((chunk["tmp"] / "chunk.csv.json").read_text())
    assert side["kind"] == "grid_chunk" and side["points"] == POINTS and side["protocol"]["split"] == "train"
    assert side["protocol"]["tau"] == 0.95 and side["protocol"]["max_iter"] == 50 and side["protocol"]["n_runs"] == 2
    assert "git_commit" in side["provenance"] and side["configs"][POINTS[0]]["training"]["epochs"] == 2
    assert not list(chunk["tmp"].glob(".*.tmp"))  # atomic writes leave no temporaries


def test_run_chunk_rejects_mismatched_baseline(chunk, tmp_path):
    with pytest.raises(ValueError, match="fidelity"):
        grids.run_chunk("gen_params", "lin_sep", POINTS[:1], chunk["bl"], tmp_path / "x.csv", EVAL, fidelity="paper")
    with pytest.raises(ValueError, match="trained on"):
        grids.run_chunk("gen_params", "moons", POINTS[:1], chunk["bl"], tmp_path / "x.csv", EVAL)
    assert not (tmp_path / "x.csv").exists()


def test_cli_points_and_figures(chunk, capsys):
    parser = chunk["parser"]
    args = parser.parse_args(["grid", "points", "--grid", "training_params", "--chunk-size", "5",
                              "--overrides", json.dumps({"generator": ["ecco"]})])
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_points"] == 8 and out["n_models"] == 16 and out["baseline_keys"] == ["bl_ep50", "bl_ep100"]
    assert [len(c) for c in out["chunks"]] == [5, 3]
    args = parser.parse_args(["grid", "points", "--grid", "tune", "--ids-only"])
    assert args.func(args) == 0
    assert len(json.loads(capsys.readouterr().out)) == 9
    fig_dir = chunk["tmp"] / "fig"
    args = parser.parse_args(["grid", "figures", str(chunk["out"]), "--out", str(fig_dir)])
    assert args.func(args) == 0
    names = sorted(p.name for p in fig_dir.iterdir())
    assert names == sorted(f"gen_params_{k}.{e}" for k in ("ip_change", "cost_change", "mature")
                           for e in ("png", "pdf"))
    assert all((fig_dir / n).stat().st_size > 1000 for n in names)


# -- tuning selection ------------------------------------------------------------------------------------------------
def _tune_rows(dataset="lin_sep"):
    """Hand-made tune/tune_lr rows: (tau, lambda_reg) -> (ip change per lambda_eval, cost change, CT accuracy)."""
    spec = {  # BL accuracy 0.95
        (0.5, 0.1): ([-30.0, -34.0], 5.0, 0.90),    # largest IP reduction but loses 5 pp -> not eligible
        (0.75, 0.25): ([-20.0, -22.0], 3.0, 0.945),  # within 1 pp -> best eligible (mean -21)
        (0.9, 0.5): ([-21.0, -21.0], 4.0, 0.95),     # same mean IP (-21), higher cost -> loses the tie
        (0.5, 0.25): ([-5.0, -5.0], 0.0, 0.96),
    }
    rows = []
    for (tau, reg), (ips, cost, acc) in spec.items():
        for lam, ip in zip([0.5, 5.0], ips, strict=True):
            rows.append({"grid": "tune", "dataset": dataset, "point": f"tau{tau:g}_reg{reg:g}", "tau": tau,
                         "lambda_reg": reg, "lambda_energy_eval": lam, "ip_change_pct": ip, "cost_change_pct": cost,
                         "acc_test_ct": acc, "acc_test_bl": 0.95, "validity_ct": 1.0})
    # tune_lr: the same (0.5, 0.01) at three nominal step sizes; averaged together
    for lr, ip in ((0.1, -25.0), (0.5, -26.0), (1.0, -24.0)):
        rows.append({"grid": "tune_lr", "dataset": dataset, "point": f"lr{lr:g}_reg0.01", "tau": 0.5,
                     "lambda_reg": 0.01, "lambda_energy_eval": 1.0, "ip_change_pct": ip, "cost_change_pct": 1.0,
                     "acc_test_ct": 0.95, "acc_test_bl": 0.95, "validity_ct": 1.0})
    return pd.DataFrame(rows)


def test_select_best_rule(tmp_path):
    df = _tune_rows()
    other = _tune_rows("moons").assign(ip_change_pct=-99.0)  # another dataset must not leak in
    p = tmp_path / "tune.csv"
    pd.concat([df, other]).to_csv(p, index=False)
    sel = grids.select_best([p], "lin_sep")
    assert sel["best"] == {"tau": 0.5, "lambda_reg": 0.01} and sel["eligible"]  # tune_lr mean -25 wins
    only_tune = grids.select_best([p], "lin_sep", grids=("tune",))
    assert only_tune["best"] == {"tau": 0.75, "lambda_reg": 0.25}  # -21 at lower cost; (0.5, 0.1) loses 5 pp
    loose = grids.select_best([p], "lin_sep", grids=("tune",), max_acc_drop=0.06)
    assert loose["best"] == {"tau": 0.5, "lambda_reg": 0.1}
    cand = {(c["tau"], c["lambda_reg"]): c for c in sel["candidates"]}
    assert cand[(0.5, 0.01)]["ip_change_pct"] == pytest.approx(-25.0) and cand[(0.5, 0.01)]["n_rows"] == 3
    assert not cand[(0.5, 0.1)]["eligible"]
    # nothing within the margin: fall back to the most accurate pair
    bad = df.assign(acc_test_ct=df["acc_test_ct"] - 0.2)
    fb = grids.select_best(bad, "lin_sep", grids=("tune",))
    assert not fb["eligible"] and fb["best"] == {"tau": 0.5, "lambda_reg": 0.25}
    with pytest.raises(ValueError, match="no rows"):
        grids.select_best(df, "circles")


def test_write_best_and_cli(tmp_path, capsys):
    p = tmp_path / "tune.csv"
    _tune_rows().to_csv(p, index=False)
    out = tmp_path / "best.json"
    args = _parser().parse_args(["tune", "select", str(p), "--dataset", "lin_sep", "--grids", "tune",
                                 "--out", str(out)])
    assert args.func(args) == 0
    best = json.loads(out.read_text())
    assert best == {"tau": 0.75, "lambda_reg": 0.25}
    hp = final_hyperparameters("lin_sep", best)  # the final stage accepts it as is
    assert hp["tau"] == 0.75 and hp["lambda_reg"] == 0.25 and hp["batch_size"] == 30
    side = json.loads((tmp_path / "best.json.json").read_text())
    assert side["inputs"] == [str(p)] and "rule" in side and "provenance" in side
    assert "tau=0.75" in capsys.readouterr().out
