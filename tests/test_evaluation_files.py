"""Evaluation files in Parquet and the report's narrow reader (issue 21, lever 3) give the frames of ``pd.read_csv``."""

import numpy as np
import pandas as pd
import pytest

from ctbench.errors import BadFileError
from ctbench.evaluation.files import REPORT_COLUMNS, read_evaluation, read_evaluations
from ctbench.experiments.evaluation import write


def _frame(n=500, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "dataset": "lin_sep", "experiment": "single", "seed": 3, "model": np.repeat(["full", "vanilla"], n // 2),
        "objective": np.repeat(["full", "vanilla"], n // 2), "lambda_energy": np.tile([0.1, 5.0], n // 2),
        "run": rng.integers(0, 10, n), "individual": np.arange(n), "index": rng.integers(0, 900, n),
        "factual": rng.integers(0, 2, n), "target": rng.integers(0, 2, n), "valid": rng.random(n) < 0.8,
        "valid_strict": rng.random(n) < 0.5, "p_target": rng.random(n).astype(np.float32), "mature": rng.random(n) < .5,
        "steps": rng.integers(1, 51, n), "cost": rng.random(n) * 3, "ip": rng.random(n) / 7, "redundancy": 0.0,
        "seconds": 0.25, "ip_star_run": rng.random(n), "ip_star_pooled": np.where(rng.random(n) < .1, np.nan, 1 / 3),
        "ip_star": rng.random(n), "ip_star_raw": -rng.random(n)})
    df.attrs["meta"] = {"kind": "counterfactual_evaluation"}
    return df


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_read_evaluation_equals_read_csv_of_the_csv(tmp_path, suffix):
    df = _frame()
    ref_path = write(df, tmp_path / "ref.csv")
    ref = pd.read_csv(ref_path)
    p = write(df, tmp_path / f"e{suffix}")
    assert p.with_name(p.name + ".json").exists()
    full = read_evaluation(p)
    pd.testing.assert_frame_equal(full, ref, check_exact=True)
    narrow = read_evaluations([p, p])
    assert list(narrow.columns) == [c for c in ref.columns if c in REPORT_COLUMNS]
    pd.testing.assert_frame_equal(narrow, pd.concat([ref, ref], ignore_index=True)[list(narrow.columns)],
                                  check_exact=True)


def test_read_evaluations_names_bad_files(tmp_path):
    bad = tmp_path / "x.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(BadFileError, match="x.parquet"):
        read_evaluations([bad])
    with pytest.raises(BadFileError, match="does not exist"):
        read_evaluations([tmp_path / "missing.parquet"])
    other = tmp_path / "o.csv"
    pd.DataFrame({"a": [1]}).to_csv(other, index=False)
    with pytest.raises(BadFileError, match="lacks the column"):
        read_evaluations([other])
    assert read_evaluations([]).empty


def _mixed(seed, exps=("single", "mutability", "ablation"), n=300):
    """One file's rows of several experiments, interleaved (the report keeps some of them)."""
    df = _frame(n, seed)
    rng = np.random.default_rng(seed)
    df["experiment"] = np.array(exps)[rng.integers(0, len(exps), n)]
    df["dataset"] = ["moons", "california_housing"][seed % 2]
    df.attrs["meta"] = {"kind": "counterfactual_evaluation"}
    return df


@pytest.mark.parametrize("experiments", [("single", "mutability"), ("single",), ("ablation", "single"), ("none",)])
def test_report_reader_gives_the_frame_of_read_evaluations(tmp_path, experiments):
    """The report's one-pass Arrow reader (issue 21) gives read_evaluations' frame exactly: columns, dtypes, values,
    row order and index, with files of one experiment only, none of the wanted ones, and CSV in the list."""
    from ctbench.report.tables.eval_frames import read_report_evaluations

    paths = [write(_mixed(0), tmp_path / "a.parquet"), write(_mixed(1, ("mutability",)), tmp_path / "b.parquet"),
             write(_mixed(2, ("ablation",)), tmp_path / "c.parquet"), write(_mixed(3), tmp_path / "d.parquet")]
    cols = ("dataset", "experiment", "seed", "objective", "lambda_energy", "run", "valid", "ip", "ip_star_pooled")
    for ps in (paths, [*paths[:2], write(_mixed(4), tmp_path / "e.csv.gz")]):
        want = read_evaluations(ps, cols, experiments=experiments)
        got = read_report_evaluations(ps, cols, experiments)
        pd.testing.assert_frame_equal(got, want, check_exact=True)
        if experiments != ("none",):
            assert len(got) > 0 and set(got["experiment"]) <= set(experiments)
    with pytest.raises(BadFileError, match="lacks the column"):
        read_report_evaluations([paths[0], write(_frame().drop(columns="model"), tmp_path / "m.parquet")], cols,
                                experiments)


def test_float32_column_conversion_is_the_plain_one_bit_for_bit():
    """The Parquet writer's float32 → float64 (the CSV text's value) converts each distinct value once: the same bits
    as converting every element, −0.0, NaN, ±inf, subnormals and repeated values included."""
    from ctbench.evaluation.files import float32_as_csv_float64

    rng = np.random.default_rng(3)
    special = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-45, -1e-45, 3.4028235e38, 0.1, 1 / 3],
                       dtype=np.float32)
    a = np.concatenate([rng.random(5000).astype(np.float32), np.round(rng.random(5000), 2).astype(np.float32),
                        special, rng.standard_normal(100).astype(np.float32) * 1e-30])
    rng.shuffle(a)
    plain = a.astype(str).astype(np.float64)
    new = float32_as_csv_float64(a)
    assert new.dtype == np.float64 and new.shape == a.shape
    assert np.array_equal(new.view(np.uint64), plain.view(np.uint64))
    assert float32_as_csv_float64(np.zeros(0, dtype=np.float32)).shape == (0,)
