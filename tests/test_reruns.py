"""Snakemake reruns what a changed setting or a changed library module affects, and nothing else.

Every rule's params carry its job's full resolved settings (functions of the wildcards only, which Snakemake records
with each output) and ``code``, the fingerprint of the ctbench source the rule runs (:mod:`ctbench.code_version`).
One real run of a tiny profile in a tmp folder (up to the evaluations and attributions: the report and the book
read those files, so Snakemake reruns them whenever one is remade), then dry runs (``snakemake -n``) with one setting
changed each: the planned jobs and their reasons are read from the dry run's output. (``--list-changes params`` is
not used: Snakemake 9.27 lists every output there, changed or not.)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ctbench.code_version import closure, fingerprint_of

ROOT = Path(__file__).resolve().parent.parent
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

TINY = {
    "profile": "tiny", "datasets": ["lin_sep"], "seeds": [0], "experiments": ["single", "mutability"],
    "data_params": {"lin_sep": {"n_draws": 1000, "n_train": 100, "n_val": 40, "n_test": 40}},
    "training": {"epochs": 1}, "training_overrides": {"training.nce": 10},
    "evaluation": {"n_runs": 1, "lambdas": [1.0], "n_individuals": {"synthetic": 3, "tabular": 3, "vision": 3},
                   "seed": 0},
    "robustness": {"enabled": False}, "attribution": {"enabled": True, "rounds": 1, "samples": 10, "steps": 2},
    "grids": {"enabled": False}, "tune": {"enabled": False}, "prop31": {"enabled": False},
    "figures": {"enabled": False}, "fidelity_study": {"enabled": False}, "consistency": {"enabled": False},
    "book": {"enabled": False},
}


#: the files the tiny run makes and every dry run asks for
TARGETS = ["res/eval/single/lin_sep_s0.parquet", "res/eval/mutability/lin_sep_s0.parquet",
           "res/attribution/lin_sep_s0.csv"]


def _snakemake(wd: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "PATH": os.pathsep.join([str(SNAKEMAKE.parent), os.environ.get("PATH", "")]), "OMP_NUM_THREADS": "1"}
    p = subprocess.run([str(SNAKEMAKE), *args, "--cores", "1", "--configfile", "tiny.yaml"], cwd=wd, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    return p.stdout + p.stderr


def _dry_run(wd: Path, *config: str) -> dict[str, str]:
    """Rule → the reason Snakemake gives for running it, in a dry run with ``--config`` values ``config``."""
    out = _snakemake(wd, "-n", *TARGETS, *(["--config", *config] if config else []))
    reasons, rule = {}, None
    for line in out.splitlines():
        if m := re.match(r"^(?:local)?rule (\w+):$", line):
            rule = m.group(1)
            reasons.setdefault(rule, "")
        elif rule and line.strip().startswith("reason:"):
            reasons[rule] += line.strip()
    return reasons


def _planned(wd: Path, *config: str) -> set[str]:
    """The rules a dry run plans with ``--config`` values ``config``."""
    return set(_dry_run(wd, *config))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A finished run of the tiny profile (data, training, evaluation, attribution)."""
    if not SNAKEMAKE.exists():
        pytest.skip("snakemake is not installed next to this Python")
    wd = tmp_path_factory.mktemp("reruns")
    for name in ("Snakefile", "workflow", "envs", "claims.yaml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, wd / name)
    (wd / "tiny.yaml").write_text(yaml.safe_dump({**TINY, "results": "res"}))
    _snakemake(wd, *TARGETS)
    assert _planned(wd) == set()  # nothing to do after a finished run
    return wd


def test_evaluation_settings_rerun_evaluation_and_downstream_not_training(tiny_run):
    planned = _planned(tiny_run, "evaluation={n_runs: 2, lambdas: [1.0], seed: 0, "
                                 "n_individuals: {synthetic: 3, tabular: 3, vision: 3}}")
    assert planned == {"evaluate"}


def test_training_settings_rerun_training_and_everything_downstream(tiny_run):
    reasons = _dry_run(tiny_run, "training={epochs: 2}")
    assert set(reasons) == {"train_final", "evaluate", "attribution"}
    assert "Params have changed" in reasons["train_final"] and "Params" not in reasons["evaluate"]
    assert _planned(tiny_run, "training_overrides={training.nce: 12}") == {"train_final", "evaluate", "attribution"}


def test_fidelity_overrides_rerun_what_they_affect(tiny_run):
    # a switch that shapes the data (ctbench.fidelity.DATA_SWITCHES) reruns the data rule and all it feeds
    reasons = _dry_run(tiny_run, "fidelity_overrides={domain_n_sigma: 4.0}")
    assert set(reasons) == {"data", "train_final", "evaluate", "attribution"}
    assert "Params have changed" in reasons["data"]
    # a training/search switch reruns the models and what reads them, not the data
    assert _planned(tiny_run, "fidelity_overrides={ce_step_size: 0.25}") == {"train_final", "evaluate",
                                                                             "attribution"}


def test_attribution_settings_rerun_attribution_report_only(tiny_run):
    assert _planned(tiny_run, "attribution={enabled: true, rounds: 2, samples: 10, steps: 2}") == {"attribution"}


def test_jobs_count_their_own_cpu(tiny_run):
    """The tiny run's training, evaluation and attribution jobs each left their own CPU record beside Snakemake's
    (``X.cpu.json``, ctbench.cpu_record), stage-times uses them, and they count at least what Snakemake's sampled
    records count; the data jobs (command code unchanged by a regeneration) keep Snakemake's record only."""
    import pandas as pd

    from ctbench.cpu_record import read, record_path
    from ctbench.report.tables.stage_times import stage_times

    bench = tiny_run / "res" / "benchmarks"
    own = snakemake = 0.0
    for stage in ("train_final", "evaluate", "attribution"):
        tsvs = sorted((bench / stage).glob("*.tsv"))
        assert tsvs, stage
        for tsv in tsvs:
            rec = read(record_path(tsv))
            assert rec is not None and rec["cpu_seconds"] > 0.5 and rec["max_rss_mb"] > 100, tsv
            own += rec["cpu_seconds"]
            snakemake += float(pd.read_csv(tsv, sep="\t")["cpu_time"].iloc[0])
    assert own >= snakemake
    assert list((bench / "data").glob("*.tsv")) and not list((bench / "data").glob("*.cpu.json"))
    st = stage_times(bench).set_index("stage")
    assert (st.loc[["train_final", "evaluate", "attribution"], "own_records"]
            == st.loc[["train_final", "evaluate", "attribution"], "jobs"]).all()
    assert st.loc["data", "own_records"] == 0


# --------------------------------------------------------------------------------------------------- code fingerprints


def test_code_fingerprint_follows_the_import_closure(tmp_path):
    """Editing a module changes the fingerprint of every stage whose import closure holds it, and no other."""
    pkg = tmp_path / "ctbench"
    shutil.copytree(ROOT / "ctbench", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    train, report = "ctbench.cli.train_cmds", "ctbench.cli.report_cmds"
    before = {e: fingerprint_of((e,), pkg) for e in (train, report)}
    train_mods, report_mods = set(closure(train, pkg)), set(closure(report, pkg))
    assert "ctbench.training.trainer" in train_mods and not any(m.startswith("ctbench.report") for m in train_mods)
    only_report = sorted(m for m in report_mods - train_mods if m.startswith("ctbench.report."))[0]
    assert "ctbench.training.trainer" in report_mods  # the report reads models: a trainer change reruns it too

    def edit(module: str, text: str) -> None:
        f = closure(module, pkg)[module]
        f.write_text(f.read_text() + text)

    edit(only_report, "\n# a comment\n\n\ndef _added():\n    \"\"\"a docstring\"\"\"\n")
    after = {e: fingerprint_of((e,), pkg) for e in (train, report)}
    assert after[train] == before[train] and after[report] != before[report]
    edit(only_report, "# only a comment\n")  # comments and docstrings do not count
    assert fingerprint_of((report,), pkg) == after[report]
    edit("ctbench.training.trainer", "\nX_ADDED = 1\n")
    assert fingerprint_of((train,), pkg) != before[train] and fingerprint_of((report,), pkg) != after[report]
    with pytest.raises(ValueError, match="no module"):
        fingerprint_of(("ctbench.cli.nothing",), pkg)


def test_benchmark_code_reruns_no_paper_stage():
    """`ctbench bench` has a command module of its own: no stage of the workflow reaches the benchmark code, so a
    change of it (e.g. a GPU path) leaves every rule's code fingerprint, and so the committed result set, as it is."""
    stages = [f"ctbench.cli.{m}" for m in ("train_cmds", "data_cmds", "eval_cmds", "grid_cmds", "figure_cmds",
                                            "study_cmds", "report_cmds", "report_figure_cmds")]
    bench = {"ctbench.experiments.bench", "ctbench.experiments.bench_population", "ctbench.cli.bench_cmds"}
    for stage in stages:
        assert not bench & set(closure(stage)), stage
    assert {"ctbench.experiments.bench", "ctbench.experiments.bench_population"} <= set(
        closure("ctbench.cli.bench_cmds"))


def test_unlock_needs_no_data(tmp_path):
    """`snakemake --unlock` after a killed run runs no job, so it works without the data directory (before, the
    start-up check refused it: "data file adult/adult.data not found", and the lock stayed)."""
    if not SNAKEMAKE.exists():
        pytest.skip("snakemake is not installed next to this Python")
    for name in ("Snakefile", "workflow", "envs", "claims.yaml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump({**TINY, "datasets": ["adult"], "results": "res"}))
    (tmp_path / ".snakemake" / "locks").mkdir(parents=True)
    (tmp_path / ".snakemake" / "locks" / "0.output.lock").write_text(str(tmp_path / "res" / "x") + "\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "CTBENCH_DATA": str(tmp_path / "no-data-here")}
    p = subprocess.run([str(SNAKEMAKE), "--unlock", "--cores", "1", "--configfile", "tiny.yaml"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert not list((tmp_path / ".snakemake" / "locks").glob("*.lock"))
    # the check still guards every real run: the same config without its data stops at start-up
    p = subprocess.run([str(SNAKEMAKE), "-n", "--cores", "1", "--configfile", "tiny.yaml"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and "adult" in p.stdout + p.stderr
