"""The consistency study (Black et al. 2022): invalidation rate, retraining populations, bad input, the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from ctbench.experiments.consistency import jobs, resolve_settings, run, write
from ctbench.experiments.invalidation import (
    check_loo,
    invalidation_rate,
    local_lipschitz,
    r_squared,
    retraining_members,
    retraining_plan,
    stacked_labels,
)
from ctbench.models import LinearModel, build_model
from ctbench.training import Objective, TrainParams
from ctbench.training.population import Member, train_population

ROOT = Path(__file__).resolve().parent.parent
SMALL_DATA = {"n_draws": 600, "n_train": 200, "n_val": 0, "n_test": 100}


def _threshold_model(t: float) -> LinearModel:
    """1-D model with logits [0, x − t]: label 1 iff x > t."""
    m = LinearModel(1, 2)
    with torch.no_grad():
        m[0].weight.copy_(torch.tensor([[0.0], [1.0]]))
        m[0].bias.copy_(torch.tensor([0.0, -t]))
    return m


def test_invalidation_rate_against_a_hand_computed_case():
    base = _threshold_model(0.5)
    retrained = [_threshold_model(t) for t in (0.0, 1.0, 2.0)]
    x = torch.tensor([[0.7], [1.5], [2.5], [-1.0], [0.2]])
    base_label = base(x).argmax(1)
    assert base_label.tolist() == [1, 1, 1, 0, 0]
    labels = stacked_labels(retrained, x)          # one stacked forward of the three models
    assert labels.tolist() == [[1, 1, 1, 0, 1], [0, 1, 1, 0, 0], [0, 0, 1, 0, 0]]
    # x=0.7: models t=1 and t=2 say 0 (2 of 3); x=1.5: t=2 (1/3); 2.5: none; -1: none; 0.2: t=0 says 1 (1/3)
    np.testing.assert_allclose(invalidation_rate(labels, base_label).numpy(), [2 / 3, 1 / 3, 0, 0, 1 / 3])
    assert torch.isnan(invalidation_rate(labels[:0], base_label)).all()


def test_r_squared_and_local_lipschitz():
    x = np.arange(10.0)
    assert r_squared(x, 2 * x + 1) == pytest.approx(1.0)
    assert np.isnan(r_squared(x, np.ones(10)))
    # Pearson's r² (scipy's linregress, numpy's corrcoef) to round-off; the same bits in any row order (exact sums,
    # no BLAS kernel chosen by the CPU), which corrcoef does not promise
    rng = np.random.default_rng(3)
    a = rng.normal(size=1601)
    b = 0.3 * a + rng.normal(size=1601)
    assert r_squared(a, b) == pytest.approx(np.corrcoef(a, b)[0, 1] ** 2, rel=1e-12)
    assert r_squared(a, np.append(b[:-1], np.nan)) == pytest.approx(np.corrcoef(a[:-1], b[:-1])[0, 1] ** 2, rel=1e-12)
    for _ in range(5):
        perm = rng.permutation(1601)
        assert r_squared(a[perm], b[perm]) == r_squared(a, b)
    assert np.isnan(r_squared(np.array([0.0, 1e-200, 2e-200]), np.array([1.0, 2.0, 3.0])))  # squares underflow
    m = _threshold_model(0.0)
    pts = torch.tensor([[0.0], [5.0]])
    lip = local_lipschitz(m, pts, torch.tensor([1, 1]), radius=1e-3, n_samples=8)
    # d/dx sigmoid(x) = 1/4 at 0, ~0 far out: flat regions have a small Lipschitz estimate
    assert lip[0] == pytest.approx(0.25, abs=1e-3) and lip[1] < 0.01
    with pytest.raises(ValueError, match="lipschitz_radius"):
        local_lipschitz(m, pts, torch.tensor([1, 1]), radius=0.0)


def _make(model_seed: int) -> Member:
    model = build_model({"type": "mlp", "hidden": [8, 4]}, 2, 2, seed=model_seed)
    return Member(model, Objective("vanilla"), TrainParams(epochs=2, batch_size=16, nce=None, seed=model_seed))


def test_loo_and_rs_members():
    n_train, n = 50, 6
    plan = retraining_plan(3, n, n_train)
    members = retraining_members(_make(3), _make, plan, n_train)
    base, rs, loo = members[0], members[1:n + 1], members[n + 1:]
    assert base.name == "base" and len(rs) == len(loo) == n
    left_out = []
    for m in loo:
        rows = np.asarray(m.rows)
        missing = sorted(set(range(n_train)) - set(rows.tolist()))
        assert len(rows) == n_train - 1 and len(set(rows.tolist())) == n_train - 1 and len(missing) == 1
        left_out += missing
        assert m.params == base.params                                  # same seed: same batch stream
        for p, q in zip(m.model.parameters(), base.model.parameters(), strict=True):
            assert torch.equal(p, q)                                    # same initial weights
    assert len(set(left_out)) == n and left_out == list(plan.loo_rows)  # distinct points, one per member
    for m, s in zip(rs, plan.rs_seeds, strict=True):
        assert s == 3 * 1000 + rs.index(m) + 1 and m.rows is None
        assert replace(m.params, seed=base.params.seed) == base.params  # only the seed differs
        assert m.objective == base.objective
        fresh = build_model({"type": "mlp", "hidden": [8, 4]}, 2, 2, seed=s)
        for p, q in zip(m.model.parameters(), fresh.parameters(), strict=True):
            assert torch.equal(p, q)                                    # the seed's initial weights
    assert not torch.equal(next(rs[0].model.parameters()), next(base.model.parameters()))
    with pytest.raises(ValueError, match="differs from the base in more than its seed"):
        retraining_members(_make(3), lambda s: replace(_make(s), params=replace(_make(s).params, lr=0.1)), plan,
                           n_train)


def test_loo_population_trains_without_exactly_its_point():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    plan = retraining_plan(0, 3, 40, ("loo",))
    members = retraining_members(_make(0), _make, plan, 40)
    res = train_population(members, X, y, n_classes=2, log_accuracy=False)
    assert all(r.ok for r in res) and res[0].log["acc_train"].isna().all()
    # member i equals a single population trained on the same rows (the left-out point never seen)
    for m, r in zip(members[1:], res[1:], strict=True):
        alone = train_population([Member(build_model({"type": "mlp", "hidden": [8, 4]}, 2, 2, seed=0),
                                         Objective("vanilla"), m.params, name="x")], X[m.rows], y[m.rows])[0]
        for p, q in zip(r.model.parameters(), alone.model.parameters(), strict=True):
            torch.testing.assert_close(p, q, rtol=0, atol=1e-5)


@pytest.mark.parametrize("settings,needle", [
    ({"methods": ["min_l2", "min_l3"]}, r"consistency\.methods: unknown method\(s\) \['min_l3'\]; allowed"),
    ({"sns": {"radius": 0}}, r"consistency\.sns\.radius: 0 must be a number > 0 \(allowed range: \(0, inf\)\)"),
    ({"sns": {"radius": -1.5}}, r"consistency\.sns\.radius: -1\.5"),
    ({"n_models": 0}, r"consistency\.n_models: 0 must be an integer >= 1"),
    ({"n_modles": 3}, r"unknown setting\(s\) \['n_modles'\]"),
    ({"pgd_step_rule": "foolbox"}, r"consistency\.pgd_step_rule: 'foolbox'; allowed: null, paper, code"),
    ({"search_box": "global"}, r"consistency\.search_box: 'global'; allowed: null, feature, scalar"),
])
def test_bad_settings_stop_before_anything_runs(settings, needle, monkeypatch):
    import ctbench.data

    def boom(*a, **k):
        raise AssertionError("no data may be loaded (nor a model trained) with a bad setting")
    monkeypatch.setattr(ctbench.data, "load_dataset", boom)
    with pytest.raises(ValueError, match=needle):
        run({"part": "black2022", "dataset": "moons", "settings": settings})


def test_too_few_points_for_loo_stops_before_training(monkeypatch):
    import ctbench.training.population as pop

    def boom(*a, **k):
        raise AssertionError("training started")
    monkeypatch.setattr(pop, "train_population", boom)
    with pytest.raises(ValueError, match=r"consistency\.n_models: 250 leave-one-out models need 250 distinct "
                                         r"training points, but the training set has 200; allowed range 1\.\.200"):
        run({"part": "black2022", "dataset": "moons", "settings": {"n_models": 250, "data_params": SMALL_DATA}})
    with pytest.raises(ValueError, match=r"allowed range 1\.\.7"):
        check_loo(8, 7)


def test_cli_names_the_setting(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "ctbench", "consistency", "--dataset", "moons", "--settings",
                        json.dumps({"sns": {"radius": -1}}), "--out", str(tmp_path / "x.csv")], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 2 and "consistency.sns.radius: -1" in p.stderr and "(0, inf)" in p.stderr
    assert not (tmp_path / "x.csv").exists()


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cons")
    black = {"part": "black2022", "dataset": "moons", "seed": 0,
             "settings": {"methods": ["min_eps_pgd", "min_eps_pgd+sns", "min_l2"], "n_models": 3, "epochs": 3,
                          "n_factuals": 25, "data_params": SMALL_DATA}}
    # the symmetric centres (blob_centers "calibrated"): two epochs on them give valid counterfactuals of CT and BL in
    # both seeds, which the delta table below needs (this test is about the tables, not about LS)
    ct = {"part": "ct", "dataset": "lin_sep", "seed": 0,
          "settings": {"n_models": 2, "epochs": 2, "n_factuals": 20,
                       "data_params": {**SMALL_DATA, "centers": [[-2.0, -2.0], [2.0, 2.0]]}}}
    files = []
    for job, name in ((black, "black.csv.gz"), (ct, "ct_s0.csv.gz"), ({**ct, "seed": 1}, "ct_s1.csv.gz")):
        files.append(write(run(job), d / name))
    return d, files


def test_a_tiny_run_has_one_row_per_method_and_factual(tiny_runs):
    d, files = tiny_runs
    df = pd.read_csv(files[0])
    meta = json.loads(Path(f"{files[0]}.json").read_text())
    assert len(df) == 3 * 25 and set(df["method"]) == {"min_eps_pgd", "min_eps_pgd+sns", "min_l2"}
    assert df["iv_rs"].between(0, 1).all() and df["iv_loo"].between(0, 1).all()
    assert (df["n_rs"] == 3).all() and (df["n_loo"] == 3).all()
    assert meta["provenance"]["ctbench_version"] and meta["cpu_seconds"]["train"] > 0 and len(meta["loo_rows"]) == 3
    assert meta["data_scaling"] == "loader"  # which preparation ran is recorded (moons has only its own)
    assert meta["architecture"]["hidden"] == [32, 16] and meta["models"]["base"]["failed"] == []
    sns, pgd = df[df["method"] == "min_eps_pgd+sns"], df[df["method"] == "min_eps_pgd"]
    assert (sns["valid"].to_numpy() == pgd["valid"].to_numpy()).all()  # SNS keeps the label; failures stay failed
    assert sns.loc[sns["valid"], "confidence"].mean() >= pgd.loc[pgd["valid"], "confidence"].mean()
    ct = pd.read_csv(files[1])
    assert set(ct["model"]) == {"CT", "BL"} and set(ct["method"]) == {"ecco", "ecco+sns"}


def test_report_tables_and_claims(tiny_runs, tmp_path):
    from ctbench.report.book.consistency_pages import pages
    from ctbench.report.claims import evaluate_claims
    from ctbench.report.tables.consistency_tables import write_consistency

    d, files = tiny_runs
    written = write_consistency(tmp_path, files)
    assert {"consistency_table1", "consistency_r2", "consistency_ct", "consistency_ct_delta",
            "consistency_models", "consistency_iv"} <= set(written)
    t1 = pd.read_csv(tmp_path / "consistency_table1.csv")
    assert {"Min eps PGD", "Min eps PGD + SNS", "Min L2"} == set(t1["method"])
    assert {"pub_iv_loo", "pub_iv_rs", "pub_cost_l2"} <= set(t1.columns)
    ctd = pd.read_csv(tmp_path / "consistency_ct_delta.csv")
    assert (ctd["n_seeds"] == 2).all() and ctd["delta_iv_rs_lb"].notna().any()
    # synthetic data are not Black et al.'s datasets: their claims stay "not yet run"
    v = evaluate_claims(ROOT / "claims.yaml", tmp_path)
    b22 = v[v["claim"].str.startswith("b22_")]
    assert len(b22) >= 5 and (b22["verdict"] == "not yet run").all() and (b22["version"] == "black2022").all()
    book = pages(tmp_path)
    assert "Min eps PGD" in book["consistency_table1"] and "no data" in book["consistency_table1"]
    assert "significantly more consistent" in book["consistency_answer"]
    assert not any("Not yet run" in book[k] for k in ("consistency_table1_text", "consistency_answer_text"))


def test_black2022_claims_against_a_report(tmp_path):
    from ctbench.report.claims import evaluate_claims

    ds = ["German Credit", "Seizure", "CTG", "HELOC", "Taiwanese Credit"]
    rows = [{"method": m, "dataset": d, "iv_loo": lo, "iv_rs": rs, "sns": "SNS" in m}
            for d in ds for m, lo, rs in (("Min L1", .4, .5), ("Min L1 + SNS", 0.0, .05), ("Min L2", .4, .6),
                                          ("Min L2 + SNS", .01, .05), ("Min eps PGD", .3, .5),
                                          ("Min eps PGD + SNS", 0.08 if d == "Seizure" else 0.0, .1),
                                          ("Looveren et al.", .2, .3), ("Pawelczyk et al.", .1, .2))]
    pd.DataFrame(rows).to_csv(tmp_path / "consistency_table1.csv", index=False)
    pd.DataFrame({"dataset": ds, "r2": [.05, .3, .02, .1, .05]}).to_csv(tmp_path / "consistency_r2.csv", index=False)
    v = evaluate_claims(ROOT / "claims.yaml", tmp_path).set_index("claim")
    assert v.loc["b22_sns_loo_at_most_005", "verdict"] == "partly"          # Seizure 0.08 > 0.05
    assert "holds on 4 of 5" in v.loc["b22_sns_loo_at_most_005", "note"]
    assert v.loc["b22_cost_r2_at_most_017", "verdict"] == "partly"          # Seizure 0.3
    assert v.loc["b22_rs_more_than_loo", "verdict"] == "reproduced"
    assert v.loc["b22_min_l2_rs_mean", "verdict"] == "reproduced"           # 0.6 vs 0.63
    assert v.loc["b22_sns_lowers_every_pair", "verdict"] == "not yet run"   # no pairs file
    assert v.loc["b22_rs_more_than_loo", "verdict_black2022"] == "reproduced"
    assert v.loc["b22_rs_more_than_loo", "verdict_preprint_2025_07"] == ""


def test_workflow_jobs_and_dry_run(tmp_path):
    import yaml

    cfg = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())
    js = jobs(cfg)
    black = [j for j in js if j["part"] == "black2022"]
    assert len(black) == 5 and all(j["settings"]["n_models"] == 100 for j in black)
    assert {j["dataset"] for j in js if j["part"] == "ct"} >= {"lin_sep", "circles", "moons", "over", "credit_default"}
    for j in js:
        resolve_settings(j["settings"], j["part"])                  # every shipped job has valid settings
    smoke = yaml.safe_load((ROOT / "workflow/config/smoke.yaml").read_text())
    assert all(j["settings"]["n_models"] <= 5 for j in jobs(smoke))
    snakemake = Path(sys.executable).with_name("snakemake")
    if not snakemake.exists():
        pytest.skip("snakemake is not installed next to this Python")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([str(snakemake), "-n", "--cores", "1", "--configfile", "workflow/config/smoke.yaml",
                        "--config", f"results={tmp_path}/smoke"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    out = p.stdout + p.stderr
    assert "rule consistency:" in out and "consistency/black2022/cardiotocography_s0.csv.gz" in out
    assert "consistency/ct/lin_sep_s1.csv.gz" in out
    # smoke's `consistency.shards: {cardiotocography: 2}`: two shard jobs feed the merge; the CT part stays one job
    assert "rule consistency_shard:" in out and "black2022/cardiotocography_s0_k1of2.pt" in out
    assert "consistency_shards/ct/" not in out


def test_mlp_hidden_widths():
    m = build_model({"type": "mlp", "hidden": [6, 5, 4]}, 3, 2, seed=0)
    assert [lin.out_features for lin in m if isinstance(lin, torch.nn.Linear)] == [6, 5, 4, 2]
    with pytest.raises(ValueError, match="layers = 1 or 3"):
        build_model({"type": "mlp", "hidden": [6, 5, 4], "layers": 2}, 3, 2)


def test_ct_tables_without_a_valid_counterfactual_give_empty_delta_table_not_a_crash():
    """A CT × consistency job whose counterfactuals are all invalid (3 epochs, one seed) has no per-seed CT − BL
    difference: the delta table is empty (the report used to stop with KeyError: 'method')."""
    from ctbench.report.tables.consistency_tables import ct_tables

    rows = [{"part": "ct", "dataset": "lin_sep", "method": "ecco", "model": m, "seed": 0, "valid": False,
             "iv_loo": np.nan, "iv_rs": np.nan, "cost_l2": np.nan} for m in ("CT", "BL") for _ in range(3)]
    summary, deltas = ct_tables(pd.DataFrame(rows))
    assert len(summary) == 2 and (summary["validity"] == 0).all()
    assert deltas.empty


def test_pgd_step_rule_switch_reaches_the_search_and_defaults_to_the_authors_code():
    """``consistency.pgd_step_rule`` (issue 25: the authors' foolbox call steps 2·ε²/steps, App. B.3's text 2·ε/steps)
    goes from the config block through the settings to Min-ε PGD; without it the run's fidelity decides: the
    authors' code (``code``) under ``reference``, the text (``paper``) under ``paper``."""
    from ctbench.experiments.consistency import pgd_step_rule
    from ctbench.experiments.consistency_search import SearchContext

    assert resolve_settings({})["pgd_step_rule"] is None
    assert pgd_step_rule(resolve_settings({})) == "code"
    assert pgd_step_rule(resolve_settings({"fidelity": "reference_2025_07"})) == "code"
    assert pgd_step_rule(resolve_settings({"fidelity": "paper"})) == "paper"
    assert pgd_step_rule(resolve_settings({"fidelity": "paper", "pgd_step_rule": "code"})) == "code"
    assert pgd_step_rule(resolve_settings({"pgd_step_rule": "paper"})) == "paper"
    gen, _ = SearchContext(2.0, 0.3, pgd_step_rule="code").base_generator("min_eps_pgd")
    assert gen.step_rule == "code"
    cfg = {"datasets": ["moons"], "consistency": {"enabled": True, "datasets": ["moons"], "pgd_step_rule": "paper"}}
    assert jobs(cfg)[0]["settings"]["pgd_step_rule"] == "paper"
    del cfg["consistency"]["pgd_step_rule"]
    assert "pgd_step_rule" not in jobs(cfg)[0]["settings"]   # the job's settings leave it to the fidelity


def test_sns_norm_eps_defaults_to_the_authors_code_reaches_sns_and_is_recorded(monkeypatch):
    """``consistency.sns.norm_eps`` (SNS's step η·g/(‖g‖ + ε); the authors' code: Keras' epsilon 1e-7) defaults to
    1e-7, is refused when negative or not a number, reaches the SNS refinement and is recorded in the settings."""
    import ctbench.experiments.consistency_search as cs

    assert resolve_settings({})["sns"]["norm_eps"] == 1e-7
    assert resolve_settings({"sns": {"norm_eps": 0}})["sns"]["norm_eps"] == 0
    for bad in (-1e-7, "1e-7", True, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="consistency.sns.norm_eps"):
            resolve_settings({"sns": {"norm_eps": bad}})
    seen = []
    real = cs.SNSGenerator

    def spy(*args, **kw):
        gen = real(*args, **kw)
        seen.append(gen.norm_eps)
        return gen

    monkeypatch.setattr(cs, "SNSGenerator", spy)
    for eps in (0.0, 1e-7):
        df = run({"part": "black2022", "dataset": "moons", "settings": {
            "methods": ["min_eps_pgd", "min_eps_pgd+sns"], "n_models": 2, "epochs": 2, "sns": {"norm_eps": eps},
            "data_params": SMALL_DATA}})
        assert df.attrs["meta"]["settings"]["sns"]["norm_eps"] == eps
        assert seen[-1] == eps


def test_pgd_step_rule_changes_the_counterfactuals_and_is_recorded():
    """On a tiny run the two rules give different Min-ε PGD costs (ε_max 2: the code rule's step is twice as large);
    the sidecar records which rule ran."""
    out = {}
    for rule in ("paper", "code"):
        df = run({"part": "black2022", "dataset": "moons", "settings": {
            "methods": ["min_eps_pgd"], "n_models": 2, "epochs": 2, "pgd_step_rule": rule,
            "data_params": SMALL_DATA}})
        assert df.attrs["meta"]["pgd_step_rule"] == rule
        out[rule] = df["cost_l2"].to_numpy()
    assert not np.allclose(out["paper"], out["code"])


def test_search_box_defaults_to_the_authors_scalar_range_in_black2022_only():
    """``consistency.search_box`` (issue 25: the authors' README and example give their PGD and SNS
    ``clamp=[X_train.min(), X_train.max()]``): null resolves to ``scalar`` under the reference fidelities and to
    ``feature`` under ``paper``; part ct keeps ``feature``; a given value wins; the config block reaches the job."""
    from ctbench.experiments.consistency import search_box

    assert resolve_settings({})["search_box"] is None
    assert search_box(resolve_settings({})) == "scalar"
    assert search_box(resolve_settings({"fidelity": "reference_2025_07"})) == "scalar"
    assert search_box(resolve_settings({"fidelity": "paper"})) == "feature"
    assert search_box(resolve_settings({}, "ct"), "ct") == "feature"
    assert search_box(resolve_settings({"search_box": "feature"})) == "feature"
    assert search_box(resolve_settings({"fidelity": "paper", "search_box": "scalar"})) == "scalar"
    cfg = {"datasets": ["moons"], "consistency": {"enabled": True, "datasets": ["moons"], "search_box": "feature"}}
    assert jobs(cfg)[0]["settings"]["search_box"] == "feature"
    del cfg["consistency"]["search_box"]
    assert "search_box" not in jobs(cfg)[0]["settings"]


def _step_model() -> LinearModel:
    """2-D model with logits [0, x₀ − 0.5]: label 1 iff x₀ > 0.5, and p(1) grows with x₀ everywhere."""
    m = LinearModel(2, 2)
    with torch.no_grad():
        m[0].weight.copy_(torch.tensor([[0.0, 0.0], [1.0, 0.0]]))
        m[0].bias.copy_(torch.tensor([0.0, -0.5]))
    return m


@pytest.mark.parametrize("mutability", [None, ["both", "none"]])
def test_scalar_box_lets_pgd_and_sns_leave_a_features_own_range(mutability):
    """Feature 0 spans [0, 1], feature 1 [0, 10]. SNS ascends p(1), i.e. x₀, so under each feature's own range it
    stops at x₀ = 1 and under the scalar range [0, 10] it goes on to the ball's edge; Min-ε PGD and SNS get the
    scalar box, the other methods keep theirs, and an immutable feature stays put under either box (without
    mutability, PGD's random start moves x₁ too)."""
    from ctbench.constraints import Constraints
    from ctbench.experiments.consistency_search import SearchContext, search_methods
    from ctbench.generators import SNSGenerator

    model = _step_model()
    X_train = np.array([[0.0, 0.0], [1.0, 10.0], [0.5, 3.0]], dtype=np.float32)
    cons = Constraints.build(2, domain=([0.0, 0.0], [1.0, 10.0]), mutability=mutability)
    x = torch.tensor([[0.1, 4.0], [0.3, 6.0]])
    target = torch.tensor([1, 1])
    out = {}
    for box in ("feature", "scalar"):
        ctx = SearchContext(2.0, 1.5, "paper", X_train=X_train, search_box=box)
        found, _ = search_methods(model, x, target, cons, ["min_eps_pgd", "min_eps_pgd+sns"], ctx)
        out[box] = found
        assert ctx.constraints_for("min_l1", cons) is cons and ctx.constraints_for("prototype", cons) is cons
        for r in found.values():
            assert bool((model(r.counterfactual).argmax(1) == target).all())
            if mutability:  # x₁ immutable: no random start, noise or step moves it
                torch.testing.assert_close(r.counterfactual[:, 1], x[:, 1], rtol=0, atol=0)
    sns_feature = out["feature"]["min_eps_pgd+sns"].counterfactual
    sns_scalar = out["scalar"]["min_eps_pgd+sns"].counterfactual
    assert float(sns_feature[:, 0].max()) <= 1.0
    assert bool((sns_scalar[:, 0] > 1.2).all()) and float(sns_scalar[:, 0].max()) <= 10.0
    # the plumbing: the search is SNS itself under the scalar range (bitwise)
    scalar = Constraints.build(2, domain=([0.0] * 2, [10.0] * 2), mutability=mutability)
    alone = SNSGenerator(radius=1.5, fidelity="paper", seed=0).refine(
        model, out["scalar"]["min_eps_pgd"], scalar, torch.Generator().manual_seed(0))
    torch.testing.assert_close(alone.counterfactual, sns_scalar, rtol=0, atol=0)


def test_search_box_scalar_needs_the_training_data():
    from ctbench.constraints import Constraints
    from ctbench.experiments.consistency_search import SearchContext

    with pytest.raises(ValueError, match="search_box 'scalar' needs the training data"):
        SearchContext(2.0, 1.5, search_box="scalar").constraints_for("sns", Constraints.build(2, domain=(0.0, 1.0)))


def test_search_box_is_recorded_and_changes_the_counterfactuals():
    """On a tiny Moons run (its features span different ranges) the two boxes give other SNS counterfactuals; the
    sidecar records which box ran."""
    out = {}
    for box in ("feature", "scalar"):
        df = run({"part": "black2022", "dataset": "moons", "settings": {
            "methods": ["min_eps_pgd", "min_eps_pgd+sns"], "n_models": 2, "epochs": 2, "search_box": box,
            "sns": {"radius": 3.0}, "data_params": SMALL_DATA}})
        assert df.attrs["meta"]["search_box"] == box
        out[box] = df[df["sns"]]["cost_l2"].to_numpy()
    assert not np.allclose(out["feature"], out["scalar"], equal_nan=True)
