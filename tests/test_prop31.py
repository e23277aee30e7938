"""Numerical check of Proposition 3.1 (ctbench.experiments.prop31): simulation, assumption checks, training,
statistics."""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from ctbench.constraints import Constraints
from ctbench.experiments import prop31 as P
from ctbench.generators.base import Convergence
from ctbench.generators.generic import GenericGenerator
from ctbench.training import CounterfactualGroup, Objective

CLEAN = P.Setting.from_gaps(1.0, 1.0, n=100)
FAST = P.TrainConfig(n_iter=150, record_every=10)


# -- simulation and assumptions ------------------------------------------------------------------------------------
def test_simulation_shapes_labels_and_mean_ordering():
    s = P.Setting.from_gaps(0.6, 0.4, sigma=(0.5, 2.0), n=4000)
    d = P.simulate(s, seed=3)
    assert d.X.shape == (8000, 2) and d.X.dtype == np.float64
    assert (d.y[:4000] == 0).all() and (d.y[4000:] == 1).all()
    neg, pos = d.X[d.y == 0].mean(0), d.X[d.y == 1].mean(0)
    assert neg[P.IMM] < pos[P.IMM] and neg[P.MUT] > pos[P.MUT]  # immutable lower, mutable higher in y⁻
    np.testing.assert_allclose(neg, s.mu_neg, atol=0.1)
    np.testing.assert_allclose(pos, s.mu_pos, atol=0.1)
    np.testing.assert_allclose(d.X[d.y == 0].std(0), s.sigma, rtol=0.05)
    r = np.corrcoef(d.X[d.y == 0].T)[0, 1]
    assert abs(r) < 0.05
    # same seed, same data; another seed, other data
    np.testing.assert_array_equal(P.simulate(s, 3).X, d.X)
    assert not np.array_equal(P.simulate(s, 4).X, d.X)


def test_simulation_correlation_and_class_variances():
    s = P.Setting.from_gaps(1.0, 1.0, n=4000, rho=0.8, sigma_pos=(2.0, 0.5))
    d = P.simulate(s, 0)
    for k in (0, 1):
        assert np.corrcoef(d.X[d.y == k].T)[0, 1] == pytest.approx(0.8, abs=0.03)
    np.testing.assert_allclose(d.X[d.y == 1].std(0), (2.0, 0.5), rtol=0.05)
    np.testing.assert_allclose(d.X[d.y == 0].std(0), (1.0, 1.0), rtol=0.05)


BROKEN = {
    "independent": dict(rho=0.8),
    "equal_class_variances": dict(sigma_pos=(2.0, 2.0)),
    "mean_ordering": dict(flip=True),
    "discriminative_mutable": dict(gap_mut=0.0),
}


def _broken_setting(flag, n=2000):
    spec = dict(BROKEN[flag])
    flip = spec.pop("flip", False)
    gap_mut = spec.pop("gap_mut", 1.0)
    return P.Setting.from_gaps(-1.0 if flip else 1.0, gap_mut, n=n, **spec)


def test_assumptions_pass_a_clean_setting():
    assert all(P.check_assumptions(CLEAN).values())
    assert set(P.check_assumptions(CLEAN)) == set(P.ASSUMPTIONS)
    # unequal variances across *features* are allowed (Σ diagonal, common to the classes)
    assert all(P.check_assumptions(P.Setting.from_gaps(1, 1, sigma=(0.5, 2.0))).values())
    for seed in range(3):
        flags = P.check_assumptions(P.simulate(P.Setting.from_gaps(1.0, 1.0, n=500), seed))
        assert all(flags.values()), flags


@pytest.mark.parametrize("flag", sorted(BROKEN))
def test_assumption_checks_flag_each_violation(flag):
    s = _broken_setting(flag)
    pop = P.check_assumptions(s)
    data = P.check_assumptions(P.simulate(s, 0))
    for flags in (pop, data):
        assert flags[flag] is False
        assert flags["gaussian"] is True
    if flag in ("independent", "equal_class_variances"):  # these break nothing else
        assert all(v for k, v in pop.items() if k != flag)
        assert all(v for k, v in data.items() if k != flag), data
    if flag == "mean_ordering":
        assert pop["discriminative_mutable"] and data["discriminative_mutable"]


def test_assumption_check_flags_non_gaussian_data():
    rng = np.random.default_rng(0)
    n = 2000
    X = np.concatenate([rng.exponential(1.0, (n, 2)) - 1.5, rng.exponential(1.0, (n, 2)) + [-0.5, -2.5]])
    y = np.repeat([0, 1], n)
    flags = P.check_assumptions((X, y))
    assert flags["gaussian"] is False
    assert flags["mean_ordering"] and flags["independent"]


# -- statistics ----------------------------------------------------------------------------------------------------
def test_wilson_interval_against_hand_computation():
    # 8/10, z = 1.959964 (by hand, bc -l): centre (0.8 + z²/20)/(1 + z²/10) = 0.716740, half-width
    # z/(1 + z²/10)·√(0.8·0.2/10 + z²/400) = 0.226578 → (0.490162, 0.943318)
    lo, hi = P.wilson_interval(8, 10)
    assert lo == pytest.approx(0.490162, abs=1e-6) and hi == pytest.approx(0.943318, abs=1e-6)
    # 0/20: (0, z²/(20 + z²)) = (0, 0.161125); 20/20 mirrors it
    assert P.wilson_interval(0, 20) == pytest.approx((0.0, 0.161125), abs=1e-6)
    assert P.wilson_interval(20, 20) == pytest.approx((0.838875, 1.0), abs=1e-6)
    # the interval narrows with n and contains the point estimate
    lo2, hi2 = P.wilson_interval(80, 100)
    assert lo < lo2 < 0.8 < hi2 < hi
    with pytest.raises(ValueError):
        P.wilson_interval(3, 2)


def test_summary_counts_and_interval():
    df = pd.DataFrame({"lowered": [True] * 8 + [False] * 2, "g": ["a"] * 5 + ["b"] * 5, "ratio": 0.5,
                       **{f"{c}_{a}": 1.0 for a in ("u", "p") for c in ("rs", "w_imm", "w_mut", "acc")}})
    s = P.summary(df)
    assert (s.loc[0, "runs"], s.loc[0, "lowered"]) == (10, 8)
    assert (s.loc[0, "ci_low"], s.loc[0, "ci_high"]) == pytest.approx(P.wilson_interval(8, 10))
    by = P.summary(df, "g").set_index("g")
    assert by.loc["a", "share"] == 1.0 and by.loc["b", "share"] == pytest.approx(0.6)


# -- training: fidelity to the project's objective and search ------------------------------------------------------
def test_closed_form_gradients_match_autograd_and_the_project_objective():
    g = torch.Generator().manual_seed(0)
    B, N, m = 3, 12, 5
    rnd = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    X, W, b = rnd(B, N, 2), rnd(B, 2, 2).requires_grad_(), rnd(B, 2).requires_grad_()
    y = torch.repeat_interleave(torch.tensor([0, 1]), N // 2)
    x_cf, x_plus, t = rnd(B, m, 2), rnd(B, m, 2), torch.randint(0, 2, (B, m), generator=g)
    cfg = P.TrainConfig(lambda_reg=0.3)
    total, _ = P.losses(W, b, X, y, x_cf, x_plus, t, cfg)
    gW, gb = torch.autograd.grad(total.sum(), (W, b))
    mW, mb = P.gradients(W.detach(), b.detach(), X.permute(2, 0, 1).contiguous(), y.double(), x_cf, x_plus, t, cfg)
    torch.testing.assert_close(mW, gW, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(mb, gb, rtol=1e-10, atol=1e-12)
    # the same number as the project's "energy" objective (CE + div + ridge) on an nn.Linear, row by row
    obj = Objective("energy", lambda_clf=cfg.lambda_clf, lambda_div=cfg.lambda_div, lambda_reg=cfg.lambda_reg)
    for i in range(B):
        lin = torch.nn.Linear(2, 2).double()
        with torch.no_grad():
            lin.weight.copy_(W[i])
            lin.bias.copy_(b[i])
        ref, _ = obj(lin, X[i], y, CounterfactualGroup(x_cf[i], x_cf[i], t[i], x_plus[i], t[i]))
        assert float(total[i].detach()) == pytest.approx(float(ref.detach()), rel=1e-12)


@pytest.mark.parametrize("lambda_cost", [0.0, 0.05])
def test_search_matches_the_project_generic_generator(lambda_cost):
    g = torch.Generator().manual_seed(1)
    m = 40
    W, b = torch.randn(2, 2, generator=g, dtype=torch.float64), torch.randn(2, generator=g, dtype=torch.float64)
    x0 = 2 * torch.randn(m, 2, generator=g, dtype=torch.float64)
    t = torch.randint(0, 2, (m,), generator=g)
    cfg = P.TrainConfig(step_size=0.5, max_iter=30, tau=0.75, lambda_cost=lambda_cost)
    x_cf, mature = P.search((W[1] - W[0])[None], (b[1] - b[0])[None], x0[None], cfg, t[None])
    lin = torch.nn.Linear(2, 2).double()
    with torch.no_grad():
        lin.weight.copy_(W)
        lin.bias.copy_(b)
    ref = GenericGenerator(step_size=0.5, lambda_cost=lambda_cost).search(
        lin, x0, t, Constraints.build(2, mutability=[P.IMM]), Convergence("threshold", 0.75, 30))
    torch.testing.assert_close(x_cf[0], ref.counterfactual, rtol=1e-9, atol=1e-9)
    assert torch.equal(x_cf[0, :, P.IMM], x0[:, P.IMM])  # the immutable feature never moves
    assert torch.equal(mature[0], ref.mature)
    assert 0 < int(mature.sum()) < m or lambda_cost  # the check exercises both outcomes


def test_protection_removes_the_divergence_gradient_on_the_immutable_feature():
    # Divergence only (no CE, no ridge): with protection w_imm never leaves 0, because x'[imm] − x⁺[imm] = 0 in every
    # tuple (Eq. 11 of the proof); without it w_imm grows with the sign of μ(y⁺) − μ(y⁻).
    cfg = P.TrainConfig(lambda_clf=0.0, lambda_reg=0.0, n_iter=30, record_every=1)
    d = P.simulate(CLEAN, 0)
    fp, fu = P.fit(d, protect=True, cfg=cfg), P.fit(d, protect=False, cfg=cfg)
    assert np.all(fp.path[:, P.IMM] == 0.0)
    assert fu.w[P.IMM] > 0.5 and np.all(np.diff(fu.path[:, P.IMM]) >= -0.05)
    assert fu.w[P.MUT] < 0 and fp.w[P.MUT] < 0  # the mutable feature is learnt in both arms


def test_fit_is_deterministic_and_independent_of_the_batch():
    d = P.simulate(CLEAN, 7)
    a, b = P.fit(d, True, FAST), P.fit(d, True, FAST)
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.path, b.path)
    assert a.path.shape == (FAST.n_iter // FAST.record_every + 1, 2)
    assert np.all(a.path[0] == 0)
    # the batched grid reproduces single fits (other rows of the batch do not matter)
    df = P.run_grid([CLEAN, P.Setting.from_gaps(2.0, 0.5, n=100)], seeds=[6, 7], cfg=FAST).set_index(
        ["setting_id", "seed"])
    u = P.fit(d, False, FAST)
    row = df.loc[(0, 7)]
    assert row["w_imm_p"] == pytest.approx(a.w[P.IMM], rel=1e-9)
    assert row["w_mut_p"] == pytest.approx(a.w[P.MUT], rel=1e-9)
    assert row["rs_u"] == pytest.approx(u.rel_sens, rel=1e-9)
    assert row["acc_p"] == pytest.approx(a.accuracy)


def test_the_grid_is_bitwise_the_same_whatever_its_chunks():
    """``max_elements`` bounds a chunk's memory (issue 21: the paper grid's chunks of 333 runs were the job's 2.2 GB
    peak); the rows must not depend on it: one run per chunk, two, and all at once give the same bits."""
    grid = [CLEAN, P.Setting.from_gaps(2.0, 0.5, n=100)]
    frames = [P.run_grid(grid, seeds=[5, 6, 7], cfg=FAST, max_elements=m) for m in (1, 2 * 3 * 2 * 100 * 2, 10**9)]
    for other in frames[1:]:
        pd.testing.assert_frame_equal(frames[0], other, check_exact=True)


# -- the proposition -----------------------------------------------------------------------------------------------
def test_protection_lowers_relative_sensitivity_when_the_assumptions_hold():
    df = P.run_grid([CLEAN], seeds=range(20), cfg=FAST)
    assert len(df) == 20 and df["assumptions_hold"].all()
    s = P.summary(df).iloc[0]
    assert s["share"] >= 0.8, df[["seed", "rs_u", "rs_p"]]
    assert s["ci_low"] > 0.5
    assert s["median_ratio"] < 0.8
    # mechanism: without protection the divergence inflates |w_imm|; protection leaves it near the CE baseline
    assert (df["w_imm_u"].abs() > df["w_imm_p"].abs()).mean() >= 0.8
    assert df["w_imm_p"].abs().median() < 1.5 * df["w_imm_bl"].abs().median()
    assert math.isfinite(s["acc_p"]) and s["acc_p"] > 0.6
    # the baseline reference point: counted per run, summarised with its own interval
    assert (df["lowered_bl"] == (df["rs_p"] < df["rs_bl"])).all()
    assert s["share_bl"] == pytest.approx(df["lowered_bl"].mean())
    assert (s["ci_low_bl"], s["ci_high_bl"]) == pytest.approx(P.wilson_interval(int(df["lowered_bl"].sum()), 20))


def test_violations_run_and_are_labelled():
    # no claim on the outcome: the proposition promises nothing here
    grid = P.violation_grid(quick=True, n=50)
    kinds = [s.kind for s in grid]
    assert kinds == list(P.VIOLATIONS)
    flags = {s.kind: P.check_assumptions(s) for s in grid}
    assert all(flags["clean"].values())
    assert not flags["correlated_rho+0.8"]["independent"]
    assert not flags["unequal_class_variances"]["equal_class_variances"]
    df = P.run_grid(grid, seeds=[0], cfg=replace(FAST, n_iter=20), baseline=False)
    assert set(df["kind"]) == set(P.VIOLATIONS)
    assert df.loc[df["kind"] == "clean", "assumptions_hold"].all()
    assert not df.loc[df["kind"] != "clean", "assumptions_hold"].any()


def test_main_quick_writes_the_report_files(tmp_path):
    from ctbench.cli.study_cmds import write_prop31

    files = write_prop31(P.check(quick=True, cfg=P.TrainConfig(n_iter=60, record_every=10), seeds=[0, 1],
                                 trainer_cfg=P.TrainerArmConfig(epochs=2)), tmp_path)
    for name in ("prop31_summary.csv", "prop31_violations.csv", "prop31_paths.png", "prop31_sensitivity.png",
                 "prop31_paths.pdf", "prop31_sensitivity.pdf", "prop31_settings.csv", "prop31_trainer_runs.csv"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert files["summary"] == tmp_path / "prop31_summary.csv"
    s = pd.read_csv(tmp_path / "prop31_summary.csv")
    assert {"by", "group", "runs", "lowered", "share", "ci_low", "ci_high"} <= set(s.columns)
    assert s.loc[s["by"] == "all", "runs"].item() == len(P.default_grid(quick=True)) * 2
    assert {"variant", "n", "iteration"} <= set(s["by"])
    v = pd.read_csv(tmp_path / "prop31_violations.csv")
    assert list(v["kind"]) == list(P.VIOLATIONS)
    assert v.loc[v["kind"] == "clean", "broken_assumptions"].item() == "none"
    st = pd.read_csv(tmp_path / "prop31_settings.csv")
    assert st["case"].tolist()[:2] == ["closed_form:default_grid", "closed_form:mutable_not_discriminative"]
    assert set(st["case"]) == {"closed_form:default_grid", "closed_form:mutable_not_discriminative",
                               *(f"trainer:{s.name}" for s in P.default_settings(quick=True))}
    assert (st.loc[st["arm"] == "trainer", "runs"] == 2).all()
    assert st.loc[st["case"] == "closed_form:default_grid", "runs"].item() == s.loc[s["by"] == "all", "runs"].item()
    assert set(st.loc[st["role"] == "negative_control", "conclusion_fails"].astype(str)) <= {"True", "False"}
    assert {"share_vs_u", "ci_low_vs_u", "ci_high_vs_u", "share_vs_bl", "ci_low_vs_bl", "holds_vs_bl"} <= set(st)
    assert not list(tmp_path.glob(".*tmp"))
