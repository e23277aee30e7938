"""The trainer arm of the Proposition 3.1 check, the per-setting tests and the ledger: each can fail, and does on
constructed cases where it should (issue 14, item 6)."""

import numpy as np
import pandas as pd
import pytest
import torch

from ctbench.constraints import Constraints
from ctbench.experiments import prop31 as P
from ctbench.experiments.prop31.general import relative_sensitivity
from ctbench.generators.base import Convergence
from ctbench.models import LinearModel
from ctbench.report.claims import NOT_REPRODUCED, PARTLY, REPRODUCED, evaluate_claim, load_claims
from ctbench.training import Objective, train
from ctbench.training.trainer import TrainParams

SHORT = P.TrainerArmConfig(epochs=3)


# -- settings and the sensitivity measure --------------------------------------------------------------------------
def test_sensitivities_are_log_odds_coefficients_and_shift_invariant():
    theta = np.array([[0.5, -1.0, 2.0], [2.0, 1.0, 2.0]])           # K = 2: w = θ₁ − θ₀ = (1.5, 2, 0)
    np.testing.assert_allclose(P.sensitivities(theta), [1.5, 2.0, 0.0])
    np.testing.assert_allclose(P.sensitivities(theta + 7.0), [1.5, 2.0, 0.0])  # a common shift of the logits
    three = np.array([[0.0], [1.0], [3.0]])                          # pairs: 1, 3, 2 → √((1 + 9 + 4)/3)
    np.testing.assert_allclose(P.sensitivities(three), [np.sqrt(14 / 3)])
    imm, rest = relative_sensitivity(np.array([3.0, 1.0, 7.0]))
    assert imm == 3.0 and rest == pytest.approx(5.0)                 # √((1 + 49)/2)


def test_general_settings_layout_proviso_and_simulation():
    s = P.GeneralSetting("x", n_classes=3, n_features=5, gap_imm=2.0, gap_mut=1.0, n_disc_mutable=2,
                         n_disc_immutable=1, n=3000)
    assert s.immutable == [0, 1] and s.proviso and s.role == "check"
    np.testing.assert_allclose(s.means(), [[-1, -1, 0.5, 0.5, 0], [0, 0, 0, 0, 0], [1, 1, -0.5, -0.5, 0]])
    X, y = P.simulate_general(s, 4)
    assert X.shape == (9000, 5) and np.bincount(y).tolist() == [3000] * 3
    for k in range(3):
        np.testing.assert_allclose(X[y == k].mean(0), s.means()[k], atol=0.06)
        np.testing.assert_allclose(X[y == k].std(0), 1.0, atol=0.05)
    np.testing.assert_array_equal(P.simulate_general(s, 4)[0], X)
    assert not P.GeneralSetting("a", gap_mut=0.0).proviso
    assert P.GeneralSetting("b", 2, 3, n_disc_mutable=0, n_disc_immutable=1).role == "negative_control"
    with pytest.raises(ValueError):
        P.GeneralSetting("c", 2, 2, n_disc_mutable=2)
    roles = {s.name: s.role for s in P.default_settings()}
    assert {s.n_classes for s in P.default_settings()} == {2, 3} and max(s.n_features for s in P.default_settings()) > 2
    assert "negative_control" in roles.values() and "check" in roles.values()


def test_no_protection_switches_off_only_protect_positive():
    x_plus, x_cf = torch.zeros(4, 3), torch.ones(4, 3)
    on, off = Constraints.build(3, mutability=[0]), P.NoProtection.build(3, mutability=[0])
    assert torch.equal(on.protect_positive(x_plus, x_cf)[:, 0], x_cf[:, 0])
    assert torch.equal(off.protect_positive(x_plus, x_cf), x_plus)
    delta = torch.ones(4, 3)
    assert torch.equal(off.mask_update(delta, off.codes()), on.mask_update(delta, on.codes()))  # the same search


# -- the trainer arm -----------------------------------------------------------------------------------------------
def test_trainer_arm_is_ctbench_training():
    """The protected arm's model equals a single run of ``ctbench.training.train`` with the immutable feature under
    ``mutability`` (the paper runs' path); the baseline equals a vanilla run."""
    s = P.GeneralSetting("one", 2, 3, n_disc_mutable=1, n=60)
    df = P.run_trainer_arm([s], [3], SHORT)
    X, y = P.simulate_general(s, 3)
    for arm, obj, gen in (("p", Objective(SHORT.objective, lambda_div=SHORT.lambda_div, lambda_reg=SHORT.lambda_reg,
                                         lambda_adv=SHORT.lambda_adv), SHORT.make_generator()),
                          ("bl", Objective("vanilla"), None)):
        model = LinearModel(3, 2, generator=torch.Generator().manual_seed(3))
        train(model, X, y, objective=obj, generator=gen, constraints=Constraints.build(3, mutability=[0]),
              params=TrainParams(epochs=SHORT.epochs, batch_size=SHORT.batch_size, nce=None, lr=SHORT.lr, seed=3,
                                 majority_margin=None),
              convergence=Convergence("threshold", SHORT.tau, SHORT.max_iter))
        imm, rest = relative_sensitivity(P.sensitivities(model[0].weight.detach().double().numpy()))
        assert df[f"sens_imm_{arm}"].item() == pytest.approx(imm, rel=1e-4)
        assert df[f"sens_rest_{arm}"].item() == pytest.approx(rest, rel=1e-4)
    assert not df["failed"].any() and 0 < df["mature_p"].item() <= 1


def test_conclusion_holds_on_a_check_and_fails_on_a_negative_control():
    check = P.GeneralSetting("check", 2, 2, n=100)
    control = P.GeneralSetting("control", 2, 3, n_disc_mutable=0, n_disc_immutable=1, n=100)
    df = P.run_trainer_arm([check, control], range(8), P.TrainerArmConfig(epochs=20))
    rows = {k: P.setting_row(g) for k, g in df.groupby("setting")}
    assert rows["check"]["holds_vs_u"], rows["check"]
    assert not rows["control"]["holds_vs_u"], rows["control"]
    # mechanism: without protection the divergence inflates the immutable sensitivity on the check
    assert rows["check"]["median_sens_imm_u"] > 1.2 * rows["check"]["median_sens_imm_p"]


def test_a_run_where_protection_cannot_matter_never_counts():
    """Constructed failing case: with every counterfactual term weighted 0, both CT arms train identically, so no
    run may count as "lowered" and the setting must not show the conclusion."""
    cfg = P.TrainerArmConfig(epochs=3, lambda_div=0.0, lambda_reg=0.0, lambda_adv=0.0)
    df = P.run_trainer_arm([P.GeneralSetting("null", 2, 2, n=50)], range(3), cfg)
    np.testing.assert_array_equal(df["rs_p"], df["rs_u"])
    row = P.setting_row(df)
    assert row["lowered_vs_u"] == 0 and not row["holds_vs_u"]


# -- the per-setting test ------------------------------------------------------------------------------------------
def _runs(k_u: int, k_bl: int, n: int = 20) -> pd.DataFrame:
    cols = {f"{c}_{a}": 1.0 for c in ("rs", "sens_imm", "sens_rest", "acc") for a in P.ARMS}
    return pd.DataFrame({"lowered": [True] * k_u + [False] * (n - k_u),
                         "lowered_bl": [True] * k_bl + [False] * (n - k_bl), **cols})


@pytest.mark.parametrize(("k", "holds"), [(20, True), (15, True), (14, False), (10, False), (0, False)])
def test_setting_test_needs_a_majority_beyond_chance(k, holds):
    row = P.setting_row(_runs(k, 20 - k))
    assert row["holds_vs_u"] is holds and row["lowered_vs_u"] == k
    assert row["ci_low_vs_u"] == pytest.approx(P.wilson_interval(k, 20)[0])
    assert row["holds_vs_bl"] is (20 - k >= 15)  # the two reference points are judged separately


def _settings_frames(control_lowered: int):
    """Closed-form grid and violation runs plus trainer runs, with a negative control lowered in the given runs."""
    base = {f"{c}_{a}": 1.0 for c in ("w_imm", "w_mut", "rs", "acc") for a in P.ARMS} | {"ratio": 0.5, "n": 200}
    grid = pd.DataFrame([{**base, "iteration": 400, "lowered": True, "lowered_bl": False}] * 20)
    viol = pd.DataFrame([{**base, "kind": "mutable_not_discriminative", "lowered": i < control_lowered,
                          "lowered_bl": False} for i in range(20)])
    trainer = []
    for s in (P.GeneralSetting("K2_D2"), P.GeneralSetting("nc", gap_mut=0.0)):
        for i in range(20):
            lowered = True if s.proviso else i < control_lowered
            trainer.append({**s.row(), "seed": i, "epochs": 3, "lr": 0.01, "failed": False, "lowered": lowered,
                            "lowered_bl": False, **{f"{c}_{a}": 1.0 for c in ("rs", "sens_imm", "sens_rest")
                                                    for a in P.ARMS}})
    return grid, viol, pd.DataFrame(trainer)


def test_settings_table_says_whether_each_negative_control_fails():
    held = P.settings_table(*_settings_frames(control_lowered=20)).set_index("case")
    assert held.loc["closed_form:mutable_not_discriminative", "conclusion_fails"] is False
    assert held.loc["trainer:nc", "role"] == "negative_control" and not held.loc["trainer:nc", "conclusion_fails"]
    assert pd.isna(held.loc["trainer:K2_D2", "conclusion_fails"]) and held.loc["trainer:K2_D2", "holds_vs_u"]
    failed = P.settings_table(*_settings_frames(control_lowered=10)).set_index("case")
    assert failed.loc["trainer:nc", "conclusion_fails"] is True and failed.loc["trainer:nc", "share_vs_u"] == 0.5


# -- the ledger ----------------------------------------------------------------------------------------------------
CHECKS = ["closed_form:default_grid", "trainer:K2_D2", "trainer:K3_D2", "trainer:K2_D4", "trainer:K3_D4"]
CONTROLS = ["closed_form:mutable_not_discriminative", "trainer:nc_K2_D2_mutable_not_discriminative",
            "trainer:nc_K2_D3_discriminative_immutable"]


@pytest.mark.parametrize(("check_low", "control_low", "verdict"), [
    (0.8, 0.3, REPRODUCED),       # holds on the checks, fails on the controls
    (0.8, 0.9, PARTLY),           # the controls still show it: the check cannot tell
    (0.3, 0.3, NOT_REPRODUCED),   # no check shows it
])
def test_ledger_verdicts_read_the_settings_with_the_negative_controls(tmp_path, check_low, control_low, verdict):
    rows = [{"case": c, "ci_low_vs_u": check_low, "ci_low_vs_bl": 0.1} for c in CHECKS] + \
           [{"case": c, "ci_low_vs_u": control_low, "ci_low_vs_bl": 0.1} for c in CONTROLS]
    (tmp_path / "prop31").mkdir()
    pd.DataFrame(rows).to_csv(tmp_path / "prop31" / "prop31_settings.csv", index=False)
    claims = {c.id: c for c in load_claims("claims.yaml")}
    got = evaluate_claim(claims["prop31_protection_lowers_reliance"], tmp_path)
    assert got["verdict"] == verdict, got
    assert evaluate_claim(claims["prop31_protected_below_baseline"], tmp_path)["verdict"] == NOT_REPRODUCED
    assert set(claims["prop31_protection_lowers_reliance"].spec["over"]["case"]) == set(CHECKS + CONTROLS)
    assert {f"trainer:{s.name}" for s in P.default_settings()} <= set(CHECKS + CONTROLS)  # the ledger's names
