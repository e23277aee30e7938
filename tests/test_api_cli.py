"""Train → save → load → generate through the Python API and the CLI; config errors are clear."""

import json

import numpy as np
import pytest
import torch

from ctbench.api import load_model, train_from_config
from ctbench.cli import main
from ctbench.config import ConfigError, resolve_train_config

SMALL = {"data": {"name": "lin_sep"}, "training": {"epochs": 3, "nce": 100}, "seed": 7}


def test_api_roundtrip(tmp_path):
    trained = train_from_config(SMALL)
    path = trained.save(tmp_path / "m.pt")
    sidecar = json.loads((tmp_path / "m.pt.json").read_text())
    assert sidecar["fidelity"]["mode"] == "reference" and sidecar["fidelity"]["ce_step_size"] == 0.1
    assert sidecar["seed"] == 7 and sidecar["provenance"]["ctbench_version"]
    assert "git_commit" in sidecar["provenance"] and sidecar["config"]["training"]["epochs"] == 3
    assert len(sidecar["log"]["epoch"]) == 3
    loaded = load_model(path)
    X = np.random.default_rng(0).normal(size=(20, 2)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict_proba(X), trained.predict_proba(X))
    target = 1 - loaded.predict(X)
    a = loaded.counterfactuals(X, target)
    b = trained.counterfactuals(X, target)
    assert torch.equal(a.counterfactual, b.counterfactual)
    assert loaded.fidelity == trained.fidelity


def test_mutability_protected_and_synthetic_rule():
    trained = train_from_config({**SMALL, "mutability": "protected"})
    assert trained.constraints.mutability == ["none", "both"]
    # the reference default keeps the configured λ's (issue 11); the run records' zeroed λ's are a switch
    assert trained.meta["objective_effective"]["lambda_reg"] == 0.01 and not trained.meta["notes"]
    zeroed = train_from_config({**SMALL, "mutability": "protected",
                                "fidelity_overrides": {"synthetic_mutability_zero_reg_adv": True}})
    assert zeroed.meta["objective_effective"]["lambda_reg"] == 0.0 and zeroed.meta["notes"]
    X = np.array([[0.5, 0.5]], dtype=np.float32)
    res = trained.counterfactuals(X, 1 - trained.predict(X))
    assert float(res.counterfactual[0, 0]) == 0.5


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="training.epoch"):
        resolve_train_config({"training": {"epoch": 3}})
    with pytest.raises(ConfigError, match="training.lr: .fast. is text; it must be a number > 0"):
        resolve_train_config({"training": {"lr": "fast"}})
    with pytest.raises(ConfigError, match="device"):
        resolve_train_config({"device": "tpu"})


def test_cli_train_generate(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("data: {name: lin_sep}\ntraining: {epochs: 2, nce: 50}\n")
    out = tmp_path / "model.pt"
    assert main(["train", "--config", str(cfg), "--out", str(out), "--set", "seed=3", "--quiet"]) == 0
    assert json.loads((tmp_path / "model.pt.json").read_text())["seed"] == 3
    np.save(tmp_path / "x.npy", np.zeros((4, 2), dtype=np.float32))
    assert main(["generate", "--model", str(out), "--factuals", str(tmp_path / "x.npy"), "--out",
                 str(tmp_path / "cf.csv")]) == 0
    import pandas as pd

    cf = pd.read_csv(tmp_path / "cf.csv")
    assert list(cf.columns[:4]) == ["target", "mature", "steps", "prob_target"] and len(cf) == 4
    assert main(["train", "--config", str(cfg), "--out", str(out), "--set", "training.epoch=1"]) == 2
    assert "unknown key" in capsys.readouterr().err


def test_cli_numbers_in_overrides_and_divergence_saves_nothing(tmp_path, capsys):
    from ctbench.config import parse_value

    assert parse_value("1e-3") == 0.001 and parse_value("[1e-1, 5]") == [0.1, 5] and parse_value("ecco") == "ecco"
    out = tmp_path / "m.pt"
    rc = main(["train", "--out", str(out), "--set", "training.epochs=2", "--set", "objective.lambda_div=1e300",
               "--set", "objective.lambda_reg=1e300", "--quiet"])
    assert rc == 1 and "non-finite loss" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # no model, no sidecar, no temp file


def test_train_population_from_configs_matches_single_runs_and_reports_failures():
    from ctbench.api import FailedTraining, train_population_from_configs

    base = {"data": {"name": "lin_sep"}, "training": {"epochs": 2}}
    configs = {"ct0": base, "ct0_again": dict(base), "bl1": {**base, "seed": 1, "objective": {"name": "vanilla"}},
               "boom": {**base, "seed": 2, "objective": {"lambda_div": 1e300}}}
    out = train_population_from_configs(configs)
    assert out["ct0"] is out["ct0_again"]                        # identical configs train once
    assert isinstance(out["boom"], FailedTraining) and "diverged" in out["boom"].error
    # ct0 and boom shared one program; bl1 (no counterfactual tuples) has its own, so that its sums never run over
    # rows padded for the CT members (ctbench.training.members.group_key)
    assert out["ct0"].meta["population"]["size"] == 2 and out["bl1"].meta["population"]["size"] == 1
    single = train_from_config(base)
    for p, q in zip(single.model.parameters(), out["ct0"].model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)   # float32: equal up to round-off
    with pytest.raises(ConfigError, match="member 'bad'"):      # every config is checked before training
        train_population_from_configs({"ok": base, "bad": {**base, "training": {"epochs": 0}}})


def test_cli_trains_several_models_as_a_population(tmp_path, capsys):
    good = json.dumps({"data": {"name": "lin_sep"}, "training": {"epochs": 2}})
    bad = json.dumps({"data": {"name": "lin_sep"}, "training": {"epochs": 2}, "objective": {"lambda_div": 1e300}})
    a, b, c = (tmp_path / f"{n}.pt" for n in "abc")
    args = ["train", "--config-json", good, "--out", str(a), "--config-json", good, "--out", str(b),
            "--config-json", bad, "--out", str(c), "--set", "seed=4", "--quiet"]
    assert main(args) == 1                                       # one member diverged: the run fails ...
    assert a.exists() and b.exists() and not c.exists()          # ... but the others are saved, it is not
    assert "not saved" in capsys.readouterr().err
    assert load_model(a).config["seed"] == 4
    assert main(["train", "--config-json", good, "--out", str(a), "--out", str(b)]) == 2  # one --out per config
