"""Small evaluation jobs grouped per dataset (``evaluation.group_seeds``, ctbench.experiments.seed_groups, ``ctbench
each``): the plan, the rules' DAG, and the outputs, which must be those of the per-seed commands bit for bit."""

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml

from ctbench.cli import main
from ctbench.errors import ConfigError
from ctbench.workflow import Workflow

ROOT = Path(__file__).resolve().parent.parent
SMOKE = yaml.safe_load((ROOT / "workflow" / "config" / "smoke.yaml").read_text())
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
SMALL_DATA = "data.params={n_draws: 2000, n_train: 300, n_val: 100, n_test: 100}"


def _cfg(group=True, seeds=(0, 2), **change):
    return {**SMOKE, "seeds": list(seeds), "training": {"epochs": 3, "per_seed": ["circles"]},
            "evaluation": {**SMOKE["evaluation"], "group_seeds": group},
            "retrain": {**SMOKE["retrain"], "seeds": [5, 6][:len(seeds)]}, **change}


def test_groups_hold_the_per_seed_jobs_of_the_datasets_trained_all_seeds_at_once():
    w = Workflow(_cfg())
    # circles trains one job per seed: its evaluations stay per seed; lin_sep's are grouped
    assert w.seed_groups("evaluation") == (["circles"], ["lin_sep"], [0, 2])
    assert w.seed_groups("robustness")[1:] == (["lin_sep"], [0, 2])
    assert w.seed_groups("retrain_evaluation") == ([], ["lin_sep"], [5, 6])  # retrained in one job: all grouped
    for kind, fields in (("evaluation", ("experiment", "dataset")), ("robustness", ("dataset",)),
                         ("attribution", ("dataset",)), ("retrain_evaluation", ("experiment", "dataset"))):
        groups = w.jobs(f"{kind}_group")
        assert groups, kind
        grouped = [j for j in w.jobs(kind) if j["dataset"] == "lin_sep"]
        # the members are the per-seed plan's own jobs (the same dicts), each in exactly one group, in plan order
        assert [m for g in groups for m in g["members"]] == grouped
        for g in groups:
            assert all(m[f] == g[f] for m in g["members"] for f in fields)
            assert g["seeds"] == [m["seed"] for m in g["members"]]
            assert g["models"] == list(dict.fromkeys(p for m in g["members"] for p in m["models"].values()))
            assert w.job(f"{kind}_group", {f: g[f] for f in fields}) is g


@pytest.mark.parametrize("cfg", [_cfg(group=False), _cfg(group=None), _cfg(seeds=(0,)), {**SMOKE}],
                         ids=["off", "null", "one-seed", "smoke"])
def test_without_the_switch_or_with_one_seed_every_job_stays_per_seed(cfg):
    w = Workflow(cfg)
    for kind in ("evaluation", "robustness", "attribution", "retrain_evaluation"):
        assert w.jobs(f"{kind}_group") == []
        assert w.seed_groups(kind)[1] == []


def test_bad_group_seeds_value_is_refused():
    with pytest.raises(ConfigError, match="evaluation.group_seeds"):
        Workflow(_cfg(group="yes")).jobs("evaluation_group")


# -- ctbench each: the same bits as one process per job ------------------------------------------------------------
@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("models")
    for name, seed in (("a", 0), ("b", 1)):
        assert main(["train", "--out", str(d / f"{name}.pt"), "--set", "training.epochs=2", "--set",
                     "training.nce=50", "--set", SMALL_DATA, "--set", f"seed={seed}", "--quiet"]) == 0
    return {"a": d / "a.pt", "b": d / "b.pt"}


def _ctbench(*argv: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-P", "-m", "ctbench", *argv], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]


def _frame(path: Path) -> pd.DataFrame:
    f = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    return f.drop(columns=[c for c in f.columns if c == "seconds"])


@pytest.mark.parametrize("command", ["evaluate", "robustness", "attribution"])
def test_each_writes_the_per_seed_commands_outputs_bit_for_bit(command, models, tmp_path):
    """Two jobs (other models, other seeds) as two ``ctbench COMMAND`` processes and as one ``ctbench each``."""
    def args(name, seed, out):
        if command == "evaluate":
            return ["--model", f"full={models[name]}", "--set", "n_runs=2", "--set", "lambdas=[0.5, 1.0]", "--set",
                    f"seed={seed}", "--set", "n_individuals=10", "--experiment", "single", "--out", str(out),
                    "--quiet"]
        extra = ["--rounds", "2", "--samples", "20", "--steps", "4"] if command == "attribution" else []
        return ["--model", f"full={models[name]}", *extra, "--seed", str(seed), "--experiment", "single",
                "--out", str(out)]

    suffix = ".parquet" if command == "evaluate" else ".csv"
    jobs = [("a", 0), ("b", 1)]
    for i, (name, seed) in enumerate(jobs):
        _ctbench(command, *args(name, seed, tmp_path / "alone" / f"{i}{suffix}"))
    _ctbench("each", command, "--jobs", json.dumps([args(n, s, str(tmp_path / "each" / f"{i}{suffix}"))
                                                    for i, (n, s) in enumerate(jobs)]))
    for i in range(len(jobs)):
        alone, each = _frame(tmp_path / "alone" / f"{i}{suffix}"), _frame(tmp_path / "each" / f"{i}{suffix}")
        assert len(alone) > 0
        pd.testing.assert_frame_equal(each, alone, check_exact=True)
        # each job's sidecar is written as by the command alone
        assert (tmp_path / "each" / f"{i}{suffix}.json").exists() == (tmp_path / "alone" / f"{i}{suffix}.json").exists()
    # the two jobs are not the same job (a member that ran the first job's arguments twice would fail above)
    assert not _frame(tmp_path / "alone" / f"0{suffix}").equals(_frame(tmp_path / "alone" / f"1{suffix}"))


@pytest.mark.parametrize("jobs, needle", [
    ("not json", "not JSON"),
    ("[]", "non-empty list"),
    ('[["--model"], "x"]', "non-empty list"),
    ('[["--model", "full=@m", "--experiment", "single", "--out", "@o"], '
     '["--model", "full=@m", "--experiment", "single", "--out", "@o"]]', "same --out"),
    ('[["--model", "full=@m", "--experiment", "single", "--out", "@o"], '
     '["--model", "full=@m", "--experiment", "single", "--out", "@m"]]', "overwrite the input"),
])
def test_each_refuses_bad_jobs_before_running_any(jobs, needle, models, tmp_path, capsys):
    jobs = jobs.replace("@m", str(models["a"])).replace("@o", str(tmp_path / "out" / "e.parquet"))
    assert main(["each", "evaluate", "--jobs", jobs]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed next to this Python")
def test_dry_run_groups_the_seeds_of_datasets_trained_at_once(tmp_path):
    for name in ("Snakefile", "workflow", "envs", "claims.yaml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([str(SNAKEMAKE), "-n", "-p", "--cores", "1", "--configfile", "workflow/config/smoke.yaml",
                        "--config", "seeds=[0, 2]", "training={per_seed: [circles]}"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    jobs = []
    for line in out.splitlines():
        m = re.match(r"(?:local)?rule (\w+):$", line)
        if m:
            jobs.append({"rule": m.group(1)})
        elif jobs and line.startswith("    ") and ": " in line:
            k, v = line.strip().split(": ", 1)
            jobs[-1].setdefault(k, v)
        elif jobs and "ctbench each" in line:
            jobs[-1]["shell"] = line
    count = Counter(j["rule"] for j in jobs)
    experiments = len(SMOKE["experiments"])
    # lin_sep (trained all seeds at once): one job per experiment; circles (per seed): one per experiment and seed
    assert count["evaluate_seeds"] == experiments and count["evaluate"] == 2 * experiments
    assert all(j["wildcards"].startswith("experiment=") and "circles" in j["wildcards"]
               for j in jobs if j["rule"] == "evaluate")
    single = next(j for j in jobs if j["rule"] == "evaluate_seeds" and j["wildcards"] ==
                  "experiment=single, dataset=lin_sep")
    assert sorted(single["output"].split(", ")) == [f"results/smoke/eval/single/lin_sep_s{s}.parquet" for s in (0, 2)]
    assert set(single["input"].split(", ")) == {f"results/smoke/models/{f}/lin_sep/{o}_s{s}.pt" for s in (0, 2)
                                               for f, o in (("single", "full"), ("baseline", "vanilla"))}
    assert single["benchmark"] == "results/smoke/benchmarks/evaluate_seeds/single_lin_sep.tsv"
    assert "ctbench each evaluate --jobs" in single["shell"]
    if SMOKE["robustness"]["enabled"]:
        assert count["robustness_seeds"] == 1
    if SMOKE["attribution"]["enabled"]:
        assert count["attribution_seeds"] == 1


TINY = {
    "profile": "tiny", "results": "res", "datasets": ["lin_sep"], "seeds": [0, 1],
    "experiments": ["single", "mutability"],
    "data_params": {"lin_sep": {"n_draws": 1000, "n_train": 100, "n_val": 40, "n_test": 40}},
    "training": {"epochs": 1}, "training_overrides": {"training.nce": 10},
    "evaluation": {"n_runs": 1, "lambdas": [1.0], "n_individuals": {"synthetic": 3, "tabular": 3, "vision": 3},
                   "seed": 0, "group_seeds": True},
    "robustness": {"enabled": True}, "attribution": {"enabled": True, "rounds": 1, "samples": 10, "steps": 2},
    "grids": {"enabled": False}, "tune": {"enabled": False}, "prop31": {"enabled": False},
    "figures": {"enabled": False}, "fidelity_study": {"enabled": False}, "consistency": {"enabled": False},
    "book": {"enabled": False}, "retrain": {"enabled": False},
}


@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed next to this Python")
def test_grouped_rules_run_write_the_per_seed_rules_files_and_rerun_on_a_setting(tmp_path):
    """A real tiny run with the switch on and one with it off: the same evaluation, robustness and attribution
    files (the grouped jobs are the per-seed jobs); then a changed setting reruns the group, nothing else."""
    for name in ("Snakefile", "workflow", "envs", "claims.yaml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "PATH": os.pathsep.join([str(SNAKEMAKE.parent), os.environ.get("PATH", "")]), "OMP_NUM_THREADS": "1"}
    files = ["eval/single/lin_sep_s0.parquet", "eval/single/lin_sep_s1.parquet", "robustness/lin_sep_s1.csv",
             "attribution/lin_sep_s0.csv"]

    def snakemake(results, group, *extra, lambdas=(1.0,)):
        evaluation = {**TINY["evaluation"], "group_seeds": group, "lambdas": list(lambdas)}
        (tmp_path / f"{results}.yaml").write_text(yaml.safe_dump({**TINY, "results": results,
                                                                  "evaluation": evaluation}))
        p = subprocess.run([str(SNAKEMAKE), *[f"{results}/{f}" for f in files], *extra, "--cores", "1",
                            "--configfile", f"{results}.yaml"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=900)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        return Counter(m.group(1) for m in re.finditer(r"^(?:local)?rule (\w+):$", p.stdout + p.stderr, re.M))

    grouped, plain = snakemake("res", True), snakemake("res2", False)
    assert grouped == {"data": 1, "train_final": 1, "evaluate_seeds": 1, "robustness_seeds": 1,
                       "attribution_seeds": 1}
    assert plain == {"data": 1, "train_final": 1, "evaluate": 2, "robustness": 1, "attribution": 1}
    for f in files:
        pd.testing.assert_frame_equal(_frame(tmp_path / "res" / f), _frame(tmp_path / "res2" / f), check_exact=True)
    assert (tmp_path / "res/benchmarks/evaluate_seeds/single_lin_sep.cpu.json").is_file()
    # a changed evaluation setting reruns the evaluation group only (its params hold every member's job)
    assert snakemake("res", True, "-n", lambdas=(0.5,)) == {"evaluate_seeds": 1}
