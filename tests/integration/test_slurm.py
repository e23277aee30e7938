"""The smoke profile through a real SLURM: the shipped workflow/profiles/slurm on a single-node cluster on localhost.

Needs root on Linux (it starts munged, slurmctld and slurmd, and writes /etc/slurm/slurm.conf, restored after);
installs Debian's slurm-wlm and munge with apt-get when they are missing, and skips when that is impossible.
Takes about four minutes on two cores: `pytest -m slow tests/integration/test_slurm.py`.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ctbench.workflow import Workflow

sys.path.insert(0, str(Path(__file__).resolve().parent))
from slurm_cluster import SlurmCluster, ensure_installed, running_slurm_daemons  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
PROFILE = ROOT / "workflow" / "profiles" / "slurm" / "config.yaml"
RES = "results/smoke"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the test SLURM cluster needs Linux"),
    pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                       reason="starting munged/slurmctld/slurmd and writing /etc/slurm/slurm.conf needs root"),
    pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed next to this Python"),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        pytest.skip("snakemake-executor-plugin-slurm is not installed (pip install -e '.[slurm]')")
    reason = ensure_installed()
    if reason:
        pytest.skip(f"no SLURM to test with: {reason}")
    if running_slurm_daemons():
        pytest.skip(f"SLURM daemons already run on this machine ({', '.join(running_slurm_daemons())}); "
                    "not replacing their slurm.conf")
    # a short path: the munge socket lives there (AF_UNIX paths are limited to 108 bytes)
    c = SlurmCluster(Path(tmp_path_factory.mktemp("slurm")))
    try:
        c.start()
        yield c
    finally:
        c.stop()


def _workdir(dst: Path) -> Path:
    """What the smoke profile reads from the working directory (ctbench itself is the installed package)."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("Snakefile", "workflow", "envs", "claims.yaml", "paper"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=shutil.ignore_patterns("_build", "_generated", "__pycache__"))
        else:
            shutil.copy(src, dst / name)
    return dst


def _default_resources(partition: str) -> list[str]:
    """The profile's default-resources with the partition set: on the command line, --default-resources replaces
    the profile's whole list, so the other entries are passed again (as docs/cluster.md says)."""
    res = dict(yaml.safe_load(PROFILE.read_text()).get("default-resources") or {})
    res["slurm_partition"] = partition
    return [f"{k}={v}" for k, v in res.items()]


def test_smoke_profile_runs_through_slurm(cluster, tmp_path):
    wd = _workdir(tmp_path / "repo")
    profile = yaml.safe_load(PROFILE.read_text())
    assert profile["executor"] == "slurm"
    # no slurmdbd here (nor on many small clusters): sacct never sees a job finish, squeue does
    assert profile["slurm-status-command"] == "squeue"

    cmd = [str(SNAKEMAKE), "--workflow-profile", "workflow/profiles/slurm",
           "--configfile", "workflow/config/smoke.yaml", "--default-resources", *_default_resources(cluster.partition),
           "--jobs", "4", "--latency-wait", "30",
           # test-only: poll every 5 s instead of 40 s, keep the SLURM logs of successful jobs to count them, and
           # do not guess an account from sacct (this cluster has none)
           "--slurm-init-seconds-before-status-checks", "5", "--slurm-keep-successful-logs", "--slurm-no-account"]
    env = {**os.environ, "PATH": f"{SNAKEMAKE.parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("SLURM_CONF", None)
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=wd, env=env, capture_output=True, text=True, timeout=720)
    elapsed = time.monotonic() - t0
    log = p.stdout + p.stderr
    if p.returncode != 0:
        book_log = wd / RES / "logs" / "book.log"
        extra = f"\n--- {book_log.name}\n{book_log.read_text()[-4000:]}" if book_log.exists() else ""
        pytest.fail(f"snakemake exited {p.returncode} after {elapsed:.0f} s\n{log[-12000:]}{extra}\n"
                    f"{cluster.diagnostics()}")

    # the outputs: report, models, evaluations and the book (the paths the DAG is built from)
    w = Workflow(yaml.safe_load((ROOT / "workflow" / "config" / "smoke.yaml").read_text()))
    assert json.loads((wd / RES / "report" / "index.json").read_text())
    expected = [w.path("report_index"), w.path("book_index"), *w.final_models(), *w.outputs("evaluation")]
    assert any(t.endswith("book/_build/html/index.html") for t in expected)
    missing = [t for t in expected if not (wd / t).is_file()]
    assert not missing, missing

    assert "Falling back to 'sacct'" not in log  # the status came from squeue, as the profile asks

    # every job went through SLURM: sbatch took it, wrote its log, and slurmctld saw it complete
    n_jobs = int(re.search(r"(\d+) of \1 steps \(100%\) done", log).group(1)) - 1  # minus the local `all`
    submitted = set(re.findall(r"has been submitted with SLURM jobid (\d+)", log))
    assert len(submitted) == n_jobs, (n_jobs, sorted(submitted))
    slurm_logs = {f.stem: f for f in (wd / ".snakemake" / "slurm_logs").rglob("*.log")}
    assert submitted <= slurm_logs.keys(), submitted - slurm_logs.keys()
    completed = set(re.findall(r"_job_complete: JobId=(\d+) WEXITSTATUS 0", cluster.log("slurmctld").read_text()))
    assert submitted <= completed, submitted - completed
    for f in slurm_logs.values():  # each job ran Snakemake's jobstep executor on the node (its own srun step)
        assert "--executor slurm-jobstep" in f.read_text(errors="replace"), f
    print(f"smoke profile through SLURM: {n_jobs} jobs in {elapsed:.0f} s")
