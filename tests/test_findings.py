"""Issue 24: the book's first page says what was found (from the result files), the ledger is narrow, the appendix
CI table is labelled per version, and the redundancy and dataset tables."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd

from ctbench.report.book.findings_pages import render_findings, render_run
from ctbench.report.book.meta_pages import render_verdicts
from ctbench.report.book.table_pages import render_appendix_ci
from ctbench.report.claims import evaluate_claims
from ctbench.report.tables.extra_tables import dataset_table, redundancy_table
from ctbench.report.tables.paper_tables import PUBLISHED_DIR

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "paper" / "results" / "report"


def test_first_page_of_the_committed_set_leads_with_the_findings():
    verdicts = evaluate_claims(ROOT / "claims.yaml", COMMITTED)
    page = render_findings(COMMITTED, verdicts)
    assert page.startswith("**The run shown.** Profile `paper`")
    commit = json.loads((COMMITTED / "provenance.json").read_text())["git_commit"][:7]
    assert f"at commit `{commit}`" in page and "uncommitted" not in page.split("\n")[0]
    assert "vs July 2025" in page and "vs final" in page and "vs Black et al. 2022" in page
    assert "**The headline claims:**" in page and "`ig_protected_lower`" in page
    assert "Not reproduced against the July 2025 preprint" in page and "`t1_cost_moon`" in page
    assert "farthest from the July 2025 preprint" in page and "- **GMSC IP\\***: ours 13.78" in page
    assert "CT's test accuracy is 8.2 percentage points below BL's" in page   # the cell's facts, its causes
    assert "Over training seeds" in page and "5 seeds" in page
    # the widest spread over seeds, the retrain stage's seeds included (table1_seeds.csv)
    assert "LS IP\\* from -0.2 to +65.1% over 10 seeds" in page
    assert "This book shows the" not in page                 # the paper profile needs no warning


def _copy_report(tmp_path: Path) -> Path:
    """The committed files the first page reads, in a folder of the test's own."""
    rep = tmp_path / "report"
    rep.mkdir()
    for name in ("verdicts.csv", "table1.csv", "provenance.json", "performance.csv", "performance_seeds.csv",
                 "table3.csv"):
        shutil.copy(COMMITTED / name, rep / name)
    return rep


def _verdicts(rep: Path) -> pd.DataFrame:
    return pd.read_csv(rep / "verdicts.csv", keep_default_na=False)


def test_the_first_page_follows_its_files(tmp_path):
    """Every part of the first page is read from a file: change the file, the text changes."""
    rep = _copy_report(tmp_path)
    v0 = _verdicts(rep)
    n = int((v0["verdict_preprint_2025_07"] == "not reproduced").sum())
    assert v0.loc[v0["claim"] == "ip_avg", "verdict_preprint_2025_07"].item() != "not reproduced"
    before = render_findings(rep, v0)
    assert f"| ✗ **not reproduced** | {n} |" in before and "on 2031-" not in before

    prov = json.loads((rep / "provenance.json").read_text())
    prov.update(profile="quick", written_utc="2031-02-03T04:05:06+00:00")
    (rep / "provenance.json").write_text(json.dumps(prov))
    v = _verdicts(rep)
    v.loc[v["claim"] == "ip_avg", ["verdict", "verdict_preprint_2025_07"]] = "not reproduced"
    v.loc[v["claim"] == "ip_avg", "note"] = "a reason only this test writes"
    v.to_csv(rep / "verdicts.csv", index=False)
    t1 = pd.read_csv(rep / "table1.csv")
    cell = (t1["dataset"] == "Circ") & (t1["metric"] == "IP")
    t1.loc[cell, ["reduction_pct", "diff_pct"]] = [-150.0, -200.0]
    t1.loc[cell, "seed_values"] = "-300.0 100.0"
    t1.to_csv(rep / "table1.csv", index=False)

    after = render_findings(rep, _verdicts(rep))
    assert after.startswith("```{warning}\nThis book shows the **`quick`** profile")
    assert "written on 2031-02-03" in after
    assert f"| ✗ **not reproduced** | {n + 1} |" in after
    assert "- `ip_avg`: CT reduces IP on average over the nine datasets — a reason only this test writes" in after
    row = next(line for line in after.splitlines() if "`ip_avg`" in line and line.startswith("| "))
    assert row.rstrip(" |").endswith("✗ **not reproduced**<br><small>final: ✓ reproduced</small>")
    farthest = after.split("farthest from the July 2025 preprint")[1]
    assert farthest.split("\n- ")[1].startswith("**Circ IP**: ours -150.00")      # now the first of the five
    assert "the widest ranges of a cell's reduction over training seeds: Circ IP from -300.0 to +100.0%" in after


def test_the_seed_ranges_take_every_seed_of_table1_seeds(tmp_path):
    """The widest ranges over training seeds read table1_seeds.csv (the retrain stage's seeds too) where the report
    has it, table1.csv's seed_values (the profile's seeds) where it does not."""
    rep = _copy_report(tmp_path)
    without = render_findings(rep, _verdicts(rep))
    assert "over 5 seeds" in without and "over 10 seeds" not in without
    cells = pd.read_csv(COMMITTED / "table1_seeds.csv")
    cells.loc[(cells["dataset"] == "OL") & (cells["metric"] == "IP") & (cells["seed"] == 7), "reduction_pct"] = 500.0
    cells.to_csv(rep / "table1_seeds.csv", index=False)
    with_cells = render_findings(rep, _verdicts(rep))
    lo = cells.loc[(cells["dataset"] == "OL") & (cells["metric"] == "IP"), "reduction_pct"].min()
    assert f"training seeds: OL IP from {lo:+.1f} to +500.0% over 10 seeds" in with_cells


def test_a_quick_profile_book_says_so_on_its_first_page(tmp_path):
    (tmp_path / "provenance.json").write_text(json.dumps({"profile": "quick", "git_commit": "0" * 40}))
    text = render_run(tmp_path)
    assert text.startswith("```{warning}\nThis book shows the **`quick`** profile")
    assert "paper/results/report" in text and "`ctbench book`" in text
    assert "not the reproduction's" in text
    # no provenance at all: still says what it does not know
    assert "Profile `unknown`" in render_run(tmp_path / "missing")


def test_the_ledger_is_narrow_and_folds_the_details():
    verdicts = evaluate_claims(ROOT / "claims.yaml", COMMITTED)
    _, table = render_verdicts(COMMITTED, verdicts)
    header = table.splitlines()[0]
    assert header.count("|") - 1 == 3                        # three columns: claim, published / ours, verdict
    assert table.count("<details><summary>why</summary>") >= 70
    row = next(line for line in table.splitlines() if "`cost_unconstrained_avg`" in line)
    verdict_cell = row.rstrip(" |").rsplit(" | ", 1)[1]
    assert verdict_cell.startswith("◐ partly") and len(re.sub(r"<[^>]+>", "", verdict_cell)) < 60


def test_appendix_ci_shows_each_version_labelled():
    text = render_appendix_ci(COMMITTED, PUBLISHED_DIR)
    row = next(line for line in text.splitlines() if line.startswith("| IP | LS |"))
    # July 2025's Table 3 (LS IP CT 2.41) and the final appendix (2.51), both labelled
    assert "July 2025\u00a02.41" in row and "final\u00a02.51" in row
    assert "Not yet run" in render_appendix_ci(None, PUBLISHED_DIR)


def _eval_file(path: Path, rows: list[dict]) -> Path:
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_redundancy_table_means_valid_counterfactuals_per_model(tmp_path):
    rows = [{"dataset": "lin_sep", "experiment": "single", "objective": o, "valid": v, "redundancy": r}
            for o, v, r in (("full", True, 0.5), ("full", True, 0.0), ("full", False, 1.0),
                            ("vanilla", True, 0.25), ("vanilla", True, 0.25))]
    a = _eval_file(tmp_path / "a.csv", rows[:3])
    b = _eval_file(tmp_path / "b.csv", rows[3:])
    t = redundancy_table([a, b])
    assert t[["dataset", "experiment"]].values.tolist() == [["LS", "single"]]
    r = t.iloc[0]
    assert (r["redundancy_ct"], r["redundancy_bl"], r["n_valid_ct"], r["n_valid_bl"]) == (0.25, 0.25, 2, 2)
    assert r["diff"] == 0.0
    assert redundancy_table([_eval_file(tmp_path / "c.csv", [{"dataset": "x", "experiment": "single"}])]).empty


def test_dataset_table_from_model_sidecars(tmp_path):
    model = tmp_path / "full_s0.pt"
    summary = {"dataset": "adult", "train": 100, "val": 10, "test": 20, "features": 12, "classes": 2,
               "balance": "0.75/0.25", "protected": "age"}
    Path(f"{model}.json").write_text(json.dumps({"dataset": {"name": "adult", "summary": summary}}))
    synth = tmp_path / "full_s1.pt"
    Path(f"{synth}.json").write_text(json.dumps({"dataset": {"name": "lin_sep", "summary": {**summary,
                                                                                           "dataset": "lin_sep"}}}))
    from ctbench.cli.report_cmds import _data_sources

    sources = _data_sources([str(model), str(synth)])
    assert set(sources) == {"adult"}                         # synthetic data have no raw files
    t = dataset_table([model, synth, tmp_path / "no_sidecar.pt"], sources).set_index("dataset")
    assert list(t.index) == ["LS", "Adult"]                  # the paper's order
    r = t.loc["Adult"]
    assert r["n_train"] == 100 and r["class_shares"] == "0.75/0.25" and r["protected"] == "age"
    assert "CC BY 4.0" in r["licence"] and "archive.ics.uci.edu" in r["source"]
    assert t.loc["LS", "source"] == "generated (synthetic)"
