"""An interrupted workflow resumes: kill Snakemake mid-run, rerun, and get what an uninterrupted run gives."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

pytestmark = pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed next to this Python")


def _workdir(tmp: Path) -> Path:
    """A copy of the workflow with a small config: one dataset, the single experiment, no grids or book."""
    tmp.mkdir(parents=True, exist_ok=True)
    for name in ("Snakefile", "workflow", "envs", "claims.yaml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp / name)
    cfg = yaml.safe_load((ROOT / "workflow/config/smoke.yaml").read_text())
    cfg.update(datasets=["lin_sep"], experiments=["single"], results="results/resume",
               robustness={"enabled": False}, attribution={"enabled": False}, prop31={"enabled": False},
               book={"enabled": False}, grids={"enabled": False}, tune={"enabled": False})
    cfg["training"] = {"epochs": 25}
    (tmp / "resume.yaml").write_text(yaml.safe_dump(cfg))
    return tmp


def _snakemake(wd: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PATH": f"{SNAKEMAKE.parent}{os.pathsep}{os.environ['PATH']}"}
    # SIGINT back to its default in the child: a test run started in the background by a non-interactive shell
    # inherits SIGINT ignored, and then Ctrl-C could never reach Snakemake
    return subprocess.Popen([str(SNAKEMAKE), "--cores", "1", "--configfile", "resume.yaml", *extra], cwd=wd,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _outputs(wd: Path) -> tuple[dict, pd.DataFrame]:
    res = wd / "results/resume"
    models = {p.name: torch.load(p, weights_only=True)["state_dict"] for p in sorted(res.glob("models/**/*.pt"))}
    ev = pd.read_parquet(res / "eval/single/lin_sep_s0.parquet").drop(columns="seconds")
    return models, ev


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """An uninterrupted run: the outputs every resumed run must reproduce."""
    wd = _workdir(tmp_path_factory.mktemp("clean"))
    p = _snakemake(wd)
    out, _ = p.communicate(timeout=600)
    assert p.returncode == 0, out
    return wd


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_killed_run_resumes_to_identical_outputs(tmp_path, clean, sig):
    wd = _workdir(tmp_path / "killed")
    p = _snakemake(wd)
    first_model = wd / "results/resume/models/single/lin_sep"
    deadline = time.time() + 300
    while time.time() < deadline and not any(first_model.glob("*.pt")):
        time.sleep(0.2)
    assert any(first_model.glob("*.pt")), "no model was written before the deadline"
    # kill while a job runs, not in the instant between two jobs (a signal that lands while Snakemake finishes one
    # job and starts the next may find nothing to interrupt, and the run then completes): wait for the next job's
    # log file, which the job's shell creates when it starts
    logs = wd / "results/resume/logs"
    seen = set(logs.rglob("*.log"))
    while time.time() < deadline and not set(logs.rglob("*.log")) - seen and p.poll() is None:
        time.sleep(0.05)
    os.killpg(p.pid, sig)  # the whole job tree (as Ctrl-C does), mid-way through the job after training
    p.wait(timeout=120)
    assert not (wd / "results/resume/report/index.json").exists()
    leftovers = [f for f in wd.glob("results/resume/**/.*.tmp")]
    for f in leftovers:  # an interrupted atomic write leaves only a hidden temp file, never a truncated output
        assert not f.name.endswith((".pt", ".csv", ".gz", ".parquet"))

    if sig == signal.SIGKILL:  # a hard kill leaves Snakemake's lock behind: the documented fix is --unlock
        assert subprocess.run([str(SNAKEMAKE), "--unlock", "--configfile", "resume.yaml"], cwd=wd,
                              capture_output=True).returncode == 0
    p = _snakemake(wd, "--rerun-incomplete")
    out, _ = p.communicate(timeout=600)
    assert p.returncode == 0, out

    m_clean, e_clean = _outputs(clean)
    m_res, e_res = _outputs(wd)
    assert m_clean.keys() == m_res.keys() and len(m_clean) == 2
    for name in m_clean:
        for k in m_clean[name]:
            assert torch.equal(m_clean[name][k], m_res[name][k]), (name, k)
    pd.testing.assert_frame_equal(e_clean, e_res)
