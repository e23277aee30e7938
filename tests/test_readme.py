"""The README's runnable examples stay runnable."""

import re
from pathlib import Path

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def _block(after_heading: str) -> str:
    m = re.search(re.escape(after_heading) + r".*?```python\n(.*?)```", README, re.S)
    assert m, f"no python block after {after_heading!r}"
    return m.group(1)


def test_adding_a_dataset_example_registers_and_trains():
    ns: dict = {}
    exec(_block("### Adding a dataset"), ns)
    from ctbench.api import train_from_config

    trained = train_from_config({"data": {"name": "my_data", "params": {"n": 1000}},
                                 "training": {"epochs": 2, "batch_size": 100, "nce": 50}})
    assert trained.meta["dataset"]["name"] == "my_data" and trained.meta["acc_test"] > 0.6


def test_building_blocks_example_respects_constraints():
    ns: dict = {}
    exec(_block("Lower-level building blocks"), ns)
    res, x = ns["res"], ns["x"]
    assert res.counterfactual.shape == (10_000, 4)
    assert bool((res.counterfactual[:, 0] == x[:, 0]).all())
    assert bool((res.counterfactual[:, 1] >= x[:, 1]).all()) and bool((res.counterfactual[:, 2] <= x[:, 2]).all())


def test_consistency_example_runs_every_method_with_and_without_sns():
    ns: dict = {}
    exec(_block("### The consistency study"), ns)
    import torch

    from ctbench.generators.sns import integrated_score

    res, x, target, model = ns["results"], ns["x"], ns["target"], ns["model"]
    assert all(torch.equal(r.factual, x) for r in res.values())
    for name in ("min_l2", "min_eps_pgd"):
        base, sns = res[name], res[name + "+sns"]
        assert float(base.mature.float().mean()) > 0.9 and bool(sns.mature[base.mature].all())
        both = base.mature & sns.mature
        assert float(integrated_score(model, sns.counterfactual[both], target[both]).mean()) > \
            float(integrated_score(model, base.counterfactual[both], target[both]).mean())
        assert bool(((sns.counterfactual - base.counterfactual).norm(dim=1) <= 0.5 + 1e-5).all())
