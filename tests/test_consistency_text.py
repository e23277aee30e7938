"""The consistency chapter's prose is written from the report's own tables, never fixed numbers (issue 14, item 5):
every number in the rendered text is a value of the tables (or computed from them), the words follow the numbers,
and a report without the consistency stage gets the "not yet run" note.

The fixture ``tests/fixtures/consistency_report`` is the consistency part of the paper-size report of the run
the chapter was first written from (code of 9b5af62)."""

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from ctbench.report.book.consistency_pages import pages as book_pages
from ctbench.report.tables.paper_tables import PUBLISHED_DIR
from ctbench.report.text import consistency_text as T

FIXTURE = Path(__file__).parent / "fixtures" / "consistency_report"
ROOT = Path(__file__).resolve().parents[1]
NAMES = ["consistency_table1_text", "consistency_r2_text", "consistency_answer_text", "consistency_compute_text"]


@pytest.fixture
def report(tmp_path):
    out = tmp_path / "report"
    shutil.copytree(FIXTURE, out)
    return out


def _text(report) -> str:
    return "\n".join(T.pages(report).values())


def _edit(report, name, fn):
    p = report / f"{name}.csv"
    df = fn(pd.read_csv(p))
    df.to_csv(p, index=False)


def test_the_run_reads_as_the_chapter_did():
    """Known values of the fixture run, as the hand-written chapter stated them."""
    p = T.pages(FIXTURE)
    t1, r2, ans, cpu = (p[n] for n in NAMES)
    assert "at most 0.005 on every dataset" in t1 and "published: at most 0.04" in t1
    assert "Every base method moves down with SNS under both sources" in t1
    assert "Seizure (0.09–0.40; published 0.13–0.16)" in t1
    assert "RS invalidates more than LOO on every dataset" in t1 and "in 21 of 25 (method, dataset) cells" in t1
    assert "Min eps PGD on CTG under RS: 0.68 against 0.09 published (validity 0.59)" in t1
    assert "at most 0.17 (HELOC)" in r2 and "(0.29–0.31)" in r2 and "Without the SNS rows it is 0.04–0.23" in r2
    assert "Seizure (0.07) and CTG (0.08)" in r2 and "0.23–0.53" in r2 and "0.20–0.50" in r2
    assert ans.count("*No:") == 1 and "5 of 10 (dataset, method) cells under LOO and 7 of 10 under RS" in ans
    assert "less often in none" in ans and "+0.16 (LOO) and +0.18 (RS)" in ans
    assert "lin_sep under RS (+0.38 [+0.26, +0.50])" in ans and "not systematically higher or lower" in ans
    assert "5 datasets, 3 training seeds, 30 RS and 30 LOO models" in ans and "`9b5af62`" in ans
    assert "`black2022` 1,091 CPU-s (18 CPU-min; Seizure, 201 models per job: 660 s)" in cpu
    assert "`ct` 1,623 CPU-s" in cpu and "is not met" in cpu and "45 CPU-minutes" in cpu


def _candidates(report) -> set[str]:
    """Every way the prose may print a value of the tables, or a mean, sum or count computed from them."""
    values: list[float] = [T.SIZE_TOL, T.RESIDUE, T.TARGET_CPU_MIN, 95]
    for p in [*report.glob("*.csv"), *PUBLISHED_DIR.glob("black2022_*.csv")]:
        df = pd.read_csv(p)
        values += [float(v) for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) for v in df[c].dropna()]
        values += range(len(df) + 1)  # counts of rows
    d = pd.read_csv(report / "consistency_ct_delta.csv")
    sns = d["method"].str.endswith("+ SNS")
    values += [d.loc[~sns, f"delta_iv_{s}"].mean() for s in ("loo", "rs")]
    t1 = pd.read_csv(report / "consistency_table1.csv")
    values += list(t1[~t1["sns"]].groupby("dataset")[["diff_iv_loo", "diff_iv_rs"]].mean().stack())
    pairs = pd.read_csv(report / "consistency_sns_pairs.csv")
    values += [pairs["iv_sns"].mean(), pairs["iv_base"].mean()]
    m = pd.read_csv(report / "consistency_models.csv")
    jobs = m.drop_duplicates(["part", "dataset", "seed"])
    parts = jobs.groupby("part")["cpu_total_s"].sum()
    values += list(parts) + list(parts / 60) + [parts.sum() / 60]
    values += list(m.groupby(["part", "dataset", "seed"]).apply(lambda g: (1 + g["n_rs"] + g["n_loo"]).sum()))
    out = {"9b5af62"}
    for v in values:
        v = float(v)
        out |= {f"{v:.0f}", f"{v:,.0f}", f"{abs(v):.2f}", f"{abs(v):.3f}", f"{abs(v):g}"}
    return out


def _numbers(text: str) -> list[str]:
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"Min L[12]|Theorem 2", "", text)  # names, not results
    return re.findall(r"\d[\d,]*(?:\.\d+)?", text)


def test_every_number_in_the_prose_comes_from_the_tables(report):
    numbers, allowed = _numbers(_text(report)), _candidates(report)
    assert len(numbers) > 60
    assert [n for n in numbers if n.rstrip(",") not in allowed] == []


def test_the_words_follow_the_numbers(report):
    before = T.pages(report)
    # SNS no longer brings Seizure's LOO rate down
    _edit(report, "consistency_table1", lambda t: t.assign(iv_loo=t["iv_loo"].where(
        ~((t["method"] == "Min eps PGD + SNS") & (t["dataset"] == "Seizure")), 0.31)))
    _edit(report, "consistency_sns_pairs", lambda t: t.assign(delta=t["delta"].where(
        ~((t["method"] == "Min eps PGD") & (t["dataset"] == "Seizure") & (t["source"] == "LOO")), 0.07)))
    # CT's counterfactuals are significantly *more* consistent everywhere without SNS
    plain = lambda t: ~t["method"].str.endswith("+ SNS")  # noqa: E731
    _edit(report, "consistency_ct_delta", lambda t: t.assign(**{
        c: t[c].where(~plain(t), t[c].abs() * -1 - 0.01) for s in ("loo", "rs")
        for c in (f"delta_iv_{s}", f"delta_iv_{s}_lb", f"delta_iv_{s}_ub")}))
    _edit(report, "consistency_r2", lambda t: t.assign(r2=0.01))
    _edit(report, "consistency_models", lambda t: t.assign(cpu_total_s=t["cpu_total_s"] / 10))
    after = T.pages(report)
    assert all(before[n] != after[n] for n in NAMES)
    assert "at most 0.31 on every dataset" in after["consistency_table1_text"]
    assert "SNS lowers the rate in 29 of 30 pairs" in after["consistency_table1_text"]
    assert "Min eps PGD on Seizure under LOO (+0.07)" in after["consistency_table1_text"]
    assert "*Yes:" in after["consistency_answer_text"] and "*No:" not in after["consistency_answer_text"]
    assert "more often than BL's in 0 of 10" in after["consistency_answer_text"]
    assert "Ours is at most that on German Credit (0.01)" in after["consistency_r2_text"]
    assert "is met" in after["consistency_compute_text"]


def test_missing_tables_give_the_note_not_an_error(tmp_path, report):
    for src in (None, tmp_path):
        p = T.pages(src)
        assert set(p) == set(NAMES) and all("Not yet run" in v for v in p.values())
    (report / "consistency_sns_pairs.csv").unlink()
    (report / "consistency_models.csv").unlink()
    (report / "provenance.json").unlink()
    p = T.pages(report)
    assert "moves down" not in p["consistency_table1_text"] and "at most 0.005" in p["consistency_table1_text"]
    assert "cost more than their base method's" not in p["consistency_r2_text"]
    assert "measured with" not in p["consistency_answer_text"] and "*No:" in p["consistency_answer_text"]
    assert "Not yet run" in p["consistency_compute_text"]


def test_fences_open_on_lines_of_their_own(tmp_path):
    for src in (None, tmp_path, FIXTURE):
        for name, text in book_pages(src).items():
            for line in text.splitlines():
                assert "```" not in line or line.startswith("```"), (name, line)


def test_the_chapter_types_no_results():
    """The paragraphs that report results are includes; what stays as text in them carries no numbers."""
    md = (ROOT / "paper" / "consistency.md").read_text()
    for name in NAMES:
        assert f"{{include}} _generated/{name}.md" in md and name in book_pages(FIXTURE)
    for head in ("## Table 1, regenerated", "## Cost, confidence", "## Models and compute"):
        section = md.split(head, 1)[1].split("\n## ", 1)[0]
        assert not re.findall(r"\d+\.\d+|\d,\d{3}", section), head
    answer = md.split("{include} _generated/consistency_answer_text.md", 1)[1].split("\n## ", 1)[0]
    assert not re.findall(r"\d", answer)


def test_one_seed_and_undefined_values_print_no_nan(report):
    """One training seed gives no interval; a constant predictor gives no r²: the text says less, never "nan"."""
    _edit(report, "consistency_ct_delta", lambda t: t.assign(**{c: float("nan") for c in t.columns
                                                               if c.endswith(("_lb", "_ub"))}))
    _edit(report, "consistency_r2", lambda t: t.assign(r2_log_lipschitz=float("nan")))
    text = _text(report)
    assert "nan" not in text.lower() and "significantly more often than BL's in 0 of 10" in text
