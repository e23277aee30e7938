"""ctbench compare: which numbers of a fresh report moved against the committed result set."""

import shutil
from pathlib import Path

import pandas as pd

from ctbench.cli import main
from ctbench.report.tables.compare import Tolerance, compare_reports

COMMITTED = Path(__file__).resolve().parents[1] / "paper" / "results" / "report"


def _copy(tmp_path: Path) -> Path:
    fresh = tmp_path / "fresh"
    shutil.copytree(COMMITTED, fresh)
    return fresh


def test_an_identical_result_set_has_nothing_moved_even_with_other_timings(tmp_path, capsys):
    fresh = _copy(tmp_path)
    bench = pd.read_csv(fresh / "benchmarks.csv")
    bench["cpu_seconds"] *= 3  # a slower machine: not a result
    bench.to_csv(fresh / "benchmarks.csv", index=False)
    tt = pd.read_csv(fresh / "training_time.csv")
    tt["train_seconds"] += 1.0
    tt.to_csv(fresh / "training_time.csv", index=False)
    assert compare_reports(COMMITTED, fresh).empty
    assert main(["compare", str(fresh), "--committed", str(COMMITTED)]) == 0
    assert "no number moved" in capsys.readouterr().out


def test_moved_cells_missing_rows_and_tables_are_listed(tmp_path, capsys):
    fresh = _copy(tmp_path)
    t1 = pd.read_csv(fresh / "table1.csv")
    i = t1.index[(t1["dataset"] == "Moon") & (t1["metric"] == "Cost")][0]
    t1.loc[i, "reduction_pct"] += 0.5
    t1 = t1[~((t1["dataset"] == "LS") & (t1["metric"] == "IP"))]
    t1.to_csv(fresh / "table1.csv", index=False)
    (fresh / "table3.csv").unlink()
    moved = compare_reports(COMMITTED, fresh)
    what = {(r.file, r.key, r.column, r.what) for r in moved.itertuples()}
    assert ("table1.csv", "Moon / Cost", "reduction_pct", "moved") in what
    assert ("table1.csv", "LS / IP", "", "row missing from the fresh result set") in what
    assert ("table3.csv", "", "", "table missing from the fresh result set") in what
    # a change inside the tolerance is not a move
    assert compare_reports(COMMITTED, fresh, Tolerance(rtol=0.1)).query("file == 'table1.csv' and what == 'moved'"
                                                                      ).empty
    assert main(["compare", str(fresh), "--committed", str(COMMITTED)]) == 1
    assert "moved or missing" in capsys.readouterr().out
    assert main(["compare", str(tmp_path / "nowhere")]) == 2


def test_subfolders_are_compared_and_strict_lists_additions(tmp_path, capsys):
    fresh = _copy(tmp_path)
    summary = fresh / "prop31" / "prop31_summary.csv"
    s = pd.read_csv(summary)
    num = s.select_dtypes("number").columns[0]
    s.loc[0, num] = s.loc[0, num] * 2 + 1
    s.to_csv(summary, index=False)
    moved = compare_reports(COMMITTED, fresh)
    assert set(moved["file"]) == {"prop31/prop31_summary.csv"} and set(moved["what"]) == {"moved"}

    fresh = _copy(tmp_path / "b")
    perf = pd.read_csv(fresh / "performance.csv")
    pd.concat([perf, perf.iloc[[0]].assign(dataset="my_new_dataset")]).assign(extra=1.0).to_csv(
        fresh / "performance.csv", index=False)
    pd.DataFrame({"dataset": ["x"], "value": [1.0]}).to_csv(fresh / "new_table.csv", index=False)
    assert compare_reports(COMMITTED, fresh).empty  # additions are not moves against an older committed set
    what = {(r.file, r.column, r.what) for r in compare_reports(COMMITTED, fresh, additions=True).itertuples()}
    assert ("new_table.csv", "", "table only in the fresh result set") in what
    assert ("performance.csv", "extra", "column only in the fresh result set") in what
    assert any(w == ("performance.csv", "", "row only in the fresh result set") for w in what)
    assert main(["compare", str(fresh), "--committed", str(COMMITTED)]) == 0
    assert main(["compare", str(fresh), "--committed", str(COMMITTED), "--strict"]) == 1


def test_a_slice_is_compared_on_every_number_it_makes_and_nothing_else(tmp_path):
    """``compare --slice`` (the verify profile): the slice's rows must equal the committed ones exactly; the
    committed rows it does not make, the rows and tables that pool the whole set are not compared."""
    import pandas as pd

    from ctbench.report.tables.compare import compare_reports

    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    committed.mkdir()
    fresh.mkdir()
    full = pd.DataFrame({"dataset": ["LS", "Moon", "GMSC", "Avg."], "metric": "IP",
                         "reduction_pct": [19.0, 7.6, 5.0, 10.5]})
    full.to_csv(committed / "table1.csv", index=False)
    pd.DataFrame({"claim": ["ip_avg"], "verdict": ["reproduced"]}).to_csv(committed / "verdicts.csv", index=False)
    part = pd.DataFrame({"dataset": ["LS", "Moon", "Avg."], "metric": "IP", "reduction_pct": [19.0, 7.6, 13.3]})
    part.to_csv(fresh / "table1.csv", index=False)
    pd.DataFrame({"claim": ["ip_avg"], "verdict": ["partly"]}).to_csv(fresh / "verdicts.csv", index=False)
    # the per-seed cell table has a row per cell claim and seed, so a slice writes the others empty
    pd.DataFrame({"claim": ["t1_ip_gmsc"], "dataset": ["GMSC"], "metric": ["IP"], "seed": [7],
                  "reduction_pct": [5.1]}).to_csv(committed / "table1_seeds.csv", index=False)
    pd.DataFrame({"claim": ["t1_ip_gmsc"], "dataset": ["GMSC"], "metric": ["IP"], "seed": [7],
                  "reduction_pct": [float("nan")]}).to_csv(fresh / "table1_seeds.csv", index=False)
    assert compare_reports(committed, fresh, slice_of=True).empty
    assert len(compare_reports(committed, fresh)) > 0  # without --slice: GMSC missing, Avg. and the verdict moved

    part.loc[1, "reduction_pct"] = 7.6000001
    part.to_csv(fresh / "table1.csv", index=False)
    moved = compare_reports(committed, fresh, Tolerance(rtol=0, atol=0), slice_of=True)  # verify: exact
    assert moved[["key", "column", "what"]].values.tolist() == [["Moon / IP", "reduction_pct", "moved"]]

    part.loc[1, "reduction_pct"] = 7.6
    pd.concat([part, pd.DataFrame({"dataset": ["Circ"], "metric": ["IP"], "reduction_pct": [50.0]})]).to_csv(
        fresh / "table1.csv", index=False)
    moved = compare_reports(committed, fresh, slice_of=True)
    assert moved["what"].tolist() == ["row only in the fresh result set"] and moved["key"].tolist() == ["Circ / IP"]


def test_a_claim_judged_on_measured_time_is_not_compared_by_value(tmp_path):
    """The measured-time claim's numbers differ between identical runs; its row must still be there."""
    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    committed.mkdir()
    fresh.mkdir()
    rows = {"claim": ["ct_more_training_time", "ip_avg"], "file": ["training_time.csv", "table1.csv"],
            "ours": ["LS 10.2 vs 7.5", "13.38"]}
    pd.DataFrame(rows).to_csv(committed / "verdicts.csv", index=False)
    pd.DataFrame({**rows, "ours": ["LS 9.8 vs 7.1", "13.38"]}).to_csv(fresh / "verdicts.csv", index=False)
    assert compare_reports(committed, fresh, additions=True).empty
    pd.DataFrame({**rows, "ours": ["LS 9.8 vs 7.1", "13.40"]}).to_csv(fresh / "verdicts.csv", index=False)
    assert compare_reports(committed, fresh)["key"].tolist() == ["ip_avg"]
    pd.DataFrame({k: v[1:] for k, v in rows.items()}).to_csv(fresh / "verdicts.csv", index=False)
    assert compare_reports(committed, fresh)["what"].tolist() == ["row missing from the fresh result set"]
