"""Adding a dataset without editing ctbench: the README's section followed literally (ctbench/data/plugins.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")


def _readme_section() -> tuple[str, str]:
    """The loader code and the snakemake command of README's 'Adding a dataset' section, verbatim."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### Adding a dataset"):text.index("## Python API")]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    command = re.search(r"```bash\n(.*?)```", section, re.S).group(1).strip()
    return code, command


@pytest.fixture()
def project(tmp_path):
    """A working directory with the workflow (links) and the README's loader in my_loader.py."""
    for name in ("Snakefile", "workflow", "envs", "claims.yaml", "paper"):
        (tmp_path / name).symlink_to(ROOT / name)
    code, _ = _readme_section()
    (tmp_path / "my_loader.py").write_text(code)
    return tmp_path


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "CTBENCH_PLUGINS"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    return {**env, **extra}


def _snakemake(project: Path, command: str, *extra: str) -> subprocess.CompletedProcess:
    args = command.split()[1:]  # the README's command without the leading "snakemake"
    args = [a.strip("'") for a in args]
    return subprocess.run([str(SNAKEMAKE), *extra, *args], cwd=project, env=_env(), capture_output=True, text=True,
                          timeout=900)


def test_readme_dataset_runs_through_the_workflow(project):
    _, command = _readme_section()
    plan = _snakemake(project, command, "-n")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    text = plan.stdout + plan.stderr
    for stage in ("eval/single/my_data_s0", "models/single/my_data/full_s0.pt", "robustness/my_data_s0",
                  "report/index.json"):
        assert stage in text, stage
    # `datasets:` limits every stage: nothing of the smoke profile's synthetic data is planned
    assert "lin_sep" not in re.sub(r"consistency/black2022\S*", "", text)
    target = "results/smoke/eval/single/my_data_s0.parquet"
    run = _snakemake(project, command, target)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (project / target).stat().st_size > 0


def test_unknown_dataset_says_how_to_register(project):
    _, command = _readme_section()
    bad = _snakemake(project, command.replace("datasets=[my_data]", "datasets=[my_dataa]"), "-n")
    assert bad.returncode != 0
    out = bad.stdout + bad.stderr
    assert "unknown dataset 'my_dataa'" in out and "my_data" in out and "plugins:" in out


def test_plugin_from_the_environment_and_a_bad_plugin(project):
    ok = subprocess.run([sys.executable, "-m", "ctbench", "train", "--set", "data.name=my_data",
                         "--set", "training.epochs=1", "--out", str(project / "m.pt")], cwd=project,
                        env=_env(CTBENCH_PLUGINS="my_loader.py"), capture_output=True, text=True, timeout=600)
    assert ok.returncode == 0, ok.stderr
    assert (project / "m.pt").exists()
    (project / "broken.py").write_text("raise RuntimeError('boom')\n")
    bad = subprocess.run([sys.executable, "-m", "ctbench", "train", "--set", "data.name=my_data", "--out",
                          str(project / "x.pt")], cwd=project, env=_env(CTBENCH_PLUGINS="broken.py"),
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "importing 'broken.py' failed: RuntimeError: boom" in bad.stderr
