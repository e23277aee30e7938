"""The result-set check by stage code: inputs from several commits are one result set when the code of each input's
stage is the same at its commit as in the tree (what Snakemake's ``code=`` params rerun on), and mixed otherwise."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ctbench.errors import MixedInputsError
from ctbench.report.book.meta_pages import render_result_set
from ctbench.report.run_set import check_versions, current_code, summary

FILES = {
    "ctbench/__init__.py": "",
    "ctbench/cli/__init__.py": "",
    "ctbench/cli/eval_cmds.py": "from ..metrics import score\n",
    "ctbench/cli/train_cmds.py": "from ..models import fit\n",
    "ctbench/metrics.py": "def score():\n    return 1\n",
    "ctbench/models.py": "def fit():\n    return 1\n",
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, changes: dict[str, str], message: str) -> str:
    for rel, text in changes.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    return repo


def test_inputs_of_several_commits_with_their_stage_code_unchanged_are_one_set(repo):
    a = _commit(repo, FILES, "a")
    b = _commit(repo, {"ctbench/models.py": "def fit():\n    return 2\n"}, "training changes")  # eval code as at a
    versions = {"evaluations": {a: ["e0", "e1"]}, "models": {b: ["m0"]}}
    s = summary(versions, repo / "ctbench")
    assert s["mixed"] is False
    assert s["stage_code"]["evaluations"] == {"stage": "eval_cmds", "code": s["stage_code"]["evaluations"]["code"],
                                              "current": 2, "other": 0}
    assert check_versions(versions, root=repo / "ctbench")["mixed"] is False

    # models made at a were made by other training code than the tree's: mixed, refused, and the error says which
    stale = {"evaluations": {b: ["e0"]}, "models": {a: ["m0", "m1"]}}
    assert summary(stale, repo / "ctbench")["stage_code"]["models"]["other"] == 2
    with pytest.raises(MixedInputsError, match=r"models \(2 of 2, stage train_cmds\)"):
        check_versions(stale, root=repo / "ctbench")


def test_a_change_in_the_working_tree_or_an_unknown_commit_makes_the_set_mixed(repo):
    a = _commit(repo, FILES, "a")
    b = _commit(repo, {"ctbench/models.py": "def fit():\n    return 2\n"}, "b")
    (repo / "ctbench/metrics.py").write_text("def score():\n    return 3\n")  # uncommitted change of eval code
    versions = {"evaluations": {a: ["e0"]}, "models": {b: ["m0"]}}
    assert summary(versions, repo / "ctbench")["mixed"] is True
    unknown = {"evaluations": {"f" * 40: ["e0"]}, "models": {b: ["m0"]}}
    assert current_code(unknown, repo / "ctbench")["evaluations"]["other"] == 1
    dirty = {"evaluations": {a + "+dirty.0123": ["e0"]}, "models": {b: ["m0"]}}
    assert current_code(dirty, repo / "ctbench")["evaluations"]["other"] == 1


def test_comments_do_not_count_but_code_does(repo):
    a = _commit(repo, FILES, "a")
    b = _commit(repo, {"ctbench/metrics.py": "# why\ndef score():\n    '''doc'''\n    return 1\n"}, "comment")
    assert summary({"evaluations": {a: ["e"]}, "models": {b: ["m"]}}, repo / "ctbench")["mixed"] is False
    _commit(repo, {"ctbench/metrics.py": "def score():\n    return 5\n"}, "code")
    assert summary({"evaluations": {a: ["e"]}, "models": {b: ["m"]}}, repo / "ctbench")["mixed"] is True


def test_the_book_says_which_code_made_a_set_of_several_commits(tmp_path):
    import json

    prov = {"input_code_versions": {"evaluations": {"a" * 40: 3}, "models": {"b" * 40: 2}}, "mixed": False,
            "git_commit": "c" * 40, "stage_code": {
                "evaluations": {"stage": "eval_cmds", "code": "0123456789abcdef", "current": 3, "other": 0},
                "models": {"stage": "train_cmds", "code": "fedcba9876543210", "current": 2, "other": 0}}}
    (tmp_path / "provenance.json").write_text(json.dumps(prov))
    text = render_result_set(tmp_path)
    assert text.startswith("Every number in this book is what the code at `ccccccc` makes: its 5 input files")
    assert "2 commits" in text and "eval_cmds` 0123456789ab" in text and "Mixed" not in text
    prov["mixed"] = True
    (tmp_path / "provenance.json").write_text(json.dumps(prov))
    assert "Mixed result set" in render_result_set(tmp_path)
