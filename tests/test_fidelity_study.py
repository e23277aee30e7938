"""The fidelity study: the effect of each code/paper discrepancy (ctbench/experiments/fidelity.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ctbench.experiments.fidelity import COLUMNS, METRICS, REQUIRED, SWITCHES, default_plan, merge_effects, run_effect
from ctbench.fidelity import Fidelity

TINY = {"seed": 0, "epochs": 2, "n_runs": 2, "n_individuals": 12}


def test_switches_and_plan():
    required = {"ce_step_size", "domain_n_sigma", "mmd_length_scale", "adversarial_label",
                "synthetic_mutability_zero_reg_adv", "adult_substring_groups", "ip_star_per_run"}
    assert required <= set(SWITCHES)
    fid_fields = set(Fidelity.__dataclass_fields__)
    for s in SWITCHES.values():
        assert s.reference != s.paper
        if s.kind == "fidelity":
            assert s.name in fid_fields and getattr(Fidelity(), s.name) == s.reference  # reference = the default
    plan = default_plan()
    assert ("adult_substring_groups", "adult") in plan
    assert {sw for sw, _ in plan} == set(SWITCHES)
    # synthetic data for every switch; the July preprint's adversarial label (the open question of which preset to
    # default to) also on the real tabular datasets; the Adult grouping switch on Adult only
    synthetic = ("lin_sep", "circles", "moons", "over")
    assert all(ds in synthetic for sw, ds in plan if sw not in ("adult_substring_groups", "adversarial_label"))
    assert {ds for sw, ds in plan if sw == "adversarial_label"} >= {*synthetic, "adult", "gmsc"}


@pytest.fixture(scope="module")
def mmd_effect(tmp_path_factory):
    out = tmp_path_factory.mktemp("fx") / "mmd.csv"
    return out, run_effect("mmd_length_scale", "lin_sep", out, **TINY)


def test_run_effect_rows_and_columns(mmd_effect):
    out, df = mmd_effect
    assert list(df.columns) == COLUMNS
    assert df["metric"].tolist() == list(METRICS)
    assert (df["switch"] == "mmd_length_scale").all() and (df["dataset"] == "lin_sep").all()
    assert df[["reference", "paper"]].notna().all().all()
    np.testing.assert_array_equal(df["delta"], df["paper"] - df["reference"])
    assert df["reference_setting"].iloc[0] == "5.0" and df["paper_setting"].iloc[0] == "0.5"
    on_disk = pd.read_csv(out)
    assert list(on_disk.columns) == COLUMNS and len(on_disk) == len(METRICS)
    side = json.loads(out.with_name(out.name + ".json").read_text())
    assert side["n_models_trained"] == 2  # evaluation-only: one CT and one BL model for both settings
    assert side["settings"]["reference"]["fidelity"]["mmd_length_scale"] == 5.0
    assert side["settings"]["paper"]["fidelity"]["mmd_length_scale"] == 0.5
    assert side["settings"]["paper"]["protocol"]["n_runs"] == 2


def test_evaluation_only_switch_changes_only_ip_star(mmd_effect):
    _, df = mmd_effect
    d = df.set_index("metric")
    assert d.loc["accuracy CT", "reference"] == d.loc["accuracy CT", "paper"]
    for m in ("IP", "Cost", "validity CT"):  # same models, same protocol seed: only the kernel differs
        assert d.loc[m, "delta"] == 0.0, m
    assert d.loc["IP*", "delta"] != 0.0


def test_training_switch_retrains_ct_only(tmp_path):
    out = tmp_path / "step.csv"
    df = run_effect("ce_step_size", "lin_sep", out, **TINY)
    side = json.loads(out.with_name(out.name + ".json").read_text())
    assert side["n_models_trained"] == 3  # CT under 0.1 and 0.25, one shared BL
    idx = {k: v["models"] for k, v in side["settings"].items()}
    assert idx["reference"]["BL_s0"] == idx["paper"]["BL_s0"] and idx["reference"]["CT_s0"] != idx["paper"]["CT_s0"]
    steps = sorted(m["config"]["fidelity_overrides"].get("ce_step_size", 0.1) for m in side["models"])
    assert steps == [0.1, 0.1, 0.25]
    np.testing.assert_allclose(df["delta"], df["paper"] - df["reference"])


def test_missing_real_data_is_skipped_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setenv("CTBENCH_DATA", str(tmp_path / "nothing"))
    monkeypatch.setenv("CTBENCH_CACHE", str(tmp_path / "cache"))
    df = run_effect("adult_substring_groups", "adult", tmp_path / "adult.csv", **TINY)
    assert len(df) == len(METRICS) and df[["reference", "paper", "delta"]].isna().all().all()
    assert df["note"].str.startswith("skipped").all()


def test_unknown_switch():
    with pytest.raises(ValueError, match="unknown switch"):
        run_effect("no_such_switch", "lin_sep", "x.csv")


def _table(switch, ref, pap):
    return pd.DataFrame({"switch": switch, "dataset": "lin_sep", "metric": list(METRICS), "reference": ref,
                         "paper": pap, "delta": np.asarray(pap) - np.asarray(ref)})


def test_merge_concatenates_and_validates(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    _table("ce_step_size", [1.0] * 5, [2.0] * 5).to_csv(a, index=False)
    _table("domain_n_sigma", [0.5] * 5, [0.25] * 5).assign(note="x").to_csv(b, index=False)
    out = tmp_path / "fidelity_effects.csv"
    merged = merge_effects([a, b], out)
    assert len(merged) == 10 and merged["switch"].tolist() == ["ce_step_size"] * 5 + ["domain_n_sigma"] * 5
    assert list(merged.columns[:len(REQUIRED)]) == REQUIRED
    pd.testing.assert_frame_equal(pd.read_csv(out), merged, check_dtype=False)

    with pytest.raises(ValueError, match="more than once"):
        merge_effects([a, a], tmp_path / "dup.csv")
    _table("x", [1.0] * 5, [2.0] * 5).drop(columns="delta").to_csv(c := tmp_path / "c.csv", index=False)
    with pytest.raises(ValueError, match="missing column"):
        merge_effects([c], tmp_path / "m.csv")
    _table("y", [1.0] * 5, [2.0] * 5).assign(delta=-1.0).to_csv(d := tmp_path / "d.csv", index=False)
    with pytest.raises(ValueError, match="paper − reference"):
        merge_effects([d], tmp_path / "m.csv")
    assert not (tmp_path / "m.csv").exists()


def test_cli(tmp_path, capsys):
    import argparse

    from ctbench.cli import figure_cmds, study_cmds

    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    study_cmds.add_cli(sub)
    figure_cmds.add_cli(sub)
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    _table("ce_step_size", [1.0] * 5, [2.0] * 5).to_csv(a, index=False)
    _table("mmd_length_scale", [1.0] * 5, [3.0] * 5).to_csv(b, index=False)
    args = p.parse_args(["fidelity-effects-merge", str(a), str(b), "--out", str(tmp_path / "m.csv")])
    assert args.func(args) == 0 and len(pd.read_csv(tmp_path / "m.csv")) == 10
    args = p.parse_args(["fidelity-effect", "--switch", "ip_star_per_run", "--dataset", "lin_sep", "--out",
                         str(tmp_path / "e.csv"), "--epochs", "1", "--n-runs", "2", "--n-individuals", "10"])
    assert args.func(args) == 0
    e = pd.read_csv(tmp_path / "e.csv", dtype={"reference_setting": str, "paper_setting": str})
    assert e["reference_setting"].iloc[0] == "true" and e["paper_setting"].iloc[0] == "false"
    args = p.parse_args(["figure1", "--out", str(tmp_path / "f"), "--quick"])
    assert args.func is not None and args.quick
    args = p.parse_args(["mnist-figures", "--ct", "c.pt", "--bl", "b.pt", "--out", "o"])
    assert args.targets == [1, 2, 3, 4] and args.max_iter == 1000


def test_training_seeds_pool_runs_and_give_a_seed_interval(tmp_path, mmd_effect):
    """Two training seeds: models train once per seed, the value pools the (seed, run) pairs, and seed 0's own
    reduction (in ``seed_values``) is the one-seed study's value: a seed's numbers do not depend on its companions."""
    _, one = mmd_effect
    out = tmp_path / "mmd2.csv"
    two = run_effect("mmd_length_scale", "lin_sep", out, seeds=(0, 1), **{k: v for k, v in TINY.items()
                                                                          if k != "seed"})
    side = json.loads(out.with_name(out.name + ".json").read_text())
    assert side["n_models_trained"] == 4 and side["training_seeds"] == [0, 1]
    assert (two["n_seeds"] == 2).all() and (two["seeds"] == "0 1").all()
    d1, d2 = one.set_index("metric"), two.set_index("metric")
    for m in ("IP", "IP*", "Cost"):
        per_seed = [float(v) for v in str(d2.loc[m, "seed_values_reference"]).split()]
        assert len(per_seed) == 2
        assert per_seed[0] == pytest.approx(d1.loc[m, "reference"], abs=0.005), m
        lb, ub = d2.loc[m, "seed_lb_reference"], d2.loc[m, "seed_ub_reference"]
        assert lb <= np.mean(per_seed) <= ub
    with pytest.raises(ValueError, match="distinct"):
        run_effect("mmd_length_scale", "lin_sep", tmp_path / "x.csv", seeds=(1, 1), **{k: v for k, v in TINY.items()
                                                                                      if k != "seed"})


def test_reuse_loads_matching_models_only(tmp_path):
    """Saved models with exactly the config the study would train are loaded (same numbers, nothing trained);
    a model with another config (here: other epochs) is not reused."""
    from ctbench.api import train_from_config
    from ctbench.paper_settings import model_config

    sizes = {k: v for k, v in TINY.items() if k != "seed"}
    paths = {}
    for obj in ("full", "vanilla"):
        m = train_from_config(model_config("lin_sep", "single", obj, 0, fidelity="reference", epochs=2))
        paths[f"{obj}_s0"] = tmp_path / f"{obj}.pt"
        m.save(paths[f"{obj}_s0"])
    fresh = run_effect("mmd_length_scale", "lin_sep", tmp_path / "a.csv", seeds=(0,), **sizes)
    again = run_effect("mmd_length_scale", "lin_sep", tmp_path / "b.csv", seeds=(0,), reuse=paths, **sizes)
    side = json.loads((tmp_path / "b.csv.json").read_text())
    assert side["n_models_trained"] == 0 and set(side["reused"]) == {"full_s0", "vanilla_s0"}
    # same seed and config: the same model up to float round-off (single-model vs population trainer)
    np.testing.assert_allclose(again["reference"], fresh["reference"], rtol=1e-5)
    other = run_effect("mmd_length_scale", "lin_sep", tmp_path / "c.csv", seeds=(0,), reuse=paths,
                       **{**sizes, "epochs": 3})
    side = json.loads((tmp_path / "c.csv.json").read_text())
    assert side["n_models_trained"] == 2 and side["reused"] == {}
    assert len(other) == len(METRICS)


def test_training_switch_reuses_the_final_models_for_its_reference_setting(tmp_path):
    """The reference value is the default: its CT is trained without an override, so the workflow's final CT (and
    the shared baseline of models/baseline/, also for the mutability experiment) is reused; only the alternative
    CT is trained."""
    from ctbench.api import train_from_config
    from ctbench.paper_settings import model_config

    sizes = {k: v for k, v in TINY.items() if k != "seed"}
    paths = {}
    for exp, obj in (("mutability", "full"), ("single", "vanilla")):
        m = train_from_config(model_config("lin_sep", exp, obj, 0, fidelity="reference", epochs=2))
        paths[f"{obj}_s0"] = tmp_path / f"{obj}.pt"
        m.save(paths[f"{obj}_s0"])
    run_effect("synthetic_mutability_zero_reg_adv", "lin_sep", tmp_path / "z.csv", seeds=(0,), reuse=paths,
               **sizes)
    side = json.loads((tmp_path / "z.csv.json").read_text())
    assert set(side["reused"]) == {"full_s0", "vanilla_s0"} and side["n_models_trained"] == 1
    trained = [m["config"] for m in side["models"] if m["config"]["fidelity_overrides"]]
    assert [c["fidelity_overrides"] for c in trained] == [{"synthetic_mutability_zero_reg_adv": True}]
    # the reference value is what `ctbench evaluate --constrained` gives for the same models (Table 1's Cost cell):
    # the shared BL, which has no mutability of its own, is searched under the dataset's protected features too
    from ctbench.evaluation.aggregate import reduction_table
    from ctbench.experiments.evaluation import run

    ev = run({"models": {"full": paths["full_s0"], "vanilla": paths["vanilla_s0"]}, "constrained": True,
              "settings": {"n_runs": TINY["n_runs"], "n_individuals": TINY["n_individuals"]}})
    cost = reduction_table(ev, "cost", kind="cost", avg_row=False)["reduction_pct"].iloc[0]
    z = pd.read_csv(tmp_path / "z.csv").set_index("metric")
    assert z.loc["Cost", "reference"] == pytest.approx(cost)


def test_reference_setting_read_from_the_evaluation_equals_the_evaluated_one(tmp_path):
    """Issue 21: the reference setting read from `ctbench evaluate`'s file of the reused final models (what the
    workflow passes) gives the table bit for bit as evaluating it; a file of another protocol is not read (the
    study evaluates and says why)."""
    from ctbench.api import train_from_config
    from ctbench.experiments import evaluation
    from ctbench.paper_settings import model_config

    sizes = {k: v for k, v in TINY.items() if k != "seed"}
    paths = {}
    for obj in ("full", "vanilla"):
        m = train_from_config(model_config("lin_sep", "single", obj, 0, fidelity="reference", epochs=2))
        paths[f"{obj}_s0"] = tmp_path / f"{obj}.pt"
        m.save(paths[f"{obj}_s0"])
    job = {"experiment": "single", "constrained": False,
           "models": {"full": paths["full_s0"], "vanilla": paths["vanilla_s0"]}}
    ev = tmp_path / "eval.parquet"
    evaluation.write(evaluation.run({**job, "settings": {"n_runs": 2, "n_individuals": 12}}), ev)
    other = tmp_path / "other.parquet"  # another protocol: 3 runs
    evaluation.write(evaluation.run({**job, "settings": {"n_runs": 3, "n_individuals": 12}}), other)
    evaluated = {}
    for switch in ("ce_step_size", "mmd_length_scale"):  # CT retrained under the paper value; evaluation-only
        fresh = run_effect(switch, "lin_sep", tmp_path / "a.csv", seeds=(0,), reuse=paths, **sizes)
        read = run_effect(switch, "lin_sep", tmp_path / "b.csv", seeds=(0,), reuse=paths, reference_evals={0: ev},
                          **sizes)
        assert json.loads((tmp_path / "b.csv.json").read_text())["reference_evaluations"] == {"0": str(ev)}
        evaluated[switch] = (tmp_path / "a.csv").read_bytes()
        assert evaluated[switch] == (tmp_path / "b.csv").read_bytes()
        pd.testing.assert_frame_equal(read, fresh, check_exact=True)
    run_effect("mmd_length_scale", "lin_sep", tmp_path / "c.csv", seeds=(0,), reuse=paths,
               reference_evals={0: other}, **sizes)
    assert "protocol" in json.loads((tmp_path / "c.csv.json").read_text())["reference_evaluations"]["0"]
    assert (tmp_path / "c.csv").read_bytes() == evaluated["mmd_length_scale"]
    # models that are not the reused ones (no reuse: trained here) are evaluated whatever file is given
    run_effect("mmd_length_scale", "lin_sep", tmp_path / "d.csv", seeds=(0,), reference_evals={0: ev}, **sizes)
    assert "not the final models" in json.loads((tmp_path / "d.csv.json").read_text())["reference_evaluations"]["0"]


def test_ip_star_per_run_paper_setting_derived_equals_evaluated(tmp_path, monkeypatch):
    """Issue 21: ip_star_per_run's paper setting taken from the reference rows (the other IP* column) gives the
    table bit for bit as searching again under the pooled protocol."""
    from ctbench.experiments import fidelity

    derived = run_effect("ip_star_per_run", "lin_sep", tmp_path / "a.csv", **TINY)
    side = json.loads((tmp_path / "a.csv.json").read_text())
    assert side["settings"]["paper"]["derived_from"] == "reference"
    monkeypatch.setattr(fidelity, "DERIVED", {})  # the old path: the paper setting searched again
    searched = run_effect("ip_star_per_run", "lin_sep", tmp_path / "b.csv", **TINY)
    assert "derived_from" not in json.loads((tmp_path / "b.csv.json").read_text())["settings"]["paper"]
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    pd.testing.assert_frame_equal(derived, searched, check_exact=True)
    assert derived.set_index("metric").loc["IP*", "delta"] != 0


def test_metrics_of_the_slim_frame_equal_the_recipes_on_the_whole_frame():
    """Issue 21: _metrics hands the recipes only the columns they read; the values and statistics are bitwise those
    of Table 1's recipes (reduction_table over pooled seeds, seed_level, validity_table) on the whole frame."""
    from ctbench.evaluation.aggregate import reduction_table, validity_table
    from ctbench.evaluation.seeds import pool_seeds, seed_level
    from ctbench.experiments.fidelity import _metrics

    rng = np.random.default_rng(3)
    n = 2 * 3 * 4 * 5 * 6  # objective × seed × run × λ × individual
    grid = np.array(np.meshgrid(["full", "vanilla"], [0, 1, 2], range(4), [0.1, 1.0, 5.0, 10.0, 0.5], range(6),
                                indexing="ij"), dtype=object).reshape(5, -1)
    df = pd.DataFrame({"dataset": "lin_sep", "model": grid[0], "objective": grid[0], "seed": grid[1].astype(int),
                       "run": grid[2].astype(int), "lambda_energy": grid[3].astype(float),
                       "individual": grid[4].astype(int), "valid": rng.random(n) < 0.8, "ip": rng.random(n),
                       "ip_star": np.where(rng.random(n) < 0.05, np.nan, rng.random(n)), "cost": rng.random(n),
                       "p_target": rng.random(n), "redundancy": rng.random(n)})
    got = _metrics(df, 0.5, "lin_sep")
    for metric, col in (("IP", "ip"), ("IP*", "ip_star"), ("Cost", "cost")):
        t = reduction_table(pool_seeds(df), col, kind=col, avg_row=False).iloc[0]
        sl = seed_level(df, col, kind=col).iloc[0]
        value, st = got[metric]
        assert np.isfinite(value) and value == t["reduction_pct"] and st["pm"] == t["pm"]
        assert (st["seed_lb"], st["seed_ub"], st["seed_values"]) == (sl["seed_lb"], sl["seed_ub"], sl["seed_values"])
    v = validity_table(df, avg_row=False)
    assert got["validity CT"][0] == v[v["objective"] == "full"]["validity"].iloc[0]


def test_reference_eval_option_is_checked():
    from ctbench.cli.study_cmds import _seed_paths

    assert _seed_paths(["0=a.parquet", "3=b.parquet"]) == {0: "a.parquet", 3: "b.parquet"}
    for bad, msg in ((["a.parquet"], "SEED=PATH"), (["x=a.parquet"], "SEED=PATH"), (["0="], "SEED=PATH"),
                     (["0=a", "0=b"], "twice")):
        with pytest.raises(SystemExit, match=msg):
            _seed_paths(bad)
