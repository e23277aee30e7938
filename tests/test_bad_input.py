"""Bad input never passes silently (issue 12): every bad input of the issue and more, through the CLI, the Python API
and the workflow. Each case asserts the exit code (or the exception type), a message that names the input, and that
no output file was written. Good inputs that used to be refused (``1e-3``, Snakemake's ``--config`` values) are
checked to be accepted.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from ctbench.cli import main
from ctbench.errors import BadFileError, ConfigError, UserInputError

ROOT = Path(__file__).resolve().parent.parent
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
NO_CUDA = not torch.cuda.is_available()
#: a small, fast training set (training takes well under a second)
SMALL_DATA = "data.params={n_draws: 2000, n_train: 300, n_val: 100, n_test: 100}"


def _run(argv: list[str], capsys) -> tuple[int, str]:
    rc = main(argv)
    return rc, capsys.readouterr().err


def _nothing_written(folder: Path) -> None:
    """No output, no sidecar, no temporary file."""
    assert not folder.exists() or not any(folder.iterdir()), sorted(folder.iterdir())


def _sub(args: list[str], files: dict[str, Path], tmp: Path) -> list[str]:
    """``@name`` in an argument → the shared input file ``name`` (or a path under ``tmp`` that does not exist)."""
    return [re.sub(r"@([\w.]+)", lambda m: str(files.get(m.group(1), tmp / m.group(1))), a) for a in args]


def _needles(message: str, needles: tuple[str, ...]) -> None:
    assert "Traceback" not in message
    for n in needles:
        assert n in message, f"{n!r} not in {message!r}"


# -- a trained model and input files shared by the cases ---------------------------------------------------------
@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("inputs")
    model = d / "m.pt"
    assert main(["train", "--out", str(model), "--set", "training.epochs=2", "--set", "training.nce=50",
                 "--set", SMALL_DATA, "--quiet"]) == 0
    raw = model.read_bytes()
    (d / "truncated.pt").write_bytes(raw[: len(raw) // 3])
    (d / "text.pt").write_text("not a model\n")
    np.save(d / "x.npy", np.zeros((4, 2), dtype=np.float32))
    np.save(d / "wide.npy", np.zeros((4, 5), dtype=np.float32))
    np.save(d / "nan.npy", np.array([[0.0, np.nan]], dtype=np.float32))
    (d / "header_only.csv").write_text("x1,x2\n")
    (d / "empty.csv").write_text("")
    (d / "words.csv").write_text("x1,x2\n0.5,high\n")
    (d / "syntax.yaml").write_text("training: {epochs: 3\nseed: 1\n")
    (d / "list.yaml").write_text("- training\n- seed\n")
    (d / "quoted_false.yaml").write_text("fidelity_overrides: {nascent_inclusive: 'false'}\n")
    ev = "dataset,experiment,model,objective,lambda_energy,run,valid,cost,ip,ip_star\n" + \
        "lin_sep,single,full,full,1.0,0,True,0.1,0.2,0.3\n" * 2000
    packed = gzip.compress(ev.encode())
    (d / "eval.csv.gz").write_bytes(packed)
    (d / "truncated.csv.gz").write_bytes(packed[: len(packed) // 2])
    (d / "foreign.csv").write_text("a,b\n1,2\n")
    (d / "empty.csv.gz").write_bytes(b"")
    return {p.name: p for p in d.iterdir()}


@pytest.fixture(scope="module")
def failed_model(tmp_path_factory) -> Path:
    """A model kept after its training diverged (--keep-failed)."""
    out = tmp_path_factory.mktemp("failed") / "diverged.pt"
    rc = main(["train", "--out", str(out), "--set", "training.lr=1e6", "--set", "training.epochs=2", "--set",
               SMALL_DATA, "--keep-failed", "--quiet"])
    assert rc == 1 and out.exists()
    return out


# -- CLI: ctbench train (settings; every case fails before any training) -----------------------------------------
TRAIN = [
    # issue item 1: a boolean switch given as text is refused, never read as bool("false") = True
    ("switch-quoted-false", ["--set", "fidelity_overrides.nascent_inclusive='false'"],
     ("fidelity_overrides.nascent_inclusive", "'false'", "true or false", "without quotes")),
    ("switch-yes", ["--set", "fidelity_overrides.nascent_inclusive=yes"],
     ("fidelity_overrides.nascent_inclusive", "'yes'", "true or false")),
    ("switch-number-for-bool", ["--set", "fidelity_overrides.shuffle_batches=1"],
     ("fidelity_overrides.shuffle_batches", "true or false")),
    ("switch-file-quoted-false", ["--config", "@quoted_false.yaml"],
     ("fidelity_overrides.nascent_inclusive", "'false'")),
    ("switch-text-for-float", ["--set", "fidelity_overrides.ce_step_size=fast"],
     ("fidelity_overrides.ce_step_size", "'fast'", "a number > 0")),
    ("switch-bool-for-float", ["--set", "fidelity_overrides.ce_step_size=true"],
     ("fidelity_overrides.ce_step_size", "a number")),
    ("switch-out-of-range", ["--set", "fidelity_overrides.ce_step_size=0"],
     ("fidelity_overrides.ce_step_size", "out of range")),
    ("switch-misspelt", ["--set", "fidelity_overrides.nascent_inclusiv=false"],
     ("nascent_inclusiv", "unknown switch", "did you mean 'nascent_inclusive'")),
    ("switch-bad-choice", ["--set", "fidelity_overrides.maturity=always"],
     ("fidelity_overrides.maturity", "'always'", "threshold_or_exhausted")),
    ("fidelity-mode", ["--set", "fidelity=preprint"], ("fidelity", "preprint", "reference")),
    # issue item 5: out-of-range values say what is allowed
    ("epochs-negative", ["--set", "training.epochs=-5"], ("training.epochs", "-5", "≥ 1")),
    ("epochs-fraction", ["--set", "training.epochs=2.5"], ("training.epochs", "2.5", "whole number")),
    ("lr-zero", ["--set", "training.lr=0"], ("training.lr", "> 0")),
    ("lr-nan", ["--set", "training.lr=.nan"], ("training.lr", "not finite")),
    ("lr-text", ["--set", "training.lr=fast"], ("training.lr", "'fast'")),
    ("burnin", ["--set", "training.burnin=2"], ("training.burnin", "[0, 1]")),
    ("keep-failed-text", ["--set", "training.keep_failed=maybe"], ("training.keep_failed", "true or false")),
    ("tau", ["--set", "convergence.tau=1.5"], ("convergence.tau", "1.5", "(0, 1]")),
    ("convergence-kind", ["--set", "convergence.kind=sometimes"], ("convergence.kind", "max_iter")),
    ("objective-name", ["--set", "objective.name=magic"], ("objective.name", "magic")),
    ("lambda-negative", ["--set", "objective.lambda_div=-1"], ("objective.lambda_div", "≥ 0")),
    ("generator-type", ["--set", "generator.type=foo"], ("generator.type", "foo")),
    ("generator-text", ["--set", "generator.lambda_energy=abc"], ("generator.lambda_energy", "'abc'")),
    ("generator-key", ["--set", "generator.colour=red"], ("generator", "colour")),
    ("model-hidden", ["--set", "model.hidden=0"], ("model.hidden", "≥ 1")),
    ("device-tpu", ["--set", "device=tpu"], ("device", "tpu")),
    ("dataset", ["--set", "data.name=iris"], ("data.name", "iris")),
    ("threads", ["--set", "threads=0"], ("threads", "≥ 1")),
    ("seed-null", ["--set", "seed="], ("seed: null is not allowed", "integer")),
    ("set-without-value", ["--set", "seed"], ("--set", "'seed'", "key=value")),
    ("unknown-key", ["--set", "training.epoch=3"], ("training.epoch", "did you mean training.epochs")),
    # issue item 4: a YAML syntax error is a message naming the file and the line
    ("yaml-syntax", ["--config", "@syntax.yaml"], ("syntax.yaml", "not valid YAML", "line 2")),
    ("yaml-not-mapping", ["--config", "@list.yaml"], ("list.yaml", "mapping")),
    ("config-missing", ["--config", "@nowhere.yaml"], ("nowhere.yaml", "does not exist")),
    ("config-json", ["--config-json", "{not json"], ("--config-json", "not valid JSON")),
]


@pytest.mark.parametrize("extra,needles", [c[1:] for c in TRAIN], ids=[c[0] for c in TRAIN])
def test_train_refuses_bad_settings(extra, needles, files, tmp_path, capsys):
    out = tmp_path / "out"
    rc, err = _run(["train", *_sub(extra, files, tmp_path), "--out", str(out / "m.pt"), "--quiet"], capsys)
    assert rc == 2
    assert err.startswith("ctbench: error: ")
    _needles(err, needles)
    _nothing_written(out)


@pytest.mark.skipif(not NO_CUDA, reason="this machine has CUDA")
def test_train_refuses_cuda_without_a_gpu(tmp_path, capsys):
    rc, err = _run(["train", "--set", "device=cuda", "--out", str(tmp_path / "out" / "m.pt")], capsys)
    assert rc == 2
    _needles(err, ("device", "'cuda'", "no CUDA device", "device: cpu"))
    _nothing_written(tmp_path / "out")


def test_single_class_data_says_so(tmp_path, capsys):
    """Issue item 5: a dataset with one class says so (it said 'no training points of target class(es) [0]')."""
    rc, err = _run(["train", "--set", "data.params={shuffle_seed: 1, n_draws: 4, n_train: 2, n_val: 0, n_test: 2, "
                    "blob_points: numpy}",
                    "--out", str(tmp_path / "out" / "m.pt"), "--quiet"], capsys)
    assert rc == 2
    _needles(err, ("lin_sep", "one class only", "n_train"))
    _nothing_written(tmp_path / "out")


# -- training that diverges or does not learn (issue item 2) -----------------------------------------------------
FAILING = [
    ("lr-1e6-diverges", ["--set", "training.lr=1e6", "--set", "training.epochs=2", "--set", SMALL_DATA],
     ("training diverged", "epoch 1", "training.max_loss_growth", "training.lr")),
    ("inf-lambda-diverges", ["--set", "training.epochs=2", "--set", "objective.lambda_div=1e300", "--set",
                             SMALL_DATA], ("training diverged", "non-finite loss")),
    ("labels-without-signal", ["--set", "data.params={centers: [[0, 0], [0, 0]], n_val: 600}", "--set",
                               "objective.name=vanilla", "--set", "training.epochs=3"],
     ("training did not learn", "majority-class rate", "training.majority_margin")),
]


@pytest.mark.parametrize("extra,needles", [c[1:] for c in FAILING], ids=[c[0] for c in FAILING])
def test_failed_training_stops_with_its_figures_and_saves_nothing(extra, needles, tmp_path, capsys):
    rc, err = _run(["train", *extra, "--out", str(tmp_path / "out" / "m.pt"), "--quiet"], capsys)
    assert rc == 1
    _needles(err, needles)
    _nothing_written(tmp_path / "out")


def test_keep_failed_saves_the_run_marked_failed_and_it_is_refused_later(failed_model, files, tmp_path, capsys):
    sidecar = json.loads(Path(f"{failed_model}.json").read_text())
    assert sidecar["training_status"] == "failed" and "training diverged" in sidecar["training_failure"]
    assert sidecar["config"]["training"]["keep_failed"] is True and len(sidecar["log"]["epoch"]) == 1
    out = tmp_path / "out"
    rc, err = _run(["generate", "--model", str(failed_model), "--factuals", str(files["x.npy"]),
                    "--out", str(out / "cf.csv")], capsys)
    assert rc == 2
    _needles(err, (failed_model.name, "training failed", "inspection only"))
    rc, err = _run(["evaluate", "--model", f"CT={failed_model}", "--experiment", "single", "--out",
                    str(out / "e.csv")], capsys)
    assert rc == 2 and failed_model.name in err
    _nothing_written(out)
    from ctbench.api import load_model

    assert load_model(failed_model, allow_failed=True).failure == sidecar["training_failure"]


def test_in_a_population_only_the_failing_member_is_affected(tmp_path, capsys):
    good = {"data": {"name": "lin_sep", "params": {"n_draws": 2000, "n_train": 300, "n_val": 100, "n_test": 100}},
            "training": {"epochs": 2}}
    bad = {**good, "training": {"epochs": 2, "lr": 1e6}}
    a, b = tmp_path / "a.pt", tmp_path / "out" / "b.pt"
    rc, err = _run(["train", "--config-json", json.dumps(good), "--out", str(a), "--config-json", json.dumps(bad),
                    "--out", str(b), "--quiet"], capsys)
    assert rc == 1 and a.exists()
    _needles(err, ("not saved", "b.pt", "lr 1000000.0", "training diverged", "max_loss_growth"))
    _nothing_written(tmp_path / "out")


def test_the_learning_check_judges_only_where_it_means_something():
    """A short smoke run at chance (3 epochs × 20 batches) is not judged; nor are tiny validation sets or heavily
    imbalanced data; a long run at the majority rate is."""
    from ctbench.training.health import MIN_UPDATES, growth_message, learning_message

    balanced = np.array([0, 1] * 50)
    assert learning_message(0.5, balanced, 2, 60, 0.02) is None                   # too few updates to judge
    assert "majority-class rate 0.5000" in learning_message(0.51, balanced, 2, MIN_UPDATES, 0.02)
    assert learning_message(0.53, balanced, 2, MIN_UPDATES, 0.02) is None         # above the margin: it learnt
    assert learning_message(0.5, balanced[:10], 2, MIN_UPDATES, 0.02) is None     # 10 validation rows
    assert learning_message(0.95, np.array([0] * 95 + [1] * 5), 2, 10**4, 0.02) is None  # 95% majority
    assert learning_message(0.5, balanced, 2, 10**4, None) is None                # check turned off
    assert growth_message(367.0, 0.3, 7, 1e4) is None                             # the paper grids' worst case
    assert "exceeds training.max_loss_growth=10000" in growth_message(2e4, 0.3, 1, 1e4)
    assert growth_message(1e30, 0.3, 1, None) is None


def test_keep_failed_in_a_population_marks_only_that_member():
    from ctbench.api import FailedTraining, train_from_config, train_population_from_configs

    data = {"name": "lin_sep", "params": {"n_draws": 2000, "n_train": 300, "n_val": 100, "n_test": 100}}
    good = {"data": data, "training": {"epochs": 2}}
    out = train_population_from_configs({
        "good": good, "kept": {**good, "training": {"epochs": 2, "lr": 1e6, "keep_failed": True}},
        "dropped": {**good, "seed": 3, "training": {"epochs": 2, "lr": 1e6}}})
    assert out["good"].failure is None and out["good"].meta["population"]["size"] == 3
    assert "training diverged" in out["kept"].failure and len(out["kept"].log) == 1
    assert isinstance(out["dropped"], FailedTraining) and "training diverged" in out["dropped"].error
    single = train_from_config(good)
    for p, q in zip(single.model.parameters(), out["good"].model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)   # the healthy member is as if trained alone


# -- CLI: ctbench generate (issue items 3 and 4) -----------------------------------------------------------------
GENERATE = [
    ("wrong-width", ["--factuals", "@wide.npy"], ("wide.npy", "5 column(s)", "2 feature(s)")),
    ("target-5", ["--target", "5"], ("--target 5", "2 classes", "0..1")),
    ("target-negative", ["--target", "-1"], ("--target -1", "0..1")),
    ("truncated-pt", ["--model", "@truncated.pt"], ("truncated.pt", "cannot be read", "truncated")),
    ("text-pt", ["--model", "@text.pt"], ("text.pt", "cannot be read")),
    ("missing-model", ["--model", "@missing.pt"], ("missing.pt", "does not exist")),
    ("missing-factuals", ["--factuals", "@missing.csv"], ("missing.csv", "does not exist")),
    ("empty-factuals-file", ["--factuals", "@empty.csv"], ("empty.csv", "empty")),
    ("words-in-factuals", ["--factuals", "@words.csv"], ("words.csv", "numeric")),
    ("nan-factuals", ["--factuals", "@nan.npy"], ("nan.npy", "NaN")),
    ("generator-text", ["--generator", "lambda_energy=abc"], ("generator.lambda_energy", "'abc'")),
    ("generator-no-value", ["--generator", "lambda_energy"], ("--generator", "key=value")),
    ("generator-unknown", ["--generator", "colour=red"], ("generator", "colour")),
    ("tau", ["--tau", "1.5"], ("convergence.tau", "1.5")),
    ("max-iter", ["--max-iter", "-1"], ("convergence.max_iter", "-1")),
]


def _generate_argv(extra: list[str], files: dict[str, Path], out: Path) -> list[str]:
    given = {"--model": "@m.pt", "--factuals": "@x.npy", **dict(zip(extra[::2], extra[1::2], strict=True))}
    args = [a for kv in given.items() for a in kv]
    return ["generate", *_sub(args, files, out.parent), "--out", str(out / "cf.csv")]


@pytest.mark.parametrize("extra,needles", [c[1:] for c in GENERATE], ids=[c[0] for c in GENERATE])
def test_generate_refuses_bad_input(extra, needles, files, tmp_path, capsys):
    out = tmp_path / "out"
    rc, err = _run(_generate_argv(extra, files, out), capsys)
    assert rc == 2
    assert err.startswith("ctbench: error: ")
    _needles(err, needles)
    _nothing_written(out)


def test_zero_factuals_give_an_empty_result_at_once(files, tmp_path, capsys):
    """Issue item 3: an empty input is an empty result, at once (the search used to loop forever)."""
    signal.alarm(60)  # a hang fails the test instead of blocking the suite
    try:
        rc, err = _run(_generate_argv(["--factuals", "@header_only.csv", "--generator", "type=generic"], files,
                                      tmp_path), capsys)
    finally:
        signal.alarm(0)
    assert rc == 0 and "no rows" in err
    assert (tmp_path / "cf.csv").read_text().count("\n") == 1  # the header only


def test_zero_factuals_in_the_autograd_and_population_searches():
    from ctbench.generators import Convergence, make_generator
    from ctbench.generators.population import MemberSearchSettings, population_search
    from ctbench.models import build_model
    from ctbench.stacked import StackedMLP

    gen = make_generator({"type": "generic"})
    gen.closed_form = False  # the autograd loop, which never finished on an empty batch
    model = build_model({"type": "mlp", "hidden": 4, "layers": 1}, 2, 2, seed=0)
    signal.alarm(60)
    try:
        res = gen.search(model, torch.zeros(0, 2), torch.zeros(0, dtype=torch.long))
        settings = MemberSearchSettings.build([gen, gen], [Convergence(), Convergence()])
        pres = population_search(StackedMLP.from_models([model, model]), torch.zeros(2, 0, 2),
                                 torch.zeros(2, 0, dtype=torch.long), settings)
    finally:
        signal.alarm(0)
    assert len(res) == 0 and res.counterfactual.shape == (0, 2)
    assert pres.counterfactual.shape == (2, 0, 2) and pres.mature.shape == (2, 0)


# -- CLI: ctbench evaluate, report, grid, data -----------------------------------------------------------------------
OTHER = [
    ("evaluate-unknown-setting", ["evaluate", "--model", "CT=@m.pt", "--set", "n_run=5", "--experiment", "single"],
     ("protocol.n_run", "did you mean 'n_runs'")),
    ("evaluate-n-runs-zero", ["evaluate", "--model", "CT=@m.pt", "--set", "n_runs=0", "--experiment", "single"],
     ("protocol.n_runs", "≥ 1")),
    ("evaluate-empty-lambdas", ["evaluate", "--model", "CT=@m.pt", "--set", "lambdas=[]", "--experiment", "single"],
     ("protocol.lambdas", "empty")),
    ("evaluate-text-lambdas", ["evaluate", "--model", "CT=@m.pt", "--set", "lambdas=[abc]", "--experiment", "single"],
     ("protocol.lambdas", "'abc'")),
    ("evaluate-missing-model", ["evaluate", "--model", "CT=@missing.pt", "--experiment", "single"],
     ("missing.pt", "does not exist")),
    ("evaluate-truncated-model", ["evaluate", "--model", "CT=@truncated.pt", "--experiment", "single"],
     ("truncated.pt", "cannot be read")),
    # issue item 4: a truncated evaluation file given to report names the file (it was an EOFError)
    ("report-truncated-gz", ["report", "--eval", "@truncated.csv.gz"],
     ("truncated.csv.gz", "cannot be read", "truncated")),
    ("report-empty-gz", ["report", "--eval", "@empty.csv.gz"], ("empty.csv.gz", "cannot be read")),
    ("report-missing", ["report", "--eval", "@eval.csv.gz", "@gone.csv.gz"], ("gone.csv.gz", "not found")),
    ("report-foreign-csv", ["report", "--eval", "@foreign.csv"], ("foreign.csv", "lacks the column(s)")),
    ("grid-points-tau", ["grid", "points", "--grid", "gen_params", "--overrides", '{"tau": [1.5]}'],
     ("grids.gen_params.tau", "1.5", "(0, 1]", "convergence.tau")),
    ("grid-points-json", ["grid", "points", "--grid", "gen_params", "--overrides", "{tau: 1"],
     ("--overrides", "not valid JSON")),
    ("grid-baseline-lr-text", ["grid", "baseline", "--grid", "gen_params", "--dataset", "lin_sep", "--set",
                               "training.lr=fast"], ("training.lr", "'fast'")),
    ("grid-run-bad-eval", ["grid", "run", "--grid", "gen_params", "--dataset", "lin_sep", "--baseline", "@m.pt",
                           "--point", "tau0.75_egy5_T25_ecco", "--eval", '{"n_run": 2}'],
     ("grid evaluation.n_run", "unknown setting")),
    ("data-prepare-params", ["data", "prepare", "lin_sep", "--params", "n_draws=5"], ("--params", "not valid JSON")),
]


@pytest.mark.parametrize("argv,needles", [c[1:] for c in OTHER], ids=[c[0] for c in OTHER])
def test_other_commands_refuse_bad_input(argv, needles, files, tmp_path, capsys):
    out = tmp_path / "out"
    rc, err = _run([*_sub(argv, files, tmp_path), *([] if argv[:2] == ["grid", "points"] else
                                                    ["--out", str(out / "o.csv")])], capsys)
    assert rc == 2
    assert err.startswith("ctbench: error: ")
    _needles(err, needles)
    _nothing_written(out)


# -- good inputs that used to be refused -----------------------------------------------------------------------------
def test_one_typed_parser_for_every_command(tmp_path, capsys):
    """Issue item 5: `grid ... --set training.lr=1e-3` was 'expected a number, got "1e-3"' while train took it."""
    from ctbench.cli.grid_cmds import _sets
    from ctbench.config import load_config
    from ctbench.yaml12 import parse_value

    assert parse_value("1e-3") == 0.001 and parse_value("yes") == "yes" and parse_value("'false'") == "false"
    assert parse_value("false") is False and parse_value("010") == 10 and parse_value("[1e-1, 5]") == [0.1, 5]
    assert _sets(["training.lr=1e-3"]) == {"training.lr": 0.001}
    assert load_config(None, ["training.lr=1e-3"])["training"]["lr"] == 0.001
    cfg = load_config(None, ["fidelity_overrides.nascent_inclusive=false"])
    assert cfg["fidelity_overrides"]["nascent_inclusive"] is False
    out = tmp_path / "bl.pt"
    rc, _ = _run(["grid", "baseline", "--grid", "gen_params", "--dataset", "lin_sep", "--epochs", "1", "--set",
                  "training.lr=1e-3", "--set", "training.batch_size=100", "--out", str(out), "--quiet"], capsys)
    assert rc == 0 and json.loads(Path(f"{out}.json").read_text())["config"]["training"]["lr"] == 0.001


# -- Python API ------------------------------------------------------------------------------------------------------
def test_api_refuses_bad_input(files):
    from ctbench.api import load_model, train_from_config
    from ctbench.data import load_dataset
    from ctbench.evaluation.protocol import EvalProtocol
    from ctbench.experiments.grids import grid_points
    from ctbench.fidelity import resolve_fidelity
    from ctbench.training import TrainParams

    with pytest.raises(ConfigError, match="fidelity_overrides.nascent_inclusive: 'false' is text"):
        resolve_fidelity("paper", {"nascent_inclusive": "false"})
    with pytest.raises(ConfigError, match=r"training.epochs: 0 is out of range"):
        TrainParams(epochs=0)
    with pytest.raises(ConfigError, match="n_run.*did you mean 'n_runs'"):
        EvalProtocol.reference("synthetic", n_run=5)
    with pytest.raises(ConfigError, match=r"grids.gen_params.tau: 1.5 is out of range"):
        grid_points("gen_params", {"tau": [1.5]})
    with pytest.raises(BadFileError, match="truncated.pt"):
        load_model(files["truncated.pt"])
    model = load_model(files["m.pt"])
    with pytest.raises(UserInputError, match=r"3 column\(s\), but the model takes 2"):
        model.counterfactuals(np.zeros((2, 3)), [0, 1])
    with pytest.raises(UserInputError, match="class 7 does not exist"):
        model.counterfactuals(np.zeros((2, 2)), [0, 7])
    one_class = load_dataset("lin_sep", shuffle_seed=1, n_draws=4, n_train=2, n_val=0, n_test=2, blob_points="numpy")
    with pytest.raises(UserInputError, match="one class only"):
        train_from_config({"training": {"epochs": 1}}, data=one_class)


# -- the workflow (issue item 6): every setting checked at start-up, by the same code ------------------------------
SMOKE = yaml.safe_load((ROOT / "workflow/config/smoke.yaml").read_text())


def _check(config: dict, cli: dict | None = None, tmp_path: Path | None = None):
    """What the Snakefile does at start-up, in process: type the config (files + --config as Snakemake passes
    them), then Workflow.check."""
    from ctbench.workflow import Workflow
    from ctbench.workflow_check import typed_config

    path = (tmp_path or Path(".")) / "cfg.yaml"
    path.write_text(yaml.safe_dump(config))
    typed = typed_config([path], cli)
    w = Workflow(typed)
    w.check(str(ROOT / "workflow/schemas/config.schema.yaml"))
    return typed


WORKFLOW = [
    # --config values arrive as Snakemake passes them: text (yaml BaseLoader)
    ("config-epochs-negative", {}, {"training": {"epochs": "-5"}},
     ("training.epochs", "-5 is less than the minimum of 1")),
    ("switch-misspelt", {}, {"fidelity_overrides": {"nascent_inclusiv": "false"}},
     ("fidelity_overrides.nascent_inclusiv", "unknown switch")),
    ("switch-quoted-false-in-file", {"fidelity_overrides": {"nascent_inclusive": "false"}}, None,
     ("fidelity_overrides.nascent_inclusive", "'false' is text")),
    ("grid-tau", {"grids": {**SMOKE["grids"], "overrides": {"gen_params": {"tau": [1.5]}}}}, None,
     ("grids.overrides.gen_params.tau", "1.5", "(0, 1]")),
    ("tune-lambda-negative", {"tune": {**SMOKE["tune"], "overrides": {"tune": {"lambda_reg": [-1]}}}}, None,
     ("tune.overrides.tune.lambda_reg", "≥ 0")),
    ("training-override-text", {"training_overrides": {"training.lr": "fast"}}, None,
     ("training_overrides", "training.lr", "'fast'")),
    ("training-override-unknown", {"training_overrides": {"training.epoch": 3}}, None, ("training.epoch",)),
    ("data-params-typo", {"data_params": {"lin_sepp": {"n_draws": 100}}}, None, ("data_params.lin_sepp",)),
    ("data-params-bad-loader-key", {"data_params": {"lin_sep": {"n_drawz": 100}}}, None, ("n_drawz",)),
    ("grid-eval-unknown", {"grids": {**SMOKE["grids"], "evaluation": {"n_run": 2}}}, None,
     ("grids.evaluation", "n_run")),
    ("evaluation-text", {}, {"evaluation": {"lambdas": "[abc]"}}, ("evaluation.lambdas",)),
    ("dataset-unknown", {}, {"datasets": "[iris]"}, ("datasets", "iris")),
]


@pytest.mark.parametrize("change,cli,needles", [c[1:] for c in WORKFLOW], ids=[c[0] for c in WORKFLOW])
def test_workflow_start_up_check_refuses_bad_settings(change, cli, needles, tmp_path):
    with pytest.raises(ConfigError) as err:
        _check({**SMOKE, **change}, cli, tmp_path)
    _needles(str(err.value), needles)


@pytest.mark.skipif(not NO_CUDA, reason="this machine has CUDA")
def test_workflow_refuses_cuda_without_a_gpu(tmp_path):
    with pytest.raises(ConfigError, match="device: 'cuda' requested"):
        _check(SMOKE, {"device": "cuda"}, tmp_path)


def test_workflow_checks_data_files_before_the_first_job(tmp_path, monkeypatch):
    monkeypatch.setenv("CTBENCH_DATA", str(tmp_path / "no-data"))
    with pytest.raises(BadFileError, match=r"datasets: adult: data file adult/adult.data not found"):
        _check({**SMOKE, "datasets": ["lin_sep", "adult"]}, None, tmp_path)


def test_workflow_accepts_typed_values(tmp_path):
    """`--config evaluation='{n_runs: 5}'` was refused ("'5' is not of type 'integer'"); 1e-1 in a file is a number."""
    typed = _check({**SMOKE, "evaluation": {**SMOKE["evaluation"], "lambdas": ["1e-1"]}},
                   {"evaluation": {"n_runs": "5"}, "fidelity_overrides": {"nascent_inclusive": "false"}}, tmp_path)
    assert typed["evaluation"]["n_runs"] == 5 and typed["fidelity_overrides"]["nascent_inclusive"] is False
    # in a file, a bare 1e-1 is a number (written quoted above it would be text; a bare one:)
    (tmp_path / "f.yaml").write_text("lambdas: [1e-1, 5]\n")
    from ctbench.workflow_check import typed_config

    assert typed_config([tmp_path / "f.yaml"], None)["lambdas"] == [0.1, 5]


def test_workflow_yaml_syntax_error_names_the_file(tmp_path):
    from ctbench.workflow_check import typed_config

    (tmp_path / "bad.yaml").write_text("training: {epochs: 3\n")
    with pytest.raises(ConfigError, match=r"bad.yaml is not valid YAML: line 2"):
        typed_config([tmp_path / "bad.yaml"], None)


# the real Snakefile: the start-up check runs before any job, and says one line instead of a traceback
DRY = [
    ("epochs-negative", ["training={epochs: -5}"], 1, ("training.epochs", "-5 is less than the minimum of 1")),
    ("switch-misspelt", ["fidelity_overrides={nascent_inclusiv: false}"], 1, ("nascent_inclusiv",)),
    ("grid-tau", ["grids={overrides: {gen_params: {tau: [1.5]}}}"], 1, ("grids.overrides.gen_params.tau", "1.5")),
    ("lenet-device", ["lenet={device: gpu}"], 1, ("lenet.device", "'gpu'", "write cpu, cuda or cuda:N")),
    # passes the schema's minimum: 0; the study's own settings check refuses it before any job
    ("sns-norm-eps-inf", ["consistency={sns: {norm_eps: .inf}}"], 1, ("consistency.sns.norm_eps", "finite")),
    ("valid-n-runs", ["evaluation={n_runs: 5}", "fidelity_overrides={nascent_inclusive: false}"], 0, ()),
]


@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed next to this Python")
@pytest.mark.parametrize("config,rc,needles", [c[1:] for c in DRY], ids=[c[0] for c in DRY])
def test_snakemake_dry_run_checks_settings_at_start_up(config, rc, needles, tmp_path):
    for name in ("Snakefile", "workflow", "envs", "claims.yaml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([str(SNAKEMAKE), "-n", "--cores", "1", "--configfile", "workflow/config/smoke.yaml",
                        "--config", *config], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == rc, out
    if rc:
        assert "ctbench: error in the workflow config:" in out and "Traceback" not in out
        assert 'File "' not in out  # no stack lines
        _needles(out, needles)
    else:
        assert "This was a dry-run" in out
    assert not (tmp_path / "results").exists()


# == issue 23: bad input and faults, round two ======================================================================
def _copy(files: dict[str, Path], names: tuple[str, ...], tmp: Path) -> dict[str, Path]:
    """Private copies of shared inputs (with their sidecars), for cases that may change them."""
    out = {}
    for n in names:
        for suffix in ("", ".json"):
            if Path(f"{files[n]}{suffix}").exists():
                shutil.copy(f"{files[n]}{suffix}", tmp / f"{n}{suffix}")
        out[n] = tmp / n
    return out


# item 1: no input is ever overwritten
OVERWRITE = [
    ("evaluate-out-is-its-model", ["evaluate", "--model", "CT=@m.pt", "--experiment", "single", "--out", "@m.pt"],
     "m.pt"),
    ("evaluate-out-is-its-models-sidecar", ["evaluate", "--model", "CT=@m.pt", "--experiment", "single", "--out",
                                            "@m.pt.json"], "m.pt.json"),
    ("train-out-is-its-config", ["train", "--config", "@c.yaml", "--out", "@c.yaml", "--quiet"], "c.yaml"),
    ("generate-out-is-its-factuals", ["generate", "--model", "@m.pt", "--factuals", "@x.npy", "--out", "@x.npy"],
     "x.npy"),
    ("generate-out-is-its-model", ["generate", "--model", "@m.pt", "--factuals", "@x.npy", "--out", "@m.pt"], "m.pt"),
    ("appendix-out-sidecar", ["grid", "figures", "@m.pt", "--out", "@m.pt"], "m.pt"),
]


@pytest.mark.parametrize("argv,victim", [c[1:] for c in OVERWRITE], ids=[c[0] for c in OVERWRITE])
def test_out_equal_to_an_input_is_refused_before_writing(argv, victim, files, tmp_path, capsys):
    own = _copy(files, ("m.pt", "x.npy"), tmp_path)
    own["c.yaml"] = tmp_path / "c.yaml"
    own["c.yaml"].write_text("training: {epochs: 1}\n")
    own["m.pt.json"] = tmp_path / "m.pt.json"
    before = {p: p.read_bytes() for p in tmp_path.iterdir()}
    rc, err = _run(_sub(argv, own, tmp_path), capsys)
    assert rc == 2 and err.startswith("ctbench: error: --out") and "overwrite the input" in err, err
    _needles(err, (victim,))
    assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing changed, nothing added


# item 2: nothing accepted silently
@pytest.fixture(scope="module")
def nan_model(files, tmp_path_factory) -> Path:
    """The shared model with one NaN weight (and an Inf), saved as ctbench saves models."""
    from ctbench.api import load_model

    trained = load_model(files["m.pt"])
    with torch.no_grad():
        first = next(trained.model.parameters())
        first[0, 0] = float("nan")
        first[0, 1] = float("inf")
    out = tmp_path_factory.mktemp("nan") / "nan.pt"
    trained.save(out)
    return out


def test_a_model_with_nan_weights_is_refused(nan_model, files, tmp_path, capsys):
    from ctbench.api import load_model

    with pytest.raises(BadFileError, match="NaN or Inf"):
        load_model(nan_model)
    out = tmp_path / "out"
    for argv in (["generate", "--model", str(nan_model), "--factuals", str(files["x.npy"]), "--out",
                  str(out / "cf.csv")],
                 ["evaluate", "--model", f"CT={nan_model}", "--experiment", "single", "--out", str(out / "e.csv")]):
        rc, err = _run(argv, capsys)
        assert rc == 2
        _needles(err, ("nan.pt", "NaN or Inf", "Train it again"))
    _nothing_written(out)


@pytest.mark.parametrize("extra", [["--experiment", "singel"], []], ids=["misspelt", "none"])
def test_evaluate_refuses_an_unknown_experiment(extra, files, tmp_path, capsys):
    rc, err = _run(["evaluate", "--model", f"CT={files['m.pt']}", *extra, "--out", str(tmp_path / "o" / "e.csv")],
                   capsys)
    assert rc == 2
    _needles(err, ("--experiment", "single, mutability, ablation"))
    _nothing_written(tmp_path / "o")


def test_report_refuses_an_evaluation_of_no_experiment_and_says_when_no_table_came_out(files, tmp_path, capsys):
    ev = gzip.decompress(files["eval.csv.gz"].read_bytes()).decode().replace(",single,", ",singel,")
    e = tmp_path / "e.csv"
    e.write_text(ev)
    (tmp_path / "e.csv.json").write_text(json.dumps({"kind": "counterfactual_evaluation", "experiment": "singel"}))
    rc, err = _run(["report", "--eval", str(e), "--out", str(tmp_path / "rep")], capsys)
    assert rc == 2
    _needles(err, ("e.csv", "'singel'", "--experiment single"))
    _nothing_written(tmp_path / "rep")
    (tmp_path / "e.csv.json").unlink()  # without its sidecar: the report runs, writes no table, and says so
    rc, err = _run(["report", "--eval", str(e), "--out", str(tmp_path / "rep")], capsys)
    assert rc == 1
    _needles(err, ("no table could be computed", "--eval"))


LISTS = [
    ("grids-datasets-empty", {"grids": {**SMOKE["grids"], "datasets": []}}, ("grids.datasets", "[]", "null")),
    ("datasets-empty-consistency", {"consistency": {**SMOKE["consistency"], "datasets": []}},
     ("consistency.datasets", "[]")),
    ("seeds-duplicate", {"seeds": [0, 0]}, ("seeds", "[0, 0]", "twice")),
    ("ct-seeds-duplicate", {"consistency": {**SMOKE["consistency"], "ct": {**SMOKE["consistency"]["ct"],
                                                                            "seeds": [1, 1]}}},
     ("consistency.ct.seeds", "twice")),
    ("datasets-duplicate", {"datasets": ["lin_sep", "lin_sep"]}, ("datasets", "'lin_sep', 'lin_sep'")),
    ("lambdas-duplicate", {"evaluation": {**SMOKE["evaluation"], "lambdas": [0.5, 0.5]}},
     ("evaluation.lambdas", "twice")),
    # item 3: sizes that cannot work, with the limit
    ("n-individuals-above-the-split", {"evaluation": {**SMOKE["evaluation"], "n_individuals": 5000}},
     ("evaluation.n_individuals", "5000", "200 rows", "≤ 200")),
    ("n-runs-1e9", {"evaluation": {**SMOKE["evaluation"], "n_runs": 1e9}},
     ("n_runs × n_individuals", "exceeds the limit of 10,000,000")),
]


@pytest.mark.parametrize("change,needles", [c[1:] for c in LISTS], ids=[c[0] for c in LISTS])
def test_workflow_refuses_empty_and_repeated_lists_and_impossible_sizes(change, needles, tmp_path):
    with pytest.raises(ConfigError) as err:
        _check({**SMOKE, **change}, None, tmp_path)
    _needles(str(err.value), needles)


def test_evaluate_refuses_impossible_sizes_at_once(files, tmp_path, capsys):
    signal.alarm(60)  # n_runs 1e9 died after minutes with a 149 GiB MemoryError
    try:
        for setting, needle in (("n_runs=1000000000", "exceeds the limit"), ("n_individuals=5000", "≤ 100")):
            rc, err = _run(["evaluate", "--model", f"CT={files['m.pt']}", "--experiment", "single", "--set",
                            setting, "--out", str(tmp_path / "o" / "e.csv")], capsys)
            assert rc == 2
            _needles(err, (needle,))
    finally:
        signal.alarm(0)
    _nothing_written(tmp_path / "o")


PLUGIN = '''
import numpy as np
from ctbench.data import Dataset, register


def _ds(name, X, y, names=("a", "b"), k=2):
    return Dataset(name, X, y, X[:10], y[:10], X[:10], y[:10], list(names), k)


rng = np.random.default_rng(0)
X = rng.normal(size=(100, 2)).astype(np.float32)
y = (X[:, 0] > 0).astype(np.int64)


@register("bi_names", family="tabular")
def _names(**kw):
    return _ds("bi_names", X, y, names=("a", "b", "c"))


@register("bi_nan", family="tabular")
def _nan(**kw):
    Xn = X.copy()
    Xn[3, 1] = np.nan
    return _ds("bi_nan", Xn, y)


@register("bi_len", family="tabular")
def _len(**kw):
    return Dataset("bi_len", X, y[:-1], X[:10], y[:10], X[:10], y[:10], ["a", "b"], 2)


@register("bi_one_class", family="tabular")
def _one(**kw):
    return _ds("bi_one_class", X, np.zeros(100, dtype=np.int64))


@register("bi_labels", family="tabular")
def _labels(**kw):
    return _ds("bi_labels", X, y * 2 + 1)


@register("bi_raises", family="tabular")
def _raises(**kw):
    raise KeyError("column 'income' not in the table")
'''

PLUGIN_CASES = [
    ("feature-names", "bi_names", ("'bi_names'", "3 feature names for 2 features")),
    ("nan-features", "bi_nan", ("'bi_nan'", "X_train", "NaN", "row 3, feature 1")),
    ("len-mismatch", "bi_len", ("'bi_len'", "len(X_train) = 100", "(99,)")),
    ("one-class", "bi_one_class", ("'bi_one_class'", "one class only", "[0]")),
    ("labels", "bi_labels", ("'bi_labels'", "labels [1, 3]", "0..1")),
    ("loader-raises", "bi_raises", ("'bi_raises'", "_raises", "KeyError", "income")),
]


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("plugin") / "bi_plugin.py"
    p.write_text(PLUGIN)
    return p


@pytest.mark.parametrize("name,needles", [c[1:] for c in PLUGIN_CASES], ids=[c[0] for c in PLUGIN_CASES])
def test_a_bad_plugin_dataset_is_refused_at_the_data_stage(name, needles, plugin_path, tmp_path, capsys,
                                                           monkeypatch):
    monkeypatch.setenv("CTBENCH_PLUGINS", str(plugin_path))
    rc, err = _run(["data", "prepare", name, "--out", str(tmp_path / "o" / "meta.json")], capsys)
    assert rc == 2 and err.count("\n") == 1
    _needles(err, needles)
    _nothing_written(tmp_path / "o")


def test_an_edited_sidecar_or_replaced_weights_are_refused(files, tmp_path, capsys):
    from ctbench.api import load_model

    own = _copy(files, ("m.pt",), tmp_path)
    side = Path(f"{own['m.pt']}.json")
    meta = json.loads(side.read_text())
    assert set(meta["digest"]) == {"file", "self"}
    rc, _ = _run(["appendix", "--models", str(own["m.pt"]), "--out", str(tmp_path / "ok")], capsys)
    assert rc == 0  # untouched: accepted
    meta["config"]["convergence"]["tau"] = 0.1     # a hand edit: appendix Table 2 printed the edited τ
    side.write_text(json.dumps(meta))
    for argv in (["appendix", "--models", str(own["m.pt"]), "--out", str(tmp_path / "o")],
                 ["report", "--models", str(own["m.pt"]), "--out", str(tmp_path / "o")]):
        rc, err = _run(argv, capsys)
        assert rc == 2
        _needles(err, ("m.pt.json", "edited after it was written"))
    with pytest.raises(BadFileError, match="edited"):
        load_model(own["m.pt"])
    shutil.copy(f"{files['m.pt']}.json", side)               # the sidecar restored, the weights replaced
    own["m.pt"].write_bytes(files["m.pt"].read_bytes() + b"\0")
    rc, err = _run(["appendix", "--models", str(own["m.pt"]), "--out", str(tmp_path / "o")], capsys)
    assert rc == 2
    _needles(err, ("m.pt", "does not match its sidecar"))
    side.write_text("{not json")                              # item 3: a sidecar that is not JSON names the file
    rc, err = _run(["report", "--models", str(own["m.pt"]), "--out", str(tmp_path / "o")], capsys)
    assert rc == 2
    _needles(err, ("m.pt.json", "not valid JSON", "line 1"))
    _nothing_written(tmp_path / "o")


# item 3: clear and early
def test_a_corrupt_consistency_raw_file_is_refused_at_start_up(tmp_path, monkeypatch):
    src = Path(os.environ.get("CTBENCH_DATA", ROOT.parent / "shared" / "data")) / "cardiotocography" / "CTG.xls"
    if not src.is_file():
        pytest.skip("needs the cardiotocography raw file (CTBENCH_DATA)")
    data = tmp_path / "data"
    (data / "cardiotocography").mkdir(parents=True)
    (data / "cardiotocography" / "CTG.xls").write_bytes(src.read_bytes()[:-10])
    monkeypatch.setenv("CTBENCH_DATA", str(data))
    with pytest.raises(BadFileError, match=r"consistency.datasets: cardiotocography: .*altered or corrupt"):
        _check(SMOKE, None, tmp_path)
    (data / "cardiotocography" / "CTG.xls").unlink()  # absent: the job is skipped (it says so), no start-up error
    _check(SMOKE, None, tmp_path)


def test_an_unreadable_data_directory_is_one_line(tmp_path, monkeypatch):
    from ctbench.data import files as data_files
    from ctbench.training.preflight import check_data

    def denied(name, raw_dir=None):
        raise PermissionError(13, "Permission denied", str(tmp_path / "data" / name))

    monkeypatch.setattr(data_files, "raw_path", denied)
    with pytest.raises(BadFileError, match=r"cannot read .*adult.data: permission denied.*chmod"):
        check_data("adult", {})


def test_a_full_disk_names_the_path(files, tmp_path, capsys, monkeypatch):
    import errno

    import ctbench.io

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ctbench.io.os, "fsync", full)
    out = tmp_path / "o"
    rc, err = _run(["generate", "--model", str(files["m.pt"]), "--factuals", str(files["x.npy"]), "--out",
                    str(out / "cf.csv")], capsys)
    assert rc == 2
    _needles(err, ("no space left", str(out), "cf.csv", "free space"))
    _nothing_written(out)


# item 5: a failing job's reason survives a second clone running the same job
def test_each_failure_leaves_a_record_of_its_own(files, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CTBENCH_FAILURE_LOGS", str(tmp_path / "failed"))
    for _ in range(2):
        rc, _ = _run(["evaluate", "--model", f"CT={tmp_path / 'gone.pt'}", "--experiment", "single", "--out",
                      str(tmp_path / "e.csv")], capsys)
        assert rc == 2
    records = sorted((tmp_path / "failed").iterdir())
    assert len(records) == 2
    for r in records:
        text = r.read_text()
        assert "gone.pt" in text and "does not exist" in text and "exit code: 2" in text
    assert main(["data", "status"]) == 0
    assert len(list((tmp_path / "failed").iterdir())) == 2  # a success leaves none


# item 4: `datasets:` limits the consistency study too
def test_datasets_limits_the_consistency_study():
    from ctbench.experiments.consistency import jobs

    quick = yaml.safe_load((ROOT / "workflow/config/quick.yaml").read_text())
    assert {(j["part"], j["dataset"]) for j in jobs(quick)} >= {("black2022", "cardiotocography"),
                                                                ("black2022", "german_credit")}
    assert jobs({**quick, "datasets": ["my_data"]}) == []
    mine = {**quick, "datasets": ["my_data"], "consistency": {**quick["consistency"], "datasets": ["my_data"]}}
    assert {(j["part"], j["dataset"]) for j in jobs(mine)} == {("black2022", "my_data")}


def test_table1_cells_that_cannot_be_computed_say_why_and_nothing_partial_is_left(files, tmp_path, capsys,
                                                                                  monkeypatch):
    import pandas as pd

    e = tmp_path / "same.csv"
    assert main(["evaluate", "--model", f"CT={files['m.pt']}", "--model", f"BL={files['m.pt']}", "--experiment",
                 "single", "--set", "n_runs=2", "--set", "n_individuals=10", "--set", "lambdas=[1.0]", "--quiet",
                 "--out", str(e)]) == 0
    rc, err = _run(["report", "--eval", str(e), "--out", str(tmp_path / "same")], capsys)  # a KeyError before
    assert rc == 0, err
    t1 = pd.read_csv(tmp_path / "same" / "table1.csv")
    assert t1.loc[t1["dataset"] != "Avg.", "flag"].str.contains("not computable: the evaluation has no BL").all()
    df = pd.read_csv(e)
    df.loc[df["model"] == "BL", "objective"] = "vanilla"
    df[["ip", "ip_star", "ip_star_run", "ip_star_pooled"]] = np.nan    # NaN metrics
    df.to_csv(tmp_path / "nan.csv", index=False)
    rc, err = _run(["report", "--eval", str(tmp_path / "nan.csv"), "--out", str(tmp_path / "nan")], capsys)
    assert rc == 0, err
    t1 = pd.read_csv(tmp_path / "nan" / "table1.csv")
    assert t1.loc[t1["dataset"] != "Avg.", "flag"].str.contains("not computable: 100%").all()
    import ctbench.report.tables.paper_tables as tables  # any other failure: one line, no partial files

    monkeypatch.setattr(tables, "validity_agreement", lambda t3: {}["no such cell"])  # a step every report runs
    rc, err = _run(["report", "--eval", str(tmp_path / "nan.csv"), "--out", str(tmp_path / "broken")], capsys)
    assert rc == 2
    _needles(err, ("cannot be computed", "KeyError", "nothing was written"))
    _nothing_written(tmp_path / "broken")


# item 4: any profile with any subset of datasets plans the whole way to the book (no data directory, no cache)
MY_LOADER = '''
import numpy as np
from ctbench.constraints import infer_domain
from ctbench.data import Dataset, register, stratified_val_split
from ctbench.fidelity import resolve_fidelity


@register("my_data", family="tabular", description="two Gaussian features, label = sign of their sum")
def load_my_data(*, fidelity="reference", seed=42, n=5000):
    fid = resolve_fidelity(fidelity) if isinstance(fidelity, str) else fidelity
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)).astype(np.float32)
    y = (X.sum(1) > 0).astype(np.int64)
    n_fit = int(0.8 * n)
    tr, va = stratified_val_split(y[:n_fit], n_fit // 10, np.random.default_rng([seed, 1]))
    return Dataset("my_data", X[tr], y[tr], X[va], y[va], X[n_fit:], y[n_fit:], ["a", "b"], 2,
                   domain=infer_domain(X[:n_fit], fid.domain_n_sigma), protected=[0])
'''


def _planned(profile: str, datasets: list[str], tmp: Path) -> dict[str, int]:
    """Job counts of ``snakemake -n`` (a copy of the workflow, no data directory, no cache), by rule."""
    if not (tmp / "Snakefile").exists():
        for name in ("Snakefile", "workflow", "envs", "claims.yaml"):
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp / name)
        (tmp / "my_loader.py").write_text(MY_LOADER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "CTBENCH_DATA": str(tmp / "no-data"), "CTBENCH_CACHE": str(tmp / "no-cache")}
    env.pop("CTBENCH_PLUGINS", None)
    p = subprocess.run([str(SNAKEMAKE), "-n", "--cores", "2", "--configfile", f"workflow/config/{profile}.yaml",
                        "--config", f"datasets=[{', '.join(datasets)}]", "plugins=[my_loader.py]",
                        f"results=results/{profile}"], cwd=tmp, env=env, capture_output=True, text=True,
                       timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    stats = out.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M)}


SUBSETS = [["my_data"], ["moons"], ["lin_sep", "my_data"]]


def _check_plan(profile: str, datasets: list[str], tmp: Path) -> None:
    jobs = _planned(profile, datasets, tmp)
    book = 0 if profile == "paper_table1" else 1  # paper_table1: Tables 1 and 3 only, no book
    assert jobs.get("report") == 1 and jobs.get("book", 0) == book, (datasets, jobs)
    assert jobs.get("data") == len(datasets), (datasets, jobs)  # `datasets:` limits the data stage...
    if datasets == ["my_data"]:  # ... and every other: a user's dataset alone plans no paper dataset
        assert not {"grid_chunk", "tune_select", "consistency"} & set(jobs), jobs


@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed next to this Python")
def test_a_users_dataset_alone_plans_to_the_book(tmp_path):
    """The quick profile with only a user's dataset planned German Credit and CTG consistency jobs."""
    _check_plan("quick", ["my_data"], tmp_path)


@pytest.mark.slow  # 9 dry runs, minutes on 2 busy cores
@pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed next to this Python")
@pytest.mark.parametrize("profile", ["smoke", "quick", "paper_table1"])
def test_every_profile_with_any_datasets_plans_to_the_book(profile, tmp_path):
    for datasets in SUBSETS:
        _check_plan(profile, datasets, tmp_path)


# item 3: what Snakemake itself reports before ctbench runs, said in one line by `ctbench check-config`
CHECK_CONFIG = [
    ("configfile-missing", ["@nope.yaml"], ("nope.yaml", "does not exist")),
    ("dotted-config-key", ["@smoke.yaml", "--config", "training.epochs=2"],
     ("training.epochs=2", "top-level keys", "--config 'training={epochs: 2}'")),
    ("yaml-syntax", ["@smoke.yaml", "@syntax.yaml"], ("syntax.yaml", "not valid YAML", "line 2")),
    ("bad-value", ["@smoke.yaml", "--config", "seeds=[0, 0]"], ("seeds", "twice")),
]


@pytest.mark.parametrize("argv,needles", [c[1:] for c in CHECK_CONFIG], ids=[c[0] for c in CHECK_CONFIG])
def test_check_config_says_in_one_line_what_snakemake_would_not(argv, needles, files, tmp_path, capsys):
    own = {**files, "smoke.yaml": ROOT / "workflow/config/smoke.yaml"}
    rc, err = _run(["check-config", *_sub(argv, own, tmp_path)], capsys)
    assert rc == 2 and err.count("\n") == 1
    _needles(err, needles)
    rc, err = _run(["check-config", str(ROOT / "workflow/config/smoke.yaml"), "--config", "training={epochs: 2}"],
                   capsys)
    assert rc == 0, err


def test_a_best_json_that_is_not_json_names_the_file(tmp_path, capsys):
    (tmp_path / "best.json").write_text('{"tau": 0.5,')
    rc, err = _run(["train", "--best", str(tmp_path / "best.json"), "--out", str(tmp_path / "o" / "m.pt")], capsys)
    assert rc == 2
    _needles(err, ("best.json", "not valid JSON", "line 1"))
    _nothing_written(tmp_path / "o")
