"""envs/ctbench.yaml (the conda environment of `snakemake --use-conda`) mirrors pyproject.toml's dependencies.

Conda itself is not run here (creating the environment needs the network); these tests pin down what it would
install, so that a dependency added to pyproject.toml and forgotten in the environment (or the reverse) fails CI.
"""

import os
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
ENV = ROOT / "envs" / "ctbench.yaml"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _env() -> tuple[list[str], list[Requirement]]:
    env = yaml.safe_load(ENV.read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    (pip,) = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    return conda, [Requirement(r) for r in pip]


def _by_name(reqs) -> dict[str, SpecifierSet]:
    out: dict[str, SpecifierSet] = {}
    for r in reqs:
        name = canonicalize_name(r.name)
        assert name not in out, f"{r.name} listed twice"
        out[name] = r.specifier
    return out


def test_env_pip_requirements_equal_pyproject_dependencies_and_book_extra():
    project = _pyproject()
    wanted = _by_name(Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["book"])
    _, pip = _env()
    have = _by_name(pip)
    assert set(have) == set(wanted), (f"only in envs/ctbench.yaml: {sorted(set(have) - set(wanted))}; "
                                      f"only in pyproject.toml: {sorted(set(wanted) - set(have))}")
    for name, spec in wanted.items():
        if name == "torch":
            continue
        assert have[name] == spec, f"{name}: env {have[name]} vs pyproject {spec}"


def test_env_pins_the_readme_torch_wheel_within_pyprojects_range():
    _, pip = _env()
    (torch,) = [r for r in pip if r.name == "torch"]
    (pinned,) = list(torch.specifier)
    assert pinned.operator == "==" and pinned.version == "2.13.0"
    (wanted,) = [Requirement(r) for r in _pyproject()["dependencies"] if Requirement(r).name == "torch"]
    assert wanted.specifier.contains(pinned.version)
    assert "torch==2.13.0" in (ROOT / "README.md").read_text()  # the README's install command pins the same wheel


def test_env_python_and_pip_from_conda_satisfy_requires_python():
    conda, _ = _env()
    assert "pip" in conda
    (python,) = [d for d in conda if d.startswith("python")]
    version = python.split("=")[-1]
    assert SpecifierSet(_pyproject()["requires-python"]).contains(version + ".0")
    assert version == "3.11"


def test_post_deploy_script_installs_the_checkout():
    script = ENV.with_name("ctbench.post-deploy.sh")  # the name Snakemake looks for next to the env file
    assert os.access(script, os.X_OK)
    text = script.read_text()
    assert "pip install --no-deps -e ." in text
