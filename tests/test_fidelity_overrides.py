"""The run's fidelity overrides reach every stage that draws data, trains or searches: the data rule, Figure 1, the
fidelity study (for every switch but the one it varies) and both parts of the consistency study. Before, these
stages followed the fidelity mode only, so a run with ``fidelity_overrides: {blob_centers: calibrated}`` drew their LS
data at the other centres."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from ctbench.data import load_dataset
from ctbench.experiments import consistency, fidelity, figure_runs
from ctbench.fidelity import resolve_fidelity

ROOT = Path(__file__).resolve().parent.parent
OVERRIDES = {"blob_centers": "calibrated", "ce_step_size": 0.2}
SMALL = {"n_draws": 600, "n_train": 200, "n_val": 40, "n_test": 100}


def _smoke(**extra) -> dict:
    config = yaml.safe_load((ROOT / "workflow" / "config" / "smoke.yaml").read_text())
    return {**config, **extra}


def test_every_stage_job_carries_the_runs_overrides():
    config = _smoke(fidelity_overrides=OVERRIDES)
    config["consistency"] = {**config.get("consistency", {}), "enabled": True,
                             "ct": {**config.get("consistency", {}).get("ct", {}), "enabled": True,
                                    "datasets": ["lin_sep"]}}
    config["datasets"] = sorted({*config["datasets"], "lin_sep"})
    config["fidelity_study"] = {**config.get("fidelity_study", {}), "enabled": True}
    fig = [j for j in figure_runs.jobs(config) if j["figure"] == "figure1"]
    assert fig and fig[0]["fidelity_overrides"] == OVERRIDES and fig[0]["fidelity"] == config["fidelity"]
    effects = fidelity.jobs(config)
    assert effects and all(j["fidelity_overrides"] == OVERRIDES for j in effects)
    parts = {j["part"] for j in consistency.jobs(config)}
    assert "ct" in parts
    for j in consistency.jobs(config):
        s = consistency.resolve_settings(j["settings"], j["part"])
        assert (s["fidelity"], s["fidelity_overrides"]) == (config["fidelity"], OVERRIDES)
    # without overrides the jobs say so (and the paper profile's jobs are what they were)
    assert all(j["fidelity_overrides"] == {} for j in fidelity.jobs(_smoke(fidelity_study={"enabled": True})))


def test_data_prepare_draws_with_the_overrides(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = {}
    for name, over in (("ref", "{}"), ("cal", json.dumps({"blob_centers": "calibrated"}))):
        p = subprocess.run([sys.executable, "-m", "ctbench", "data", "prepare", "lin_sep", "--params",
                            json.dumps(SMALL), "--fidelity-overrides", over, "--out", str(tmp_path / f"{name}.json")],
                           env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        out[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert out["ref"]["meta"]["blob_centers"] == "reference" and out["ref"]["fidelity_overrides"] == {}
    assert out["cal"]["meta"]["blob_centers"] == "calibrated"
    assert out["cal"]["fidelity_overrides"] == {"blob_centers": "calibrated"}
    assert out["cal"]["domain"] != out["ref"]["domain"]
    bad = subprocess.run([sys.executable, "-m", "ctbench", "data", "prepare", "lin_sep", "--fidelity-overrides",
                          '{"blob_centres": 1}', "--out", str(tmp_path / "bad.json")], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "blob_centres" in bad.stderr and not (tmp_path / "bad.json").exists()


def test_consistency_ct_part_trains_on_the_overridden_data():
    s = consistency.resolve_settings({"n_models": 2, "epochs": 1, "data_params": SMALL,
                                      "fidelity_overrides": OVERRIDES}, "ct")
    data, _, fid, members, _, _, info = consistency._members(
        "ct", "lin_sep", 0, s, lambda n: consistency.retraining_plan(0, 2, n, ["rs"]))
    want = load_dataset("lin_sep", fidelity=resolve_fidelity("reference", OVERRIDES), **SMALL)
    np.testing.assert_array_equal(data.X_train, want.X_train)
    assert (fid.blob_centers, fid.ce_step_size) == ("calibrated", 0.2)
    assert info["configs"]["CT"]["fidelity_overrides"] == OVERRIDES


def test_consistency_black2022_box_follows_the_runs_fidelity():
    box = {}
    for mode in ("reference", "paper"):
        df = consistency.run({"part": "black2022", "dataset": "moons", "seed": 0, "settings": {
            "methods": ["min_l2"], "n_models": 2, "epochs": 1, "n_factuals": 5, "data_params": SMALL,
            "fidelity": mode}})
        box[mode] = df.attrs["meta"]["elastic_net_box"]
    assert box == {"reference": "art", "paper": "feature"}  # the presets' elastic_net_box
    with pytest.raises(ValueError, match="blob_centres"):
        consistency.resolve_settings({"fidelity_overrides": {"blob_centres": 1}})


def test_figure1_draws_its_data_with_the_overrides():
    t = figure_runs.figure1(seed=0, epochs=1, fidelity_overrides={"blob_centers": "calibrated"})
    want = load_dataset("lin_sep", fidelity=resolve_fidelity("reference", {"blob_centers": "calibrated"}))
    np.testing.assert_array_equal(t.attrs["train"][0], want.X_train)
    assert t.attrs["meta"]["settings"]["fidelity_overrides"] == {"blob_centers": "calibrated"}
    assert t.attrs["meta"]["fidelity_resolved"]["blob_centers"] == "calibrated"


TINY = {"seed": 0, "epochs": 2, "n_runs": 2, "n_individuals": 12}


def test_fidelity_study_keeps_the_other_overrides_and_varies_its_own_switch():
    plain = fidelity.run_effect("mmd_length_scale", "lin_sep", **TINY)
    own = fidelity.run_effect("mmd_length_scale", "lin_sep", **TINY, fidelity_overrides={"mmd_length_scale": 0.5})
    other = fidelity.run_effect("mmd_length_scale", "lin_sep", **TINY,
                                fidelity_overrides={"blob_centers": "calibrated"})
    # an override of the studied switch is what the study varies: the same table
    np.testing.assert_array_equal(plain[["reference", "paper"]].to_numpy(), own[["reference", "paper"]].to_numpy())
    # another switch's override stays on in both settings: other data, other models, other numbers
    assert other.attrs["meta"]["fidelity_overrides"] == {"blob_centers": "calibrated"}
    assert other.attrs["meta"]["settings"]["paper"]["fidelity"]["blob_centers"] == "calibrated"
    assert other.attrs["meta"]["settings"]["reference"]["fidelity"]["blob_centers"] == "calibrated"
    assert not np.array_equal(plain["reference"].to_numpy(), other["reference"].to_numpy())
