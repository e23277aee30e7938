"""The report's figures that need none of its tables in a job of their own (issue 21): ``ctbench report-figures``
draws the grid, tuning and robustness figures the book shows, ``ctbench report --no-figures`` (the workflow's report
job) draws none and keeps them, a report run by hand still draws them (the same function, the same bytes), and the
workflow wires the new rule between the inputs and the book, gallery and stage times."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ctbench.cli import main

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ("grids/gen_params_ip_change.png", "grids/gen_params_cost_change.png", "tuning/tune_ip.png",
           "tuning/tune_mature.png", "tuning/tuning_points.csv", "robustness.png", "robustness.pdf")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, list[str]]:
    """A grid search chunk, a tuning chunk (with its per-epoch rows) and a robustness file."""
    d = tmp_path_factory.mktemp("figure_inputs")
    rng = np.random.default_rng(0)
    search = pd.DataFrame([{"grid": "gen_params", "dataset": "lin_sep", "seed": 0, "point": f"p{i}",
                            "baseline_key": "bl", "generator": "ecco", "lambda_energy": lam, "max_iter": 50,
                            "lambda_energy_eval": 1.0, "ip_change_pct": rng.normal(), "cost_change_pct": rng.normal(),
                            "acc_test_ct": 0.9, "acc_test_bl": 0.9, "error": np.nan}
                           for i, lam in enumerate((0.1, 0.5, 1.0))])
    tune, eps = [], []
    for ds in ("moons", "adult"):
        for tau in (0.5, 0.9):
            pid = f"tau{tau:g}_reg0.1"
            tune += [{"grid": "tune", "dataset": ds, "seed": 0, "point": pid, "baseline_key": "bl", "tau": tau,
                      "lambda_reg": 0.1, "lambda_energy_eval": lam, "ip_change_pct": rng.normal(-10 * tau, 3),
                      "cost_change_pct": 0.0, "share_mature_last": 0.5, "acc_test_ct": 0.9, "acc_test_bl": 0.91,
                      "error": np.nan} for lam in (0.1, 1.0)]
            eps += [{"grid": "tune", "dataset": ds, "seed": 0, "point": pid, "epoch": e, "share_mature": e * tau / 3}
                    for e in (1, 2, 3)]
    (d / "gp.csv").write_text(search.to_csv(index=False))
    (d / "tune.csv").write_text(pd.DataFrame(tune).to_csv(index=False))
    (d / "tune.epochs.csv").write_text(pd.DataFrame(eps).to_csv(index=False))
    rob = pd.DataFrame([{"dataset": "lin_sep", "model": m, "objective": o, "seed": s, "attack": a, "eps": e,
                         "accuracy": 1.0 - e * (0.5 if o == "full" else 1.0)}
                        for m, o in (("CT", "full"), ("BL", "vanilla")) for s in (0, 1) for a in ("fgsm", "pgd")
                        for e in (0.0, 0.1, 0.2)])
    (d / "rob.csv").write_text(rob.to_csv(index=False))
    return {"grids": [str(d / "gp.csv"), str(d / "tune.csv")], "robustness": [str(d / "rob.csv")]}


def _figures(inputs, out: Path) -> list[str]:
    return ["report-figures", "--grids", *inputs["grids"], "--robustness", *inputs["robustness"], "--out", str(out)]


def _report(inputs, out: Path, *extra: str) -> list[str]:
    return ["report", "--grids", *inputs["grids"], "--robustness", *inputs["robustness"], "--published", "none",
            *extra, "--out", str(out)]


def _drawn(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")
            if p.is_file() and p.suffix in (".png", ".pdf") or p.name == "tuning_points.csv"}


def test_the_figures_job_draws_what_the_book_shows_and_the_report_job_does_not(inputs, tmp_path):
    from ctbench.report.book.includes import render_includes

    rep = tmp_path / "report"
    assert main(_figures(inputs, rep)) == 0
    assert set(FIGURES) <= _drawn(rep)
    manifest = json.loads((rep / "report_figures.json").read_text())
    assert sorted(f for v in manifest["written"].values() for f in v) == sorted(_drawn(rep))
    assert manifest["provenance"]["ctbench_version"]
    # the workflow's report job, after (or before) it: no figure of its own, and the figures job's stay
    assert main(_report(inputs, rep, "--no-figures", "--stages", "report_figures")) == 0
    assert set(FIGURES) <= _drawn(rep)
    run = json.loads((rep / "index.json").read_text())["run"]
    assert not run["moved_aside"] and "robustness_figure" not in json.loads((rep / "index.json").read_text())[
        "written"]
    alone = tmp_path / "report_only"
    assert main(_report(inputs, alone, "--no-figures", "--stages", "report_figures")) == 0
    assert _drawn(alone) == set() and (alone / "robustness.csv").exists() and (alone / "grid_effects.csv").exists()
    # every figure the book's pages show is one the figures job drew
    pages = render_includes(rep, tmp_path / "book", claims_yaml=False)
    shown = {m for page in pages.values() for m in re.findall(r"(?:grids|tuning)/[\w.]+\.png|robustness\.png",
                                                               page.read_text())}
    assert {"robustness.png", "grids/gen_params_ip_change.png", "tuning/tune_ip.png"} <= shown
    assert shown <= _drawn(rep)


def test_a_report_run_by_hand_draws_the_same_figures(inputs, tmp_path):
    """Without --no-figures the report draws them itself through the same function: byte for byte the same files,
    and they are its own (a figure no longer drawn is moved aside like any stale file of the report)."""
    by_job, by_hand = tmp_path / "job", tmp_path / "hand"
    assert main(_figures(inputs, by_job)) == 0
    (by_hand / "grids").mkdir(parents=True)
    (by_hand / "grids" / "old_grid_mature.png").write_bytes(b"a grid no longer run")
    assert main(_report(inputs, by_hand)) == 0
    assert _drawn(by_hand) == _drawn(by_job)
    for rel in _drawn(by_job):
        assert (by_hand / rel).read_bytes() == (by_job / rel).read_bytes(), rel
    assert (tmp_path / "hand.stale" / "grids" / "old_grid_mature.png").exists()


def test_the_figures_job_moves_aside_only_its_own_stale_files(inputs, tmp_path, capsys):
    rep = tmp_path / "report"
    assert main(_figures(inputs, rep)) == 0
    (rep / "grids" / "old_grid_mature.png").write_bytes(b"a grid no longer run")
    (rep / "table1.csv").write_text("the report's table\n")
    assert main(["report-figures", "--grids", inputs["grids"][1], "--out", str(rep)]) == 0  # tuning only now
    stale = tmp_path / "report.stale"
    assert (stale / "grids" / "old_grid_mature.png").exists() and (stale / "robustness.png").exists()
    assert not (rep / "grids").exists() and (rep / "tuning" / "tune_ip.png").exists()
    assert (rep / "table1.csv").read_text() == "the report's table\n"
    assert main(["report-figures", "--grids", str(tmp_path / "nope.csv"), "--out", str(rep)]) != 0
    assert "input file(s) not found" in capsys.readouterr().err and (rep / "tuning" / "tune_ip.png").exists()


def test_the_workflow_runs_the_figures_as_a_job_the_book_gallery_and_stage_times_read(smoke_plan):
    """The smoke profile's plan (a dry run): one report_figures job with the grid chunks and robustness files, the
    report job with --no-figures and the stage named, and the book and gallery reading its output."""
    (fig,) = smoke_plan["report_figures"]
    assert fig["output"] == ["{results}/report/report_figures.json"]
    assert "ctbench report-figures --grids {results}/grids/" in fig["shell"]
    assert "--robustness {results}/robustness/" in fig["shell"]
    assert "benchmarks/report_figures/report_figures.cpu.json" in fig["shell"]
    (report,) = smoke_plan["report"]
    assert "--no-figures" in report["shell"] and re.search(r"--stages [^-]*report_figures", report["shell"])
    for reader in ("book", "report_gallery"):
        assert "{results}/report/report_figures.json" in smoke_plan[reader][0]["input"], reader
