"""The evaluation protocol on small trained models."""

from dataclasses import replace

import numpy as np
import pytest

from ctbench.api import train_from_config
from ctbench.data import load_dataset
from ctbench.evaluation.protocol import EvalProtocol, draw_individuals, draw_pairs, evaluate_counterfactuals
from ctbench.fidelity import resolve_fidelity


@pytest.fixture(scope="module")
def models():
    base = {"data": {"name": "lin_sep"}, "training": {"epochs": 3, "nce": 200}, "mutability": "protected"}
    return {"CT": train_from_config(base), "BL": train_from_config({**base, "objective": {"name": "vanilla"}})}


def test_pairs_fixed_across_runs_unless_redrawn():
    f, t = draw_pairs(3, 50, 4, False, np.random.default_rng(0))
    assert f.shape == (4, 50) and (f == f[0]).all() and (t == t[0]).all() and not (f == t).any()
    f2, _ = draw_pairs(3, 50, 4, True, np.random.default_rng(0))
    assert not (f2 == f2[0]).all()


def test_individuals_are_predicted_as_factual():
    pred = np.array([0, 1, 1, 0, 2, 2, 2])
    fact = np.array([[0, 1, 2, 0, 1, 2]] * 30)
    idx = draw_individuals(pred, fact, np.random.default_rng(0))
    assert (pred[idx] == fact).all() and set(idx[fact == 2].tolist()) == {4, 5, 6}
    assert (draw_individuals(pred, np.array([[3]]), np.random.default_rng(0)) == -1).all()


def test_without_ip_star_the_other_columns_are_bitwise_the_same(models):
    """The grid chunks' lever (issue 21): leaving IP* out changes no other number, for every model of the call
    (IP* draws from its own stream, so the next model's draws do not move either)."""
    import pandas as pd

    data = load_dataset("lin_sep")
    fid = resolve_fidelity("reference")
    prot = EvalProtocol(lambdas=(0.5, 5.0), n_individuals=15, n_runs=2)
    full = evaluate_counterfactuals(models, data.X_test, data.y_test, prot, fid, n_classes=2, dataset="lin_sep")
    lean = evaluate_counterfactuals(models, data.X_test, data.y_test, prot, fid, n_classes=2, dataset="lin_sep",
                                    with_ip_star=False)
    assert not [c for c in lean.columns if c.startswith("ip_star")]
    cols = [c for c in full.columns if not c.startswith("ip_star") and c != "seconds"]
    assert sorted(cols) == sorted(c for c in lean.columns if c != "seconds")
    assert set(full["model"]) == {"CT", "BL"}
    pd.testing.assert_frame_equal(lean[cols], full[cols], check_exact=True)


def test_protocol_output(models):
    data = load_dataset("lin_sep")
    fid = resolve_fidelity("reference")
    prot = EvalProtocol(lambdas=(0.1, 5.0), n_individuals=20, n_runs=3)
    df = evaluate_counterfactuals(models, data.X_test, data.y_test, prot, fid, n_classes=2, dataset="lin_sep")
    assert len(df) == 2 * 2 * 3 * 20
    for col in ("valid", "cost", "ip", "ip_star", "ip_star_raw", "redundancy", "objective", "run", "lambda_energy"):
        assert col in df
    assert set(df["objective"]) == {"full", "vanilla"}
    # the same label pairs in every run, individuals predicted as the factual class
    ct = df[(df.model == "CT") & (df.lambda_energy == 0.1)]
    pairs = ct.pivot(index="individual", columns="run", values="factual")
    assert (pairs.nunique(axis=1) == 1).all()
    pred = models["CT"].predict(data.X_test)
    assert (pred[ct["index"]] == ct["factual"]).all()
    # IP* is one value per (model, λ, factual, target, run) group, clamped at 0; pooled over runs on request
    assert (df.groupby(["model", "lambda_energy", "factual", "target", "run"])["ip_star"].nunique() == 1).all()
    assert (df.groupby(["model", "lambda_energy", "factual", "target"])["ip_star"].nunique() > 1).any()
    pooled = evaluate_counterfactuals(models, data.X_test, data.y_test, replace(prot, ip_star_per_run=False), fid,
                                      n_classes=2, dataset="lin_sep")
    assert (pooled.groupby(["model", "lambda_energy", "factual", "target"])["ip_star"].nunique() == 1).all()
    assert (df["ip_star"] >= 0).all() and (df["ip_star"] >= df["ip_star_raw"]).all()
    # validity agrees with p(target) ≥ 0.5 on binary data; cost is the L1 move
    assert ((df["p_target"] > 0.5) == df["valid"]).mean() > 0.99
    assert (df["cost"] >= 0).all() and df["ip"].gt(0).all()
    again = evaluate_counterfactuals(models, data.X_test, data.y_test, prot, fid, n_classes=2, dataset="lin_sep")
    assert df.drop(columns="seconds").equals(again.drop(columns="seconds"))


def test_constrained_protocol_keeps_protected_feature(models):
    data = load_dataset("lin_sep")
    prot = EvalProtocol.reference("synthetic", constrained=True, lambdas=(1.0,), n_individuals=30, n_runs=2)
    assert prot.tau == 0.5 and prot.n_individuals == 30
    df = evaluate_counterfactuals(models, data.X_test, data.y_test, prot, resolve_fidelity("reference"),
                                  n_classes=2, dataset="lin_sep")
    # with feature 0 immutable only feature 1 moves: cost = |Δx1|
    assert (df["redundancy"] >= 0.5).all()


def test_constrained_protocol_constrains_an_unconstrained_baseline():
    data = load_dataset("lin_sep")
    base = {"data": {"name": "lin_sep"}, "training": {"epochs": 2, "nce": 100}}
    bl = train_from_config({**base, "objective": {"name": "vanilla"}})  # trained without mutability
    assert bl.constraints.mutability is None
    prot = EvalProtocol.reference("synthetic", constrained=True, lambdas=(1.0,), n_individuals=30, n_runs=2)
    df = evaluate_counterfactuals({"BL": bl}, data.X_test, data.y_test, prot, resolve_fidelity("reference"),
                                  n_classes=2, mutability=[0], dataset="lin_sep")
    assert (df["redundancy"] >= 0.5).all()  # feature 0 never moves
    free = evaluate_counterfactuals({"BL": bl}, data.X_test, data.y_test, replace(prot, constrained=False),
                                    resolve_fidelity("reference"), n_classes=2, mutability=[0], dataset="lin_sep")
    assert (free["redundancy"] < 0.5).any()


def test_one_draw_per_lambda_and_rows_independent_of_other_models(models):
    """The authors ran one evaluation per λ, each with its own draw (reference §7.1); a model's rows depend on its
    name and the protocol seed only, so the same model gets the same numbers in every experiment (issue 11)."""
    data = load_dataset("lin_sep")
    fid = resolve_fidelity("reference")
    assert fid.redraw_per_lambda
    prot = EvalProtocol(lambdas=(0.1, 5.0), n_individuals=30, n_runs=2)
    kw = dict(n_classes=2, dataset="lin_sep")
    both = evaluate_counterfactuals(models, data.X_test, data.y_test, prot, fid, **kw)
    ct = both[both.model == "CT"]
    by_lam = {lam: g.sort_values(["run", "individual"])["index"].to_numpy() for lam, g in ct.groupby("lambda_energy")}
    assert (by_lam[0.1] != by_lam[5.0]).mean() > 0.5  # a fresh draw of individuals per λ
    alone = evaluate_counterfactuals({"CT": models["CT"]}, data.X_test, data.y_test, prot, fid, **kw)
    cols = ["run", "individual", "index", "factual", "target", "cost", "ip", "ip_star", "ip_star_pooled"]
    assert np.array_equal(alone[cols].to_numpy(), ct[cols].to_numpy(), equal_nan=True)
    # switch off: one draw shared by all λ's (the old behaviour), and both IP* groupings are kept
    once = evaluate_counterfactuals(models, data.X_test, data.y_test, prot, replace(fid, redraw_per_lambda=False),
                                    **kw)
    c1 = once[once.model == "CT"]
    first, last = (c1[c1.lambda_energy == lam]["index"].to_numpy() for lam in (0.1, 5.0))
    assert np.array_equal(first, last)
    assert (once["ip_star"] == once["ip_star_run"]).all()
    assert (once.groupby(["model", "lambda_energy", "factual"])["ip_star_pooled"].nunique() == 1).all()


def test_zeroed_synthetic_mutability_lambdas_are_off_by_default():
    """With λ_reg = λ_adv = 0 the logits explode and LS's constrained validity collapses (issue 11): the reference
    default trains synthetic mutability runs with the final table's λ's; the run records' setting is a switch."""
    from ctbench.paper_settings import model_config
    from ctbench.training.pipeline import effective_objective

    cfg = model_config("lin_sep", "mutability", "full")
    ref = resolve_fidelity("reference")
    assert not ref.synthetic_mutability_zero_reg_adv
    obj, notes = effective_objective(cfg, ref, "synthetic")
    assert obj.lambda_reg == cfg["objective"]["lambda_reg"] > 0 and obj.lambda_adv > 0 and not notes
    zeroed = resolve_fidelity("reference", {"synthetic_mutability_zero_reg_adv": True})
    obj, notes = effective_objective(cfg, zeroed, "synthetic")
    assert obj.lambda_reg == obj.lambda_adv == 0.0 and notes


def test_the_july_2025_preset_is_the_final_code_with_the_preprints_adversarial_label():
    from dataclasses import asdict

    ref, jul = resolve_fidelity("reference"), resolve_fidelity("reference_2025_07")
    diff = {k for k, v in asdict(jul).items() if asdict(ref)[k] != v}
    assert diff == {"mode", "adversarial_label"} and jul.adversarial_label == "predicted"
    # a workflow config may name it (the schema's enum), and a switch still overrides it
    from pathlib import Path

    import yaml

    from ctbench.workflow_check import check_schema

    root = Path(__file__).resolve().parents[1]
    cfg = yaml.safe_load((root / "workflow/config/quick.yaml").read_text())
    check_schema({**cfg, "fidelity": "reference_2025_07"}, root / "workflow/schemas/config.schema.yaml")
    with pytest.raises(Exception, match="fidelity"):
        check_schema({**cfg, "fidelity": "july"}, root / "workflow/schemas/config.schema.yaml")
    assert resolve_fidelity("reference_2025_07", {"adversarial_label": "true"}).adversarial_label == "true"
