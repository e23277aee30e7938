"""Black et al. (ICLR 2022)'s appendix as transcribed in ``ctbench/report/published/`` (issue 25, item 3): values
read by hand from the paper, the tables' agreement with each other and with ctbench's settings, and the consistency
chapter's comparison rendered from those files (a changed file changes the text)."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from ctbench.report.book.consistency_published import render_table, render_text
from ctbench.report.tables.black2022_published import PUB_COLUMNS, published
from ctbench.report.tables.consistency_tables import TABLE1_COLUMNS, table1
from ctbench.report.tables.paper_tables import PUBLISHED_DIR

FIXTURE = Path(__file__).parent / "fixtures" / "consistency_report"
NEW = ["black2022_table2_methods.csv", "black2022_table3_invalidation_sd.csv", "black2022_table4_cost.csv",
       "black2022_models.csv"]


def _csv(name: str) -> pd.DataFrame:
    return pd.read_csv(PUBLISHED_DIR / name)


def _cell(df: pd.DataFrame, method: str, dataset: str) -> pd.Series:
    row = df[(df["method"] == method) & (df["dataset"] == dataset)]
    assert len(row) == 1, (method, dataset)
    return row.iloc[0]


@pytest.fixture
def pub(tmp_path):
    out = tmp_path / "published"
    shutil.copytree(PUBLISHED_DIR, out)
    return out


@pytest.fixture
def report(tmp_path):
    out = tmp_path / "report"
    shutil.copytree(FIXTURE, out)
    return out


def test_values_read_by_hand():
    t2 = _csv("black2022_table2_methods.csv")
    assert _cell(t2, "Min L1", "German Credit")["success_rate"] == 0.55
    assert _cell(t2, "Min L1", "Seizure")["success_rate"] == 0.11
    assert _cell(t2, "Min L1", "Warfarin")["step_size"] == 0.5
    assert _cell(t2, "Min L2", "Seizure")["success_rate"] == 0.71
    pgd = _cell(t2, "Min eps PGD", "CTG")
    assert (pgd["epsilon"], pgd["success_rate"]) == (0.2, 0.51) and pd.isna(pgd["step_size"])
    assert _cell(t2, "Min eps PGD", "Taiwanese Credit")["epsilon"] == 5.0
    assert (_cell(t2, "Pawelczyk et al.", "German Credit")[["epsilon", "success_rate"]] == [0.3, 0.38]).all()
    assert _cell(t2, "Pawelczyk et al.", "Taiwanese Credit")["success_rate"] == 0.14
    t3 = _csv("black2022_table3_invalidation_sd.csv")
    assert (_cell(t3, "Min L2", "CTG")[["iv_loo", "iv_loo_sd", "iv_rs", "iv_rs_sd"]] == [0.48, 0.17, 0.49, 0.15]).all()
    assert (_cell(t3, "Pawelczyk et al.", "HELOC")[["iv_rs", "iv_rs_sd"]] == [0.15, 0.21]).all()
    assert _cell(t3, "Min eps PGD", "Seizure")["iv_rs_sd"] == 0.12
    assert not ((t3["method"] == "Min L1") & (t3["dataset"] == "Seizure")).any()
    t4 = _csv("black2022_table4_cost.csv")
    assert (_cell(t4, "Looveren et al.", "Seizure")[["cost_l2", "cost_l2_sd", "cost_l1", "cost_l1_sd"]]
            == [8.40, 6.96, 76.99, 69.93]).all()
    assert (_cell(t4, "Min L2", "German Credit")[["cost_l1", "cost_l1_sd"]] == [24.70, 13.14]).all()
    assert (_cell(t4, "Min eps PGD + SNS", "Seizure")[["cost_l1", "cost_l1_sd"]] == [38.55, 6.36]).all()
    amb = _cell(t4, "Min L1 + SNS", "German Credit")
    assert (amb["cost_l1"], amb["cost_l1_sd"]) == (13.81, 2.96) and "15.01±2.70" in amb["note"]
    assert t4.loc[t4["method"] == "Pawelczyk et al.", "cost_l1"].isna().all()
    m = _csv("black2022_models.csv").set_index("dataset")
    assert m.loc["German Credit", "hidden"] == "128-64-16" and m.loc["CTG", "batch_size"] == 16
    assert m.loc["HELOC", "epochs"] == 50 and pd.isna(m.loc["HELOC", "batch_size"])


def test_every_row_names_its_source():
    for name in NEW:
        df = _csv(name)
        assert df["source"].str.startswith("Black et al. 2022, App. B.").all(), name
    readme = (PUBLISHED_DIR / "README.md").read_text()
    assert all(f"| {name} |" in readme for name in NEW)


def test_table4_l2_and_table3_means_equal_table1():
    t4 = _csv("black2022_table4_cost.csv")
    t1 = _csv("black2022_table1_cost_r2.csv")
    both = t1[t1["method"] != "R2"].merge(t4, on=["method", "dataset"], how="outer", indicator=True)
    assert (both["_merge"] == "both").all()
    assert (both["cost_l2_x"] == both["cost_l2_y"]).all() and (both["cost_l2_sd_x"] == both["cost_l2_sd_y"]).all()
    t3 = _csv("black2022_table3_invalidation_sd.csv")
    iv = _csv("black2022_table1_invalidation.csv").merge(t3, on=["method", "dataset"], how="outer", indicator=True)
    assert (iv["_merge"] == "both").all() and len(iv) == 46
    assert (iv["iv_loo_x"] == iv["iv_loo_y"]).all() and (iv["iv_rs_x"] == iv["iv_rs_y"]).all()


def test_ctbench_settings_follow_app_b2_and_table2():
    """The base models and per-dataset search settings of ``ctbench consistency`` are those of the transcription
    (HELOC's batch size is not stated: ctbench uses Keras' default)."""
    from ctbench.experiments.consistency import ARCHITECTURES
    from ctbench.facts import BLACK2022_LABELS

    models = _csv("black2022_models.csv").set_index("dataset")
    t2 = _csv("black2022_table2_methods.csv")
    assert set(BLACK2022_LABELS.values()) <= set(models.index)
    for name, a in ARCHITECTURES.items():
        label = BLACK2022_LABELS[name]
        m = models.loc[label]
        assert "-".join(map(str, a.hidden)) == m["hidden"] and a.epochs == m["epochs"], label
        assert a.batch_size == m["batch_size"] or (pd.isna(m["batch_size"]) and "not stated" in a.note), label
        assert a.l1_step == _cell(t2, "Min L1", label)["step_size"]
        assert a.l2_step == _cell(t2, "Min L2", label)["step_size"]
        assert a.pgd_max_eps == _cell(t2, "Min eps PGD", label)["epsilon"]
        assert a.latent_radius == _cell(t2, "Pawelczyk et al.", label)["epsilon"]


def test_published_frame_and_bad_files(pub):
    p = published(pub)
    assert list(p.columns) == ["method", "dataset", *PUB_COLUMNS] and not p.duplicated(["method", "dataset"]).any()
    assert _cell(p, "Min L2 + SNS", "Seizure")["pub_validity"] == 0.71  # SNS inherits its base method's
    assert "Looveren et al. + SNS" not in set(p["method"]) and "R2" not in set(p["method"])
    t2 = pd.read_csv(pub / "black2022_table2_methods.csv")
    pd.concat([t2, t2.head(1)]).to_csv(pub / "black2022_table2_methods.csv", index=False)
    with pytest.raises(ValueError, match="repeated"):
        published(pub)
    t2.drop(columns="success_rate").to_csv(pub / "black2022_table2_methods.csv", index=False)
    with pytest.raises(ValueError, match="success_rate"):
        published(pub)
    t2.to_csv(pub / "black2022_table2_methods.csv", index=False)
    (pub / "black2022_table4_cost.csv").unlink()
    with pytest.raises(FileNotFoundError, match="black2022_table4_cost"):
        published(pub)


def _frame() -> pd.DataFrame:
    """Per-counterfactual rows of one dataset and two methods, as ``ctbench consistency`` writes them."""
    rows = []
    for method, sns in (("min_l2", False), ("min_l2+sns", True)):
        for i, (valid, c2) in enumerate(((True, 1.0), (True, 3.0), (False, 9.0), (True, 2.0))):
            rows.append({"part": "black2022", "dataset": "cardiotocography", "method": method, "sns": sns, "row": i,
                         "valid": valid, "iv_loo": 0.1 * i, "iv_rs": 0.2, "cost_l1": 2 * c2, "cost_l2": c2,
                         "n_rs": 10, "n_loo": 10})
    return pd.DataFrame(rows)


def test_table1_puts_the_published_values_beside_ours(pub):
    t = table1(_frame(), pub)
    assert list(t.columns[:len(TABLE1_COLUMNS)]) == TABLE1_COLUMNS  # what claims and prose read keeps its place
    r = _cell(t, "Min L2", "CTG")
    assert r["validity"] == 0.75 and r["pub_validity"] == 1.0 and r["diff_validity"] == pytest.approx(-0.25)
    assert r["cost_l2"] == 2.0 and r["sd_cost_l2"] == 1.0 and r["pub_cost_l2_sd"] == 0.04
    assert (r["pub_cost_l1"], r["pub_cost_l1_sd"], r["diff_cost_l1"]) == (0.18, 0.12, pytest.approx(3.82))
    assert (r["pub_sd_loo"], r["pub_sd_rs"]) == (0.17, 0.15)
    assert _cell(t, "Min L2 + SNS", "CTG")["pub_validity"] == 1.0
    t2 = pd.read_csv(pub / "black2022_table2_methods.csv")
    t2.loc[(t2["method"] == "Min L2") & (t2["dataset"] == "CTG"), "success_rate"] = 0.6
    t2.to_csv(pub / "black2022_table2_methods.csv", index=False)
    assert _cell(table1(_frame(), pub), "Min L2 + SNS", "CTG")["pub_validity"] == 0.6
    assert list(table1(_frame(), None).columns) == [*TABLE1_COLUMNS[:12], "sd_cost_l1", "sd_cost_l2"]


def test_the_box_table_takes_table2s_success_rate(tmp_path, pub):
    from ctbench.report.tables.consistency_boxes import box_table

    f = tmp_path / "german_credit_art.csv"
    _frame().assign(dataset="german_credit").to_csv(f, index=False)
    assert box_table({"art": [f]}, pub)["pub_validity"].tolist() == [0.84, 0.84]


def test_the_chapter_compares_from_the_files(report, pub):
    text, table = render_text(report, pub), render_table(report, pub)
    assert "in 5 of 25 (method, dataset) cells without SNS" in text
    assert "Pawelczyk et al. on Seizure 0.15 against 1.00" in text and "Min L1 on CTG 0.51 against 1.00" in text
    assert "Min eps PGD on CTG under RS 0.68 against 0.09 ± 0.04" in text
    assert "in 13 of 38 cells under LOO and 15 of 38 cells under RS" in text
    assert "below half the paper's mean in 9 and above twice it in 5 of 38 cells" in text
    assert "| Min L1 | CTG | **0.51** (1.00) | 0.24 (0.17 ± 0.12) | **0.37** (0.16 ± 0.19) |" in table
    assert "| Pawelczyk et al. | German Credit | 0.34 (0.38) | **3.23** (7.15 ± 2.12) | 17.33 (–) |" in table
    # a published value changes: the count, the names and the cell change with it
    t2 = pd.read_csv(pub / "black2022_table2_methods.csv")
    t2.loc[(t2["method"] == "Min L1") & (t2["dataset"] == "CTG"), "success_rate"] = 0.5
    t2.to_csv(pub / "black2022_table2_methods.csv", index=False)
    text2 = render_text(report, pub)
    assert "in 4 of 25 (method, dataset) cells" in text2 and "Min L1 on CTG" not in text2.split("\n")[0]
    assert "| Min L1 | CTG | 0.51 (0.50) |" in render_table(report, pub)
    # one of ours changes
    p = report / "consistency_table1.csv"
    t = pd.read_csv(p)
    t.loc[(t["method"] == "Min eps PGD") & (t["dataset"] == "CTG"), "iv_rs"] = 0.1
    t.to_csv(p, index=False)
    text3 = render_text(report, pub)
    assert "Min eps PGD on CTG under RS" not in text3 and "15 of 38 cells under RS" not in text3


def test_a_report_without_the_table_gets_the_note(tmp_path):
    assert "Not yet run" in render_text(tmp_path) and "Not yet run" in render_table(None)
