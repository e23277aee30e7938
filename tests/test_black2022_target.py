"""Issue 25's Black et al. target, judged from files (consistency chapter): the counts within 0.05, and per cell
outside the window a measured cause (a base seed or a measured difference that lands within 0.05 of the paper's
value or on both sides of it) or "none measured". A changed file changes the verdict."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from ctbench.report.book.consistency_causes import CAUSES
from ctbench.report.book.consistency_pages import pages
from ctbench.report.book.consistency_target import BASE_SEEDS, SEED_COLUMNS, judge, per_seed, render_target

REPORT = Path(__file__).resolve().parents[1] / "paper" / "results" / "report"


@pytest.fixture
def report(tmp_path):
    """A report folder holding only the committed ``consistency_table1.csv``."""
    r = tmp_path / "report"
    r.mkdir()
    shutil.copy(REPORT / "consistency_table1.csv", r / "consistency_table1.csv")
    return r


def _seeds(tmp_path, rows):
    p = tmp_path / BASE_SEEDS.name
    pd.DataFrame(rows, columns=SEED_COLUMNS).to_csv(p, index=False)
    return p


def _set(report, method, dataset, **values):
    t = pd.read_csv(report / "consistency_table1.csv")
    at = (t["method"] == method) & (t["dataset"] == dataset)
    assert at.sum() == 1
    for k, v in values.items():
        t.loc[at, k] = v
    t.to_csv(report / "consistency_table1.csv", index=False)


def test_counts_are_the_tables(report, tmp_path):
    """The counts are those of the comparison table: 48 cells without SNS and 28 with (Seizure's Min-ℓ1 rows have no
    published rate); moving one cell into the window adds one."""
    none = tmp_path / "none.csv"
    j = judge(report, none, none)
    assert len(j[~j["sns"]]) == 48 and len(j[j["sns"]]) == 28
    k = int(j.loc[~j["sns"], "within"].sum())
    assert f"**{k} of 48** without SNS (target ≥ 36: not met)" in render_target(report, none, none)
    _set(report, "Min eps PGD", "CTG", iv_loo=0.06)     # paper 0.04
    assert f"**{k + 1} of 48** without SNS" in render_target(report, none, none)


def test_a_base_seed_that_reaches_the_paper_is_a_cause(report, tmp_path):
    none = tmp_path / "none.csv"
    _set(report, "Min eps PGD", "CTG", iv_loo=0.27, iv_rs=0.29)    # paper 0.04 / 0.09
    text = render_target(report, none, none)
    assert "| Min eps PGD, CTG, LOO | 0.27 | 0.04 | – | none measured |" in text
    assert "is not met" in text
    # seeds whose LOO values lie on both sides of the paper's 0.04, RS values all above 0.09 + 0.05
    rows = [["CTG", "Min eps PGD", s, 20, 0.9, 0.1, loo, rs] for s, loo, rs in
            ((0, 0.27, 0.29), (1, 0.02, 0.20), (2, 0.15, 0.25))]
    text = render_target(report, none, _seeds(tmp_path, rows))
    assert "| Min eps PGD, CTG, LOO | 0.27 | 0.04 | 0.02–0.27 | base seed: 0.02–0.27 over 3 base models |" in text
    assert "| Min eps PGD, CTG, RS | 0.29 | 0.09 | 0.20–0.29 | none measured |" in text
    # one seed within 0.05 of the paper is enough
    rows[1][7] = 0.13
    text = render_target(report, none, _seeds(tmp_path, rows))
    assert "| Min eps PGD, CTG, RS | 0.29 | 0.09 | 0.13–0.29 | base seed: 0.13–0.29 over 3 base models |" in text
    # the spread over base models is summarised over every cell the file covers
    assert "Over 3 base models (the whole study rerun from base seeds 0, 1, 2" in text
    # a single base model is no range: no cause from it
    text = render_target(report, none, _seeds(tmp_path, rows[:1]))
    assert "| Min eps PGD, CTG, LOO | 0.27 | 0.04 | – | none measured |" in text


def test_a_measured_difference_that_brackets_the_paper_is_a_cause(report, tmp_path):
    causes = tmp_path / CAUSES.name
    shutil.copy(CAUSES, causes)
    none = tmp_path / "none.csv"
    text = render_target(report, causes, none)
    # the batch order takes CTG's Looveren LOO rate from 0.45 to 0.11, the paper's
    assert "| Looveren et al., CTG, LOO | 0.45 | 0.11 | – | batch order: 0.45 → 0.11 |" in text
    df = pd.read_csv(causes)
    at = (df["difference"] == "batch order") & (df["dataset"] == "CTG") & (df["method"] == "Looveren et al.")
    df.loc[at, "alt_iv_loo"] = 0.30
    df.to_csv(causes, index=False)
    line = [x for x in render_target(report, causes, none).splitlines() if x.startswith("| Looveren et al., CTG, LOO")]
    assert line and "batch order" not in line[0]


def test_every_cell_caused_meets_the_second_target(report, tmp_path):
    """With a base-seed range around every published rate, every cell outside the window carries a cause."""
    none = tmp_path / "none.csv"
    j = judge(report, none, none)
    rows = []
    for (m, d), g in j.groupby(["method", "dataset"]):
        pub = dict(zip(g["source"], g["paper"], strict=True))
        for s, off in ((0, -0.3), (1, 0.3)):
            rows.append([d, m, s, 20, 1.0, 1.0, pub.get("loo", 0.5) + off, pub.get("rs", 0.5) + off])
    text = render_target(report, none, _seeds(tmp_path, rows))
    assert "every remaining cell carries one" in text and "none measured" not in text


def test_missing_and_bad_files(report, tmp_path):
    assert "has not been computed" in render_target(None)
    none = tmp_path / "none.csv"
    assert "base models (the whole study" not in render_target(report, none, none)
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"dataset": ["CTG"], "method": ["Min L1"], "seed": [0]}).to_csv(bad, index=False)
    with pytest.raises(ValueError, match=r"bad\.csv: column\(s\) \['n_models', 'validity'"):
        render_target(report, none, bad)


def test_the_chapter_includes_the_target():
    assert pages(REPORT)["consistency_target"] == render_target(REPORT)


def test_each_base_seed_is_scored_as_a_whole_run(report, tmp_path):
    """Per base seed, the cells within 0.05: a seed at the paper's values scores every cell it has, one 0.1 away
    none."""
    none = tmp_path / "none.csv"
    j = judge(report, none, none)
    rows = []
    for (m, d), g in j.groupby(["method", "dataset"]):
        pub = dict(zip(g["source"], g["paper"], strict=True))
        rows.append([d, m, 0, 100, 1.0, 1.0, pub.get("loo"), pub.get("rs")])
        rows.append([d, m, 7, 20, 1.0, 1.0, pub.get("loo", 0.5) + 0.1, pub.get("rs", 0.5) + 0.1])
    counts = per_seed(_seeds(tmp_path, rows)).set_index("seed")
    assert counts.loc[0].tolist() == [48, 48, 28, 28]
    assert counts.loc[7].tolist() == [0, 48, 0, 28]
    text = render_target(report, none, _seeds(tmp_path, rows))
    assert "seed 0: 48 of 48 and 28 of 28; seed 7: 0 of 48 and 0 of 28. The best base model scores 48" in text
