"""Same commit and config, bitwise the same results, however the run is scheduled (issue "One commit, one run", 4).

One small slice of the workflow (LS: final training of the single and mutability experiments, their evaluation,
robustness, integrated gradients, a grid search, the CT part of the consistency study) runs twice:

- run A: ``--cores 2``, training seeds [0, 1] (so seed 0's models train in a population with seed 1's), grid points
  chunked two per job;
- run B: ``--cores 1``, training seed [0] alone (another population membership and grouping), one grid point per job
  (another chunking and job order).

Everything seed 0 and the grid produce must be identical: model weights (``torch.equal``), evaluation, robustness,
attribution and consistency files (every column but wall-clock seconds), and the grid tables of the report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from ctbench.report.tables.compare import VOLATILE

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

pytestmark = pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed next to this Python")


def _config(results: str, seeds: list[int], chunk_size: int) -> dict:
    cfg = yaml.safe_load((ROOT / "workflow/config/smoke.yaml").read_text())
    cfg.update(results=results, datasets=["lin_sep"], experiments=["single", "mutability"], seeds=seeds,
               prop31={"enabled": False}, figures={"enabled": False}, book={"enabled": False},
               tune={"enabled": False}, fidelity_study={"enabled": False}, retrain={"enabled": False})
    cfg["grids"]["chunk_size"] = chunk_size
    cfg["consistency"]["ct"].update(datasets=["lin_sep"], seeds=[0])  # and Black et al.'s part on CTG, as smoke
    return cfg


def _run(wd: Path, name: str, cores: int, seeds: list[int], chunk_size: int) -> Path:
    (wd / f"{name}.yaml").write_text(yaml.safe_dump(_config(f"results/{name}", seeds, chunk_size)))
    env = {**os.environ, "PATH": f"{SNAKEMAKE.parent}{os.pathsep}{os.environ['PATH']}"}
    p = subprocess.run([str(SNAKEMAKE), "--cores", str(cores), "--configfile", f"{name}.yaml"], cwd=wd, env=env,
                       capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    return wd / "results" / name


def _table(path: Path) -> pd.DataFrame:
    """A result table (CSV, gzipped CSV or Parquet) without the columns that measure the machine."""
    df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    return df.drop(columns=[c for c in df.columns if VOLATILE.search(c)]).reset_index(drop=True)


def _seed0_files(res: Path) -> list[Path]:
    """The result files of training seed 0 (and of the grid, which uses the first seed), relative to ``res``."""
    pats = ("models/**/*_s0.pt", "eval/**/*_s0.*", "robustness/**/*_s0.*", "attribution/**/*_s0.*",
            "consistency/**/*_s0*")
    files = {p.relative_to(res) for pat in pats for p in res.glob(pat) if not p.name.endswith(".json")}
    return sorted(files)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    wd = tmp_path_factory.mktemp("determinism")
    for name in ("Snakefile", "workflow", "envs", "claims.yaml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, wd / name)
    a = _run(wd, "a", cores=2, seeds=[0, 1], chunk_size=2)
    b = _run(wd, "b", cores=1, seeds=[0], chunk_size=1)
    return a, b


def test_seed0_results_do_not_depend_on_cores_population_or_chunking(two_runs):
    a, b = two_runs
    files = _seed0_files(b)
    kinds = {f.parts[0] for f in files}
    assert {"models", "eval", "robustness", "attribution", "consistency"} <= kinds, kinds
    assert files == [f for f in _seed0_files(a)], "the two runs made different seed-0 files"
    for f in files:
        if f.suffix == ".pt":
            sa = torch.load(a / f, weights_only=True)["state_dict"]
            sb = torch.load(b / f, weights_only=True)["state_dict"]
            assert sa.keys() == sb.keys(), f
            for k in sa:
                assert torch.equal(sa[k], sb[k]), (str(f), k)
        else:
            pd.testing.assert_frame_equal(_table(a / f), _table(b / f), check_exact=True, obj=str(f))


def test_grid_tables_do_not_depend_on_chunking(two_runs):
    from ctbench.report.tables.compare import compare_reports

    a, b = two_runs
    ra, rb = a / "report", b / "report"
    grid_tables = sorted(p.relative_to(rb).as_posix() for p in rb.rglob("*.csv")
                         if p.name.startswith("grid") or "grids" in p.parts)
    assert grid_tables, "the report wrote no grid table"
    moved = compare_reports(ra, rb)
    moved = moved[moved.file.isin(grid_tables)]
    assert moved.empty, moved.to_string()
