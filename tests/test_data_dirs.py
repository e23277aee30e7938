"""The data directories resolve as data/README.md says: every row of its two tables is checked against the code."""

import re
from pathlib import Path

import pytest

from ctbench.data import files

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "data" / "README.md"


def _table(header_start: str) -> list[list[str]]:
    """Rows (cells stripped of backticks) of the README table whose header row starts with ``header_start``."""
    lines = README.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(header_start))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip().strip("`") for c in ln.strip("|").split("|")])
    assert rows, f"no rows under {header_start!r} in {README}"
    return rows


def _setup(monkeypatch, tmp_path, var: str, env_cell: str, names: dict[str, str]) -> None:
    monkeypatch.chdir(tmp_path)
    if env_cell == "unset":
        monkeypatch.delenv(var, raising=False)
    elif env_cell == "empty":
        monkeypatch.setenv(var, "")
    else:
        monkeypatch.setenv(var, str(tmp_path / names[env_cell]))


def _expected(cell: str, tmp_path: Path, names: dict[str, str]) -> Path:
    return tmp_path / names[cell] if cell in names else tmp_path / cell  # "data/raw": relative to the cwd


def test_raw_data_directory_follows_the_readme(monkeypatch, tmp_path):
    names = {"D": "shared-data", "R": "given-raw"}
    rows = _table("| `CTBENCH_DATA` |")
    assert {r[0] for r in rows} == {"D", "empty", "unset"} and {r[1] for r in rows} == {"R", "not given"}
    for env_cell, arg_cell, where in rows:
        _setup(monkeypatch, tmp_path, files.ENV_DATA, env_cell, names)
        raw_dir = None if arg_cell == "not given" else tmp_path / names[arg_cell]
        assert files.data_dir(raw_dir) == _expected(where, tmp_path, names), (env_cell, arg_cell)
    assert ("unset", "not given", "data/raw") in {tuple(r) for r in rows}


def test_processed_cache_directory_follows_the_readme(monkeypatch, tmp_path):
    names = {"C": "shared-cache", "P": "given-cache"}
    rows = _table("| `CTBENCH_CACHE` |")
    assert ("unset", "not given", "data/processed") in {tuple(r) for r in rows}
    for env_cell, arg_cell, where in rows:
        _setup(monkeypatch, tmp_path, files.ENV_CACHE, env_cell, names)
        cache_dir = None if arg_cell == "not given" else tmp_path / names[arg_cell]
        assert files.cache_root(cache_dir) == _expected(where, tmp_path, names), (env_cell, arg_cell)


def test_a_loader_reads_raw_files_from_the_resolved_directory(monkeypatch, tmp_path):
    """End to end: with CTBENCH_DATA unset a missing raw file is looked for under ./data/raw, and with it set, there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(files.ENV_DATA, raising=False)
    with pytest.raises(Exception, match=re.escape(str(tmp_path / "data" / "raw" / "heloc"))):
        files.raw_path("heloc/heloc_dataset.csv")
    monkeypatch.setenv(files.ENV_DATA, str(tmp_path / "elsewhere"))
    with pytest.raises(Exception, match=re.escape(str(tmp_path / "elsewhere" / "heloc"))):
        files.raw_path("heloc/heloc_dataset.csv")


def test_gitignore_keeps_data_files_out_and_the_readmes_in():
    import subprocess

    def ignored(rel: str) -> bool:
        out = subprocess.run(["git", "check-ignore", "-q", "--no-index", rel], cwd=ROOT)
        return out.returncode == 0

    for rel in ("data/README.md", "data/raw/README.md", "data/processed/README.md"):
        assert (ROOT / rel).is_file() and not ignored(rel), rel
    for rel in ("data/raw/adult/adult.data", "data/raw/heloc/heloc_dataset.csv", "data/processed/moons/abc.npz",
                "data/processed/moons/abc.meta.json"):
        assert ignored(rel), rel
