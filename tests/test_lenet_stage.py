"""The lenet stage (issue 24 item 1, appendix F.1.2): one CT and one BL LeNet on MNIST at the final MNIST settings,
each its own job, so that training_time.csv gets ``model: lenet`` rows with each model's own measured seconds."""

import copy
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from ctbench import facts
from ctbench.errors import ConfigError
from ctbench.experiments import lenet
from ctbench.experiments.final_training import train_config
from ctbench.workflow import Workflow

ROOT = Path(__file__).resolve().parent.parent
PAPER = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())
DATA = Path(os.environ.get("CTBENCH_DATA", ROOT.parent / "shared" / "data"))


def test_the_jobs_are_the_final_mnist_configs_with_a_lenet():
    cfg = {**PAPER, "lenet": {"enabled": True, "datasets": None, "seed": 0, "epochs": None}}
    w = Workflow(cfg)
    jobs = w.jobs("lenet")
    assert [(j["dataset"], j["objective"], j["seed"]) for j in jobs] == [("mnist", "full", 0), ("mnist", "vanilla", 0)]
    for j in jobs:
        folder = "single" if j["objective"] == "full" else "baseline"
        mlp = train_config(cfg, folder, "mnist", j["objective"], 0)
        assert j["config"] == {**mlp, "model": {"type": "lenet"}}  # only the architecture differs
        assert j["config"]["training"] == {**mlp["training"], "epochs": 100, "batch_size": 1000, "nce": 5000}
        assert j["out"] == w.path("lenet_model", dataset="mnist", objective=j["objective"], seed=0)
        # training_time.csv names a model's experiment by the folder two above its file
        assert Path(j["out"]).parent.parent.name == "lenet"
    paper = Workflow(PAPER).jobs("lenet")  # the paper profile's pair: the weight update in 4 row chunks
    assert [j["config"]["training"]["grad_chunks"] for j in paper] == [4, 4]
    short = lenet.jobs({**cfg, "lenet": {"enabled": True, "seed": 3, "epochs": 2}})
    assert {j["config"]["training"]["epochs"] for j in short} == {2} and {j["seed"] for j in short} == {3}
    assert lenet.jobs({**cfg, "datasets": ["lin_sep"]}) == []  # `datasets:` narrows it, as every stage
    with pytest.raises(ConfigError, match="lenet.datasets: 'lin_sep' is a synthetic dataset"):
        lenet.jobs({**cfg, "lenet": {"enabled": True, "datasets": ["lin_sep"]}})
    assert lenet.jobs({**cfg, "lenet": {"enabled": False}}) == []
    assert not set(lenet.PATHS) & set(facts.PATHS)


def test_the_schema_takes_the_block():
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    schema = str(ROOT / "workflow/schemas/config.schema.yaml")
    validate(copy.deepcopy(PAPER), schema)
    with pytest.raises(WorkflowError, match="epochs"):
        validate({**PAPER, "lenet": {"enabled": True, "epochs": 0}}, schema)
    validate({**PAPER, "lenet": {"enabled": True, "search_threads": 8}}, schema)  # the CT job's search threads
    with pytest.raises(WorkflowError, match="search_threads"):
        validate({**PAPER, "lenet": {"enabled": True, "search_threads": 0}}, schema)
    with pytest.raises(WorkflowError, match="grad_chunks"):
        validate({**PAPER, "lenet": {"enabled": True, "grad_chunks": 0}}, schema)


@pytest.mark.skipif(not (DATA / "mnist").is_dir(), reason="the MNIST files are not in CTBENCH_DATA")
def test_a_lenet_model_gives_a_lenet_row_of_training_time(tmp_path, monkeypatch):
    """One epoch on a tiny MNIST resample: the sidecar records the LeNet and its own seconds (not a population's)."""
    from ctbench.report.claims import training_times
    from ctbench.training.pipeline import train_from_config

    monkeypatch.setenv("CTBENCH_DATA", str(DATA))
    cfg = {**PAPER, "results": str(tmp_path), "data_params": {"mnist": {"n_per_class": 20, "n_val": 20}},
           "training": {"epochs": 1}, "training_overrides": {"training.nce": 10},
           "lenet": {"enabled": True}}
    sidecars = []
    for job in lenet.jobs(cfg):
        res = train_from_config(job["config"])
        res.save(job["out"])
        sidecars.append(f"{job['out']}.json")
        assert "population" not in res.meta
    tt = training_times(sidecars)
    assert list(tt["model"]) == ["lenet", "lenet"] and list(tt["objective"]) == ["full", "vanilla"]
    assert list(tt["dataset"]) == ["MNIST", "MNIST"] and (tt["train_seconds"] > 0).all()
    assert tt["train_seconds"].nunique() == 2
    assert json.loads(Path(sidecars[0]).read_text())["model_spec"]["type"] == "lenet"


def test_the_evaluation_is_the_single_mnist_evaluation_of_the_lenet_pair():
    """Same protocol as the MLPs' MNIST evaluation (the evaluation planner's job), the LeNet files as models, its
    own file outside facts.PATHS; none while the stage is off."""
    from ctbench.experiments.evaluation import jobs as evaluation_jobs

    cfg = {**PAPER, "lenet": {"enabled": True, "datasets": None, "seed": 0, "epochs": None}}
    w = Workflow(cfg)
    (job,) = w.jobs("lenet_evaluation")
    mlp = next(j for j in evaluation_jobs(cfg) if (j["experiment"], j["dataset"], j["seed"]) == ("single", "mnist", 0))
    assert {k: v for k, v in job.items() if k not in ("models", "out")} == {k: v for k, v in mlp.items()
                                                                             if k != "models"}
    assert job["settings"] == {"n_runs": 100, "lambdas": [0.1, 0.5, 1.0, 5.0, 10.0], "seed": 0, "n_individuals": 25}
    assert list(job["models"]) == list(mlp["models"]) == ["full", "vanilla"]  # the names key the random streams
    trained = {j["objective"]: j["out"] for j in w.jobs("lenet")}
    assert job["models"] == trained
    assert job["out"] == w.path("lenet_evaluation", experiment="single", dataset="mnist", seed=0)
    assert w.job("lenet_evaluation", {"experiment": "single", "dataset": "mnist", "seed": "0"}) is job
    assert "lenet_evaluation" not in facts.PATHS
    assert lenet.evaluation_jobs({**cfg, "lenet": {"enabled": True, "seed": 4}})[0]["models"]["full"].endswith(
        "full_s4.pt")
    assert lenet.evaluation_jobs({**cfg, "lenet": {"enabled": False}}) == []


def _evaluation_rows(ct_factor: float, n_runs: int = 6) -> pd.DataFrame:
    """Rows of one LeNet pair's single evaluation: BL's metrics ≈ 10, CT's = factor × BL's."""
    g = np.random.default_rng(0)
    rows = []
    for run in range(n_runs):
        for lam in (0.5, 5.0):
            for _ in range(4):
                base = 10 + g.normal(0, 0.1)
                for obj, mult in (("vanilla", 1.0), ("full", ct_factor)):
                    v = base * mult
                    rows.append({"dataset": "mnist", "experiment": "single", "seed": 0, "model": obj, "run": run,
                                 "lambda_energy": lam, "objective": obj, "valid": True, "ip": v, "ip_star": v / 100,
                                 "cost": v})
    return pd.DataFrame(rows)


def test_the_lenet_table_is_table_1s_recipe_beside_the_mlps_cells(tmp_path):
    from ctbench.report.tables.lenet_table import NOTE, write_lenet_table
    from ctbench.report.tables.paper_tables import PUBLISHED_DIR
    from ctbench.report.tables.table1 import table1

    rows = _evaluation_rows(0.8)
    rows.to_csv(tmp_path / "lenet.csv", index=False)
    out = tmp_path / "report"
    out.mkdir()
    mlp = pd.DataFrame([{"dataset": "MNIST", "metric": m, "reduction_pct": v, "pm": 1.0, "significant": True}
                        for m, v in (("IP", 6.5), ("IP*", -21.0), ("Cost", -36.5))])
    mlp.to_csv(out / "table1.csv", index=False)
    mlp[mlp["metric"] == "Cost"].assign(reduction_pct=-35.9).to_csv(out / "appendix_cost_unconstrained.csv",
                                                                    index=False)
    written = {"table1": {}, "appendix_cost_unconstrained": {}}
    added = write_lenet_table(out, [tmp_path / "lenet.csv"], written, PUBLISHED_DIR)
    assert added["table1_lenet"]["csv"] == "table1_lenet.csv"
    t = pd.read_csv(out / "table1_lenet.csv").set_index("metric")
    assert list(t.index) == ["IP", "IP*", "Cost (unconstrained)"] and set(t["model"]) == {"LeNet"}
    ref = table1(rows.assign(dataset="MNIST")).query("dataset == 'MNIST'").set_index("metric")
    for m in ("IP", "IP*"):
        assert t.loc[m, "reduction_pct"] == pytest.approx(ref.loc[m, "reduction_pct"], rel=1e-12)
        assert t.loc[m, "pm"] == pytest.approx(ref.loc[m, "pm"], rel=1e-12)
    assert t.loc["IP", "reduction_pct"] == pytest.approx(20.0, abs=0.5)
    # our MLP's cell of the same metric (the unconstrained cost from the appendix table, not Table 1's constrained)
    assert list(t["mlp_reduction_pct"]) == [6.5, -21.0, -35.9]
    # the paper's MLP values: Table 1's IP and IP*, the appendix's unconstrained cost (July; final with its star)
    assert list(t["preprint_2025_07_reduction_pct"]) == [7.05, -25.09, -31.67]
    assert list(t["satml_2026_reduction_pct"]) == [6.36, -70.31, -40.71]
    assert t.loc["IP", "preprint_2025_07_agreement"] == "sign and significance"
    assert t.loc["Cost (unconstrained)", "preprint_2025_07_agreement"] == "disagrees"  # CT 20% cheaper, MLP dearer
    assert (t["note"] == NOTE).all() and "beyond the paper" in NOTE
    # an MLP table this run did not write (a stale file) is not read
    write_lenet_table(out, [tmp_path / "lenet.csv"], {}, PUBLISHED_DIR)
    assert pd.read_csv(out / "table1_lenet.csv")["mlp_reduction_pct"].isna().all()
    assert write_lenet_table(out, [], written, PUBLISHED_DIR) == {}


def test_the_book_shows_the_lenet_rows_or_says_they_did_not_run(tmp_path):
    from ctbench.report.book.table_pages import render_table1_lenet

    assert "Not yet run in this profile: `table1_lenet.csv`" in render_table1_lenet(tmp_path)
    pd.DataFrame([{"model": "LeNet", "dataset": "MNIST", "metric": "IP", "reduction_pct": 12.5, "pm": 1.5,
                   "significant": True, "mlp_reduction_pct": 6.51, "mlp_pm": 1.33, "mlp_significant": True,
                   "preprint_2025_07_reduction_pct": 7.05, "preprint_2025_07_pm": 1.8,
                   "preprint_2025_07_significant": True, "preprint_2025_07_agreement": "sign and significance",
                   "satml_2026_reduction_pct": 6.36, "satml_2026_pm": 1.7, "satml_2026_significant": True,
                   "flag": ""}]).to_csv(tmp_path / "table1_lenet.csv", index=False)
    text = render_table1_lenet(tmp_path)
    assert "Beyond the paper" in text
    assert "| MNIST | IP | 12.50\u00a0±\u00a01.50\\* | 6.51\u00a0±\u00a01.33\\* |" in text
    assert "7.05\u00a0±\u00a01.80\\*" in text and "sign and significance" in text


@pytest.mark.skipif(not (DATA / "mnist").is_dir(), reason="the MNIST files are not in CTBENCH_DATA")
def test_report_lenet_eval_writes_the_lenet_rows_and_judges_their_claims(tmp_path, monkeypatch):
    """The stage's commands on a tiny LeNet pair: `ctbench evaluate` with the planned job's models and settings (fewer
    runs), then `ctbench report --lenet-eval`: table1_lenet.csv appears and the lenet claims are judged; without
    --lenet-eval neither."""
    from ctbench.cli import main
    from ctbench.training.pipeline import train_from_config

    monkeypatch.setenv("CTBENCH_DATA", str(DATA))
    cfg = {**PAPER, "results": str(tmp_path), "data_params": {"mnist": {"n_per_class": 20, "n_val": 20}},
           "training": {"epochs": 1}, "training_overrides": {"training.nce": 10}, "lenet": {"enabled": True},
           "evaluation": {**PAPER["evaluation"], "n_runs": 2, "lambdas": [5.0]}}
    for job in lenet.jobs(cfg):
        train_from_config(job["config"]).save(job["out"])
    (job,) = lenet.evaluation_jobs(cfg)
    sets = [a for k, v in job["settings"].items() for a in ("--set", f"{k}={json.dumps(v)}")]
    assert main(["evaluate", "--model", *[f"{n}={p}" for n, p in job["models"].items()], *sets,
                 "--experiment", job["experiment"], "--out", job["out"], "--quiet"]) == 0
    claims = str(ROOT / "claims.yaml")
    assert main(["report", "--lenet-eval", job["out"], "--claims", claims, "--out", str(tmp_path / "rep")]) == 0
    t = pd.read_csv(tmp_path / "rep" / "table1_lenet.csv")
    assert list(t["metric"]) == ["IP", "IP*", "Cost (unconstrained)"] and set(t["dataset"]) == {"MNIST"}
    v = pd.read_csv(tmp_path / "rep" / "verdicts.csv").set_index("claim")
    assert v.loc["lenet_ip_mnist", "verdict"] != "not yet run"
    assert main(["report", "--claims", claims, "--out", str(tmp_path / "off")]) == 0
    assert not (tmp_path / "off" / "table1_lenet.csv").exists()
    assert pd.read_csv(tmp_path / "off" / "verdicts.csv").set_index("claim").loc["lenet_ip_mnist",
                                                                                    "verdict"] == "not yet run"
