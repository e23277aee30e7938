"""ctbench evaluate | robustness | attribution | report, end to end on tiny models."""

import json
from pathlib import Path

import pandas as pd
import pytest

from ctbench.api import train_from_config
from ctbench.cli import main
from ctbench.evaluation.aggregate import reduction_table

PUBLISHED = Path(__file__).resolve().parents[2] / "shared" / "reference" / "published"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("rep")
    base = {"data": {"name": "lin_sep"}, "training": {"epochs": 3, "nce": 200}, "mutability": "protected"}
    train_from_config(base).save(d / "ct.pt")
    train_from_config({**base, "objective": {"name": "vanilla"}}).save(d / "bl.pt")
    models = ["--model", f"CT={d / 'ct.pt'}", "--model", f"BL={d / 'bl.pt'}"]
    small = ["--set", "n_runs=5", "--set", "n_individuals=20", "--set", "lambdas=[0.5, 5.0]", "--quiet"]
    assert main(["evaluate", *models, *small, "--experiment", "single", "--out", str(d / "single.csv.gz")]) == 0
    assert main(["evaluate", *models, *small, "--experiment", "mutability", "--constrained",
                 "--out", str(d / "mut.csv.gz")]) == 0
    assert main(["robustness", *models, "--out", str(d / "rob.csv")]) == 0
    assert main(["attribution", *models, "--rounds", "5", "--samples", "200", "--out", str(d / "ig.csv")]) == 0
    args = ["report", "--eval", str(d / "single.csv.gz"), str(d / "mut.csv.gz"), "--robustness", str(d / "rob.csv"),
            "--attribution", str(d / "ig.csv"), "--n-boot", "50", "--out", str(d / "report")]
    if PUBLISHED.exists():
        args += ["--published", str(PUBLISHED)]
    assert main(args) == 0
    return d


def test_evaluation_outputs_carry_provenance(outputs):
    side = json.loads((outputs / "single.csv.gz.json").read_text())
    assert side["protocol"]["n_runs"] == 5 and side["fidelity"]["mode"] == "reference"
    assert side["provenance"]["ctbench_version"] and set(side["models"]) == {"CT", "BL"}
    df = pd.read_csv(outputs / "single.csv.gz")
    assert len(df) == 2 * 2 * 5 * 20 and set(df["experiment"]) == {"single"}
    mut = pd.read_csv(outputs / "mut.csv.gz")
    assert json.loads((outputs / "mut.csv.gz.json").read_text())["protocol"]["tau"] == 0.5
    assert (mut["redundancy"] >= 0.5).all()  # the protected feature never moves


def test_report_tables_match_the_recipe(outputs):
    rep = outputs / "report"
    index = json.loads((rep / "index.json").read_text())["written"]
    for name in ("table1", "table1_bootstrap", "table3", "appendix_ci", "table2", "robustness"):
        assert name in index and (rep / f"{name}.csv").exists() and (rep / f"{name}.md").exists()
    assert (rep / "robustness.png").exists() and (rep / "robustness.pdf").exists()
    t1 = pd.read_csv(rep / "table1.csv")
    single = pd.read_csv(outputs / "single.csv.gz").assign(dataset="LS")
    expected = reduction_table(single, "ip", kind="ip", label="IP", avg_row=False)
    got = t1[(t1.dataset == "LS") & (t1.metric == "IP")]
    assert got["reduction_pct"].iloc[0] == pytest.approx(expected["reduction_pct"].iloc[0])
    if PUBLISHED.exists():  # the primary comparison is the July 2025 preprint, the version reproduced
        assert got["pub_reduction_pct"].iloc[0] == pytest.approx(29.05)
        assert got["satml_2026_reduction_pct"].iloc[0] == pytest.approx(26.26)
    t2 = pd.read_csv(rep / "table2.csv")
    assert set(t2["model"]) == {"CT", "BL"} and (t2["n_rounds"] == 5).all()


def test_shipped_published_tables_are_the_shared_ones():
    """ctbench ships a copy of reference/published; the corrected appendix CI table labels its IP* rows itself."""
    from ctbench.report.tables.paper_tables import PUBLISHED_DIR

    ci = pd.read_csv(PUBLISHED_DIR / "appendix_ci_table.csv").set_index(["metric", "dataset"])
    assert ci.loc[("IP*", "LS"), "ct_mean_abs"] == 0.11 and ci.loc[("IP", "LS"), "ct_mean_abs"] == 2.51
    if PUBLISHED.exists():
        for f in PUBLISHED.glob("*.csv"):
            assert (PUBLISHED_DIR / f.name).read_bytes() == f.read_bytes(), f.name


def test_provenance_records_machine_config_and_input_code_versions(tmp_path):
    import json

    from ctbench.report.tables.paper_tables import write_extras

    ev = tmp_path / "e.csv.gz"
    ev.write_text("")
    (tmp_path / "e.csv.gz.json").write_text(json.dumps({"experiment": "single", "dataset": "lin_sep",
                                                         "fidelity": {"mode": "reference"},
                                                         "provenance": {"git_commit": "abc"}}))
    m = tmp_path / "m.pt"
    (tmp_path / "m.pt.json").write_text(json.dumps({"provenance": {"git_commit": "def+dirty"}}))
    write_extras(tmp_path / "out", evaluations=[ev], models=[], profile="paper", config={"seeds": [0, 1]})
    p = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert p["config"] == {"seeds": [0, 1]} and p["profile"] == "paper"
    assert p["machine"]["cpus"] >= 1
    assert p["input_code_versions"]["evaluations"] == {"abc": 1} and p["mixed"] is False
    write_extras(tmp_path / "out", evaluations=[ev], models=[m])
    p = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert p["input_code_versions"]["models"] == {"def+dirty": 1}
    assert p["mixed"] is True and p["code_versions"] == {"abc": 1, "def+dirty": 1} and p["dirty_inputs"] == 1


def _report_args(outputs, out, *extra):
    return ["report", "--eval", str(outputs / "single.csv.gz"), str(outputs / "mut.csv.gz"), "--attribution",
            str(outputs / "ig.csv"), "--n-boot", "20", "--published", "none", *extra, "--out", str(out)]


def test_a_stage_switched_off_is_neither_shown_nor_judged(outputs, tmp_path):
    """Issue 20 item 3: a report written with robustness on, then again with it off (and the workflow's other stages
    off): the old robustness files are moved aside, the book shows no robustness figure, the claim is not judged."""
    from ctbench.report.book.includes import render_includes
    from ctbench.report.claims import NOT_YET_RUN

    claims = Path(__file__).resolve().parents[1] / "claims.yaml"
    rep = tmp_path / "report"
    assert main(_report_args(outputs, rep, "--robustness", str(outputs / "rob.csv"), "--claims", str(claims))) == 0
    assert (rep / "robustness.png").exists() and (rep / "robustness.csv").exists()
    judged = pd.read_csv(rep / "verdicts.csv", keep_default_na=False).set_index("claim")
    assert judged.loc["robust_synthetic_same", "verdict"] != NOT_YET_RUN
    (rep / "figure1.png").write_bytes(b"an earlier run's figure")  # a stage of an earlier run, off in this one
    (rep / ".table1.csv.123.tmp").write_text("")                    # a writer's temporary file: left alone

    assert main(_report_args(outputs, rep, "--claims", str(claims), "--stages")) == 0
    for gone in ("robustness.png", "robustness.pdf", "robustness.csv", "robustness.md", "figure1.png"):
        assert not (rep / gone).exists() and (tmp_path / "report.stale" / gone).exists(), gone
    assert (rep / ".table1.csv.123.tmp").exists()
    run = json.loads((rep / "index.json").read_text())["run"]
    assert "robustness.csv" in run["moved_aside"] and run["stages"] == []
    assert set(run["files"]) == {p.relative_to(rep).as_posix() for p in rep.rglob("*")
                                 if p.is_file() and not p.name.startswith(".")}
    verdicts = pd.read_csv(rep / "verdicts.csv", keep_default_na=False).set_index("claim")
    assert verdicts.loc["robust_synthetic_same", "verdict"] == NOT_YET_RUN
    assert "robustness.csv not in the report" in verdicts.loc["robust_synthetic_same", "note"]
    pages = render_includes(rep, tmp_path / "book", claims_yaml=False)
    assert "robustness.png" not in pages["robustness"].read_text().replace("Not yet run in this profile: "
                                                                          "`robustness.png`", "")
    assert "Not yet run" in pages["robustness"].read_text()
    assert not (tmp_path / "book" / "_generated" / "report" / "robustness.png").exists()

    # the workflow names the stages it runs: their files stay
    (rep / "figure1.png").write_bytes(b"this run's figure")
    assert main(_report_args(outputs, rep, "--stages", "figure1")) == 0
    assert (rep / "figure1.png").exists()


def _with_version(src: Path, dst: Path, commit: str) -> Path:
    """A copy of an evaluation file whose sidecar says it was made by ``commit``."""
    dst.write_bytes(src.read_bytes())
    side = json.loads(Path(f"{src}.json").read_text())
    side["provenance"]["git_commit"] = commit
    Path(f"{dst}.json").write_text(json.dumps(side))
    return dst


def test_inputs_of_two_code_versions_are_refused_unless_allowed(outputs, tmp_path, capsys):
    """Issue 20 item 2: one clear error naming the files and versions, exit code 2, nothing written; --allow-mixed
    builds the set and marks it mixed in provenance.json."""
    a = _with_version(outputs / "single.csv.gz", tmp_path / "single.csv.gz", "a" * 40)
    b = _with_version(outputs / "mut.csv.gz", tmp_path / "mut.csv.gz", "b" * 40 + "+dirty.0123abcd")
    rep = tmp_path / "report"
    args = ["report", "--eval", str(a), str(b), "--n-boot", "20", "--published", "none", "--out", str(rep)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "2 code versions" in err and "a" * 40 in err and "b" * 40 + "+dirty.0123abcd" in err
    assert str(a) in err and str(b) in err and "--allow-mixed" in err
    assert not rep.exists()                                                   # nothing written

    assert main([*args, "--allow-mixed"]) == 0
    prov = json.loads((rep / "provenance.json").read_text())
    assert prov["mixed"] is True and prov["code_versions"] == {"a" * 40: 1, "b" * 40 + "+dirty.0123abcd": 1}
    assert prov["input_code_versions"]["evaluations"] == prov["code_versions"] and prov["dirty_inputs"] == 1
    assert json.loads((rep / "index.json").read_text())["run"]["mixed"] is True
    from ctbench.report.book.meta_pages import render_result_set
    assert "Mixed result set" in render_result_set(rep)


def test_a_publishing_report_refuses_uncommitted_inputs(outputs, tmp_path, capsys):
    dirty = "c" * 40 + "+dirty.89abcdef"
    a = _with_version(outputs / "single.csv.gz", tmp_path / "single.csv.gz", dirty)
    b = _with_version(outputs / "mut.csv.gz", tmp_path / "mut.csv.gz", dirty)
    rep = tmp_path / "report"
    args = ["report", "--eval", str(a), str(b), "--n-boot", "20", "--published", "none", "--out", str(rep)]
    assert main([*args, "--publish"]) == 2
    err = capsys.readouterr().err
    assert "uncommitted changes" in err and dirty in err and str(a) in err and not rep.exists()
    assert main(args) == 0                                                    # one version: not mixed
    prov = json.loads((rep / "provenance.json").read_text())
    assert prov["mixed"] is False and prov["dirty_inputs"] == 2 and prov["code_versions"] == {dirty: 2}
    from ctbench.report.book.meta_pages import render_result_set
    assert "one code version, `ccccccc` (uncommitted changes)" in render_result_set(rep)


def test_uncommitted_changes_are_a_code_version_of_their_own(tmp_path):
    """``git_commit`` marks a dirty tree with a digest of its diff: two different dirty states, two versions."""
    import subprocess

    from ctbench.io import git_commit, is_dirty

    def git(*a):
        return subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", "code.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    version = git_commit.__wrapped__  # uncached
    sha = git("rev-parse", "HEAD")
    assert version(tmp_path) == sha and not is_dirty(sha)
    (tmp_path / "code.py").write_text("x = 2\n")
    one = version(tmp_path)
    (tmp_path / "code.py").write_text("x = 3\n")
    two = version(tmp_path)
    assert one.startswith(f"{sha}+dirty.") and len(one) == len(sha) + 15 and is_dirty(one)
    assert two.startswith(f"{sha}+dirty.") and one != two
    (tmp_path / "code.py").write_text("x = 2\n")
    assert version(tmp_path) == one                                   # the same diff, the same version
    (tmp_path / "code.py").write_text("x = 1\n")
    assert version(tmp_path) == sha


def test_a_plugin_datasets_label_shows_in_the_report(outputs, tmp_path, monkeypatch):
    """Issue 22 item 3: a dataset registered with ``label="My Data"`` shows as "My Data" in Table 1 (and every
    other table of the report); ``ctbench report`` looks the label up in the registry, the paper's labels stay."""
    from ctbench.data import registry
    from ctbench.io import read_json_file

    monkeypatch.setattr(registry, "_LOADERS", dict(registry._LOADERS))
    monkeypatch.setattr(registry, "_INFO", dict(registry._INFO))
    registry.register("label_probe", family="synthetic", label="My Data")(lambda **kw: None)
    evals = []
    for name in ("single.csv.gz", "mut.csv.gz"):  # the lin_sep evaluations, renamed label_probe
        df = pd.read_csv(outputs / name)
        df["dataset"] = "label_probe"
        df.to_csv(tmp_path / name, index=False)
        side = read_json_file(outputs / f"{name}.json", "sidecar")
        (tmp_path / f"{name}.json").write_text(json.dumps({**side, "dataset": "label_probe"}))
        evals.append(str(tmp_path / name))
    rep = tmp_path / "report"
    assert main(["report", "--eval", *evals, "--n-boot", "20", "--published", "none", "--out", str(rep)]) == 0
    table1 = pd.read_csv(rep / "table1.csv")
    assert "My Data" in set(table1["dataset"]) and "label_probe" not in set(table1["dataset"])
    for f in rep.glob("*.csv"):
        assert "label_probe" not in f.read_text(), f.name
    assert "LS" in set(pd.read_csv(outputs / "report" / "table1.csv")["dataset"])  # a paper dataset: its label
