"""The report reads each evaluation file only where it can hold wanted rows, and with its text columns compact
(issue 21, branch report-once): the frames and tables are those of the old reads, bit for bit, on hand-made files."""

import filecmp

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from ctbench.evaluation.files import read_evaluations
from ctbench.experiments.evaluation import write
from ctbench.report.common import dataset_labels, with_labels
from ctbench.report.tables import eval_frames
from ctbench.report.tables import paper_tables as pt
from ctbench.report.tables.compact import as_text
from ctbench.report.tables.eval_frames import holds_none_of, holds_only, read_report_evaluations
from ctbench.report.tables.relabel import labelled

COLS = ("dataset", "experiment", "seed", "objective", "lambda_energy", "run", "valid", "ip", "ip_star", "cost")


def _rows(seed, exps, dataset, n=240):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "dataset": dataset, "experiment": np.array(exps)[rng.integers(0, len(exps), n)], "seed": seed % 2,
        "model": "m", "objective": np.array(["vanilla", "full"])[rng.integers(0, 2, n)],
        "lambda_energy": np.array([0.1, 1.0])[rng.integers(0, 2, n)], "run": rng.integers(0, 4, n),
        "valid": rng.random(n) < 0.7, "ip": rng.gamma(2.0, 1.0, n), "ip_star": rng.normal(0.1, 0.1, n),
        "cost": rng.gamma(3.0, 0.5, n), "ip_star_run": rng.normal(0.1, 0.1, n), "ip_star_pooled": rng.random(n)})
    df.loc[rng.random(n) < 0.1, "ip_star"] = np.nan
    df.attrs["meta"] = {"kind": "counterfactual_evaluation"}
    return df


def _files(tmp_path):
    """Files of one experiment each (the workflow's), files mixing experiments, and one without statistics."""
    specs = [("single", "moons"), ("mutability", "moons"), ("ablation", "moons"), ("single", "gmsc"),
             ("mutability", "gmsc"), ("ablation", "gmsc")]
    paths = [write(_rows(i, (e,), d), tmp_path / f"{e}_{d}.parquet") for i, (e, d) in enumerate(specs)]
    paths.append(write(_rows(7, ("ablation", "single"), "my_data"), tmp_path / "mixed.parquet"))
    bare = _rows(8, ("mutability",), "lin_sep")
    pq.write_table(pa_table(bare), tmp_path / "bare.parquet", write_statistics=False)
    (tmp_path / "bare.parquet.json").write_text("{}")
    return [*paths, tmp_path / "bare.parquet"]


def pa_table(df):
    import pyarrow as pa

    return pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(None)


@pytest.mark.parametrize("experiments", [("single",), ("mutability",), ("single", "mutability"), ("ablation",),
                                         ("none",)])
def test_files_without_wanted_rows_are_skipped_and_the_frame_is_the_old_one(tmp_path, experiments, monkeypatch):
    paths = _files(tmp_path)
    read = []
    real = pq.read_table
    monkeypatch.setattr(pq, "read_table", lambda p, *a, **k: read.append(p) or real(p, *a, **k))
    got = read_report_evaluations(paths, COLS, experiments)
    monkeypatch.setattr(pq, "read_table", real)
    want = read_evaluations(paths, COLS, experiments=experiments)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # every file is read whose rows could be wanted: the mixed one (ablation..single spans mutability) and the one
    # without statistics always; a file of one other experiment never
    names = {p.name for p in map(__import__("pathlib").Path, read)}
    want_read = {f"{e}_{d}.parquet" for e in experiments for d in ("moons", "gmsc")
                 if e in ("single", "mutability", "ablation")} | {"mixed.parquet", "bare.parquet"}
    assert names == want_read


def test_holds_none_of_reads_the_statistics(tmp_path):
    paths = _files(tmp_path)
    meta = {p.name: pq.read_metadata(p) for p in paths}
    assert holds_none_of(meta["single_moons.parquet"], {"mutability", "ablation"})
    assert not holds_none_of(meta["single_moons.parquet"], {"single"})
    assert not holds_none_of(meta["mixed.parquet"], {"mutability"})  # between ablation and single: read, filtered
    assert holds_none_of(meta["mixed.parquet"], {"zeta"})
    assert not holds_none_of(meta["bare.parquet"], {"single"})  # no statistics: read
    assert holds_only(meta["single_moons.parquet"], {"single"})  # read without the filter's copy
    assert holds_only(meta["single_moons.parquet"], {"single", "mutability"})
    assert not holds_only(meta["single_moons.parquet"], {"mutability"})
    assert not holds_only(meta["mixed.parquet"], {"single"})  # ablation rows too: filtered
    assert holds_only(meta["mixed.parquet"], {"single", "ablation"}) is False  # min != max: filtered all the same
    assert not holds_only(meta["bare.parquet"], {"mutability"})


def test_a_file_of_wanted_rows_only_is_not_filtered(tmp_path, monkeypatch):
    """No is_in/filter pass over a file whose statistics say all its rows are wanted; same frame."""
    import pyarrow.compute as pc

    paths = _files(tmp_path)
    calls = []
    real = pc.is_in
    monkeypatch.setattr(pc, "is_in", lambda *a, **k: calls.append(1) or real(*a, **k))
    for keep in (True, False):
        calls.clear()
        got = read_report_evaluations(paths[:2], COLS, ("single", "mutability"), keep_experiment=keep)
        assert calls == []
        want = read_evaluations(paths[:2], COLS, experiments=("single", "mutability"))
        pd.testing.assert_frame_equal(got, want if keep else want.drop(columns="experiment"), check_exact=True)
    calls.clear()
    read_report_evaluations(paths, COLS, ("single",))
    assert len(calls) == 2  # the mixed file and the one without statistics


@pytest.mark.parametrize("keep_experiment", [True, False])
def test_compact_read_is_read_evaluations_compact(tmp_path, keep_experiment):
    """Categoricals with sorted categories (Arrow unifies the files' dictionaries in order of appearance)."""
    paths = _files(tmp_path)[::-1]  # gmsc before moons, lin_sep first: appearance order is not sorted
    exps = ("single", "mutability")
    got = read_report_evaluations(paths, COLS, exps, compact=True, keep_experiment=keep_experiment)
    want = read_evaluations(paths, COLS, experiments=exps, compact=True)
    if not keep_experiment:
        want = want.drop(columns="experiment")
    pd.testing.assert_frame_equal(got, want, check_exact=True, check_categorical=True)
    assert list(got["dataset"].cat.categories) == sorted(got["dataset"].cat.categories)
    plain = read_report_evaluations(paths, COLS, exps, keep_experiment=keep_experiment)
    pd.testing.assert_frame_equal(as_text(got), plain, check_exact=True)


@pytest.mark.parametrize("names", [["circles", "moons", "gmsc"], ["Circ", "Moon"], ["circles", "mine", "adult"],
                                   ["over", "OL", "moons"], ["zz", "circles", "moons"]])
def test_labelled_categorical_is_with_labels_of_the_strings(names):
    """Same labels row by row as ``with_labels`` on strings; categories sorted (group-bys order as on strings)."""
    rng = np.random.default_rng(5)
    s = pd.Series(rng.choice(np.array(names, dtype=object), 400), dtype="str")
    df = pd.DataFrame({"dataset": s, "x": rng.random(400)})
    cat = df.astype({"dataset": pd.CategoricalDtype(sorted(set(names)))})
    with dataset_labels({"mine": "My data", "zz": "Aa"}):  # zz sorts last, its label first
        want, got = with_labels(df), labelled(cat)
    pd.testing.assert_frame_equal(got.astype({"dataset": "str"}), want, check_exact=True)
    if isinstance(got["dataset"].dtype, pd.CategoricalDtype):
        cats = list(got["dataset"].cat.categories)
        assert cats == sorted(cats)
        assert (got.groupby("dataset")["x"].sum().to_numpy() == want.groupby("dataset")["x"].sum().to_numpy()).all()


def test_report_tables_and_seed_tables_are_the_same_compact_or_not(tmp_path, monkeypatch):
    """Every evaluation table of the report, and every per-seed table, is the same frame from compact frames as
    from frames of strings."""
    from ctbench.report.claims import seeds as sd

    paths = _files(tmp_path)
    got = {}
    for compact in (False, True):
        monkeypatch.setattr(pt, "COMPACT", compact)
        got[compact] = pt._evaluation_tables(paths, pt.PUBLISHED_DIR, 25)
        for s in (0, 1):
            folder = tmp_path / f"seeds_{compact}_{s}"
            folder.mkdir()
            sd._evaluation_seed_tables(paths, s, folder, None)
    for k, v in got[False].items():
        if v is None:
            assert got[True][k] is None
            continue
        assert len(v)
        pd.testing.assert_frame_equal(got[True][k], v, check_exact=True)
    for s in (0, 1):
        a, b = tmp_path / f"seeds_False_{s}", tmp_path / f"seeds_True_{s}"
        names = sorted(p.name for p in a.iterdir())
        assert "table1.csv" in names and names == sorted(p.name for p in b.iterdir())
        assert all(filecmp.cmp(a / n, b / n, shallow=False) for n in names)


def test_the_compact_switch_reaches_the_reader(tmp_path, monkeypatch):
    """The report's passes ask for compact frames (the switch is not dead code)."""
    seen = []
    real = eval_frames.read_report_table

    def spy(*a, **k):
        seen.append(a[5] if len(a) > 5 else k.get("compact", False))
        return real(*a, **k)

    monkeypatch.setattr(eval_frames, "read_report_table", spy)
    monkeypatch.setattr(pt, "COMPACT", True)
    pt._evaluation_tables(_files(tmp_path), None, 5)
    assert True in seen


def test_redundancy_table_skips_files_of_other_experiments(tmp_path, monkeypatch):
    """The redundancy table reads only files that can hold single/mutability rows; the table is the one of
    reading every file."""
    from ctbench.report.tables import extra_tables

    paths = _files(tmp_path)
    for p in paths:  # the column the table needs
        df = pd.read_parquet(p).assign(redundancy=lambda d: d["ip"] / 10)
        df.attrs["meta"] = {"kind": "counterfactual_evaluation"}
        write(df, p)
    read = []
    real = extra_tables.read_evaluation
    monkeypatch.setattr(extra_tables, "read_evaluation", lambda p, *a, **k: read.append(p.name) or real(p, *a, **k))
    got = extra_tables.redundancy_table(paths)
    assert not any(n.startswith("ablation_") for n in read) and "mixed.parquet" in read and "bare.parquet" in read
    monkeypatch.setattr(extra_tables, "_no_rows_of", lambda *a: False)
    read.clear()
    want = extra_tables.redundancy_table(paths)
    assert any(n.startswith("ablation_") for n in read)
    assert len(got) == 6  # (moons, gmsc) x (single, mutability), lin_sep mutability, my_data single (mixed file)
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def _ablation_files(tmp_path, single_objectives=("vanilla", "full")):
    """Per (experiment, dataset, seed) files as the workflow writes them; 'mine' shares the label Moon with moons."""
    paths = []
    for e, objs in (("single", single_objectives), ("mutability", ("full", "vanilla")),
                    ("ablation", ("energy", "adversarial"))):
        for d in ("moons", "gmsc", "mine"):
            for s in (0, 1):
                df = _rows(10 * s + len(d), (e,), d, n=300).assign(seed=s)
                df["objective"] = np.array(objs)[np.random.default_rng(len(paths)).integers(0, len(objs), 300)]
                paths.append(write(df, tmp_path / f"{e}_{d}_s{s}.parquet"))
    return paths


def _tables_way(paths, cols):
    from ctbench.report.tables.ablation_parts import ablation_from_tables
    from ctbench.report.tables.eval_frames import read_report_table

    _, abl = read_report_table(paths, cols, ("ablation",), keep_experiment=False)
    _, single = read_report_table(paths, cols, ("single",), keep_experiment=False)
    return ablation_from_tables(abl, single)


@pytest.mark.parametrize("order", ["as_written", "shuffled"])
def test_ablation_from_files_is_the_tables_table(tmp_path, order, monkeypatch):
    """One dataset label's files at a time: the ablation table of the two whole tables, bit for bit (rows in the
    same order: positions in the tables follow the files' order); two datasets of one label read together."""
    from ctbench.report.tables.ablation_files import ablation_from_files

    paths = _ablation_files(tmp_path)
    if order == "shuffled":
        paths = [paths[i] for i in np.random.default_rng(2).permutation(len(paths))]
    cols = (*pt.EVAL_KEYS, "ip", "ip_star")
    reads = []
    real = pq.read_table
    monkeypatch.setattr(pq, "read_table", lambda p, *a, **k: reads.append(
        (p.name, tuple(k.get("columns") or ()))) or real(p, *a, **k))
    with dataset_labels({"mine": "Moon"}):
        got = ablation_from_files(paths, cols)
        monkeypatch.setattr(pq, "read_table", real)
        want = _tables_way(paths, cols)
    assert len(want) == 2 * 4 * 2  # (Moon, GMSC) x (the four objectives) x (IP, IP*)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    full = [n for n, c in reads if c != ("objective",)]
    assert sorted(full) == sorted(p.name for p in paths if not p.name.startswith("mutability"))  # each once


def test_ablation_from_files_leaves_other_files_to_the_tables(tmp_path):
    """None (the tables' way) for files mixing experiments, single rows the ablation does not borrow, CSV."""
    from ctbench.report.tables.ablation_files import ablation_from_files

    cols = (*pt.EVAL_KEYS, "ip", "ip_star")
    paths = _ablation_files(tmp_path / "a" if (tmp_path / "a").mkdir() is None else tmp_path)
    assert ablation_from_files(paths, cols) is not None
    mixed = write(_rows(3, ("ablation", "single"), "moons"), tmp_path / "mixed.parquet")
    assert ablation_from_files([*paths, mixed], cols) is None
    other = _ablation_files(tmp_path / "b" if (tmp_path / "b").mkdir() is None else tmp_path,
                            single_objectives=("vanilla", "full", "energy"))
    assert ablation_from_files(other, cols) is None
    assert ablation_from_files([*paths, tmp_path / "x.csv"], cols) is None
