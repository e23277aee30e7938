import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)
    yield


@pytest.fixture(scope="session")
def smoke_plan(tmp_path_factory):
    """Rule → jobs of the smoke profile's dry run (``tests/workflow_plan.py``), planned once for the tests that read
    it; paths under the results folder are written ``{results}``."""
    import sys
    from pathlib import Path

    tests = Path(__file__).resolve().parent
    sys.path.insert(0, str(tests))
    from workflow_plan import SNAKEMAKE, copy_workflow, jobs_by_rule

    if not SNAKEMAKE.exists():
        pytest.skip("snakemake is not installed next to this Python")
    work = copy_workflow(tmp_path_factory.mktemp("smoke_plan"))
    return jobs_by_rule(work, "smoke", str(work / "res"))
