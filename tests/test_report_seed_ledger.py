"""The per-seed ledger in a job of its own (issue 21): ``ctbench report-seed-ledger`` judges every claim per training
seed into the report folder, ``ctbench report --seed-ledger`` reads those verdicts for the seed shares without
computing them (and keeps the ledger's files), the files are those a report run by hand writes, a failing report
removes only what it wrote, and the workflow runs the ledger before the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from seed_files import eval_file
from test_claims_seeds import CLAIMS, REDUCTIONS

from ctbench.cli import main

ROOT = Path(__file__).resolve().parent.parent
LEDGER_FILES = ("verdicts_seeds.csv", "verdicts_seeds.md", "table1_seeds.csv")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("ledger_inputs")
    claims = d / "claims.yaml"
    claims.write_text(yaml.safe_dump({"version": 2, "claims": CLAIMS}, sort_keys=False))
    evals = [eval_file(d, ds, s, red[s]) for s in range(5) for ds, red in REDUCTIONS.items()]
    retrain = [eval_file(d, ds, s, red[s]) for s in range(5, 8) for ds, red in REDUCTIONS.items()]
    return {"claims": str(claims), "eval": evals, "retrain": retrain}


def _ledger(inputs, out: Path) -> list[str]:
    return ["report-seed-ledger", "--eval", *inputs["eval"], "--retrain-eval", *inputs["retrain"],
            "--claims", inputs["claims"], "--out", str(out)]


def _report(inputs, out: Path, *extra: str) -> list[str]:
    return ["report", "--eval", *inputs["eval"], "--retrain-eval", *inputs["retrain"], "--claims", inputs["claims"],
            "--n-boot", "20", "--published", "none", *extra, "--out", str(out)]


def test_the_ledger_job_writes_the_per_seed_ledger_and_the_report_reads_it(inputs, tmp_path, monkeypatch):
    by_hand, job = tmp_path / "hand", tmp_path / "job"
    assert main(_report(inputs, by_hand)) == 0  # a report run by hand judges per seed itself
    assert main(_ledger(inputs, job)) == 0
    manifest = json.loads((job / "seed_ledger.json").read_text())
    assert manifest["written"] == list(LEDGER_FILES) and manifest["seeds"] == list(range(8))
    assert manifest["provenance"]["ctbench_version"]
    for name in LEDGER_FILES:  # the same bytes as the report's own judging
        assert (job / name).read_bytes() == (by_hand / name).read_bytes(), name
    stamps = {n: (job / n).stat().st_mtime_ns for n in LEDGER_FILES}

    import ctbench.report.claims.seeds as seeds

    def not_here(*a, **k):
        raise AssertionError("the report judged per seed although the ledger job had")

    monkeypatch.setattr(seeds, "seed_reports", not_here)
    assert main(_report(inputs, job, "--stages", "--seed-ledger", str(job / "seed_ledger.json"))) == 0
    assert (job / "verdicts.csv").read_bytes() == (by_hand / "verdicts.csv").read_bytes()  # the seed shares
    assert {n: (job / n).stat().st_mtime_ns for n in LEDGER_FILES} == stamps  # read, not rewritten
    run = json.loads((job / "index.json").read_text())["run"]
    assert not run["moved_aside"] and {*LEDGER_FILES, "seed_ledger.json", "verdicts.csv"} <= set(run["files"])
    # without it, the same report folder's ledger files are its own: judged again (here: refused by the patch)
    with pytest.raises(AssertionError, match="judged per seed"):
        main(_report(inputs, job, "--stages"))


def test_the_ledger_job_refuses_bad_input_and_a_report_a_bad_manifest(inputs, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report-seed-ledger", "--claims", inputs["claims"], "--out", str(out)]) != 0
    assert "no --eval or --retrain-eval" in capsys.readouterr().err
    assert main(["report-seed-ledger", "--eval", str(tmp_path / "nope.csv"), "--claims", inputs["claims"],
                 "--out", str(out)]) != 0
    assert "input file(s) not found" in capsys.readouterr().err and not out.exists()
    out.mkdir()
    (out / "seed_ledger.json").write_text('{"written": []}')
    assert main(_report(inputs, out, "--seed-ledger", str(out / "seed_ledger.json"))) != 0
    assert "verdicts_seeds.csv is missing" in capsys.readouterr().err


def test_a_failing_report_removes_only_what_it_wrote(inputs, tmp_path, monkeypatch):
    """Another job writing into the report folder while the report runs (the figures, figure1) keeps its files
    when the report fails; the report's own new files go."""
    import ctbench.report.tables.paper_tables as paper_tables
    from ctbench.io import atomic_write_text

    out = tmp_path / "report"
    out.mkdir()
    (out / "figure1.png").write_bytes(b"before")

    def failing(folder, **kwargs):
        atomic_write_text(Path(folder) / "table1.csv", "half a report\n")
        (Path(folder) / "grids").mkdir()
        (Path(folder) / "grids" / "drawn_meanwhile.png").write_bytes(b"another job's figure")
        (Path(folder) / "robustness.png").write_bytes(b"another job's figure")
        raise RuntimeError("cannot be computed")

    monkeypatch.setattr(paper_tables, "write_report", failing)
    assert main(_report(inputs, out)) != 0
    assert not (out / "table1.csv").exists() and (out / "figure1.png").read_bytes() == b"before"
    assert (out / "grids" / "drawn_meanwhile.png").exists() and (out / "robustness.png").exists()


def test_the_workflow_runs_the_ledger_before_the_report(smoke_plan):
    """The smoke profile's plan (a dry run): one report_seed_ledger job with the report's evaluation, robustness,
    attribution and model files; the report reads its manifest and waits for the figures job too (its index.json
    then lists both jobs' files); stage times read it."""
    (ledger,) = smoke_plan["report_seed_ledger"]
    (report,) = smoke_plan["report"]
    assert ledger["output"] == ["{results}/report/seed_ledger.json"]
    for flag in ("--eval {results}/", "--robustness {results}/", "--attribution {results}/", "--models {results}/",
                 "--claims claims.yaml"):
        assert flag in ledger["shell"], flag
    assert "benchmarks/report_seed_ledger/report_seed_ledger.cpu.json" in ledger["shell"]
    assert "--seed-ledger {results}/report/seed_ledger.json" in report["shell"]
    for needed in ("{results}/report/seed_ledger.json", "{results}/report/report_figures.json"):
        assert needed in report["input"], needed
    assert "{results}/report/seed_ledger.json" in smoke_plan["stage_times"][0]["input"]
