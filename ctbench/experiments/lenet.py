"""LeNet on MNIST (the CT paper's appendix F.1.2): one CT and one BL LeNet-5 at the final MNIST settings, each
trained alone so that its sidecar's ``train_seconds`` is its own measured time (in a population it would be the
population's wall time divided by its size, which cannot tell CT from BL), for the compute claim
``lenet_training_time`` (CT 30-45 min against 15 min per conventional model); then the pair evaluated as the single
experiment's MNIST models are (:func:`evaluation_jobs`), for Table-1-style LeNet rows (``table1_lenet.csv``).

The paper reports no LeNet result: LeNet appears only in the MNIST tuning runs and the compute remarks (reference
notes, §"Models"). The train configs are the single experiment's final MNIST configs (:func:`.final_training.
train_config`) with ``model: {type: lenet}``. Only the workflow imports this module (the jobs run ``ctbench
train``); its path template lives here, not in :data:`ctbench.facts.PATHS`, so adding the stage changes no stage's
code fingerprint. The evaluation jobs are the evaluation planner's (:func:`.evaluation.jobs`) on a copy of the
config narrowed to the ``single`` experiment, the block's datasets and seed, with the LeNet files as models: the
generator, λ_egy values, runs, individuals and seed are the MLP's.

``lenet.device`` (null: the profile's ``device``) moves the two trainings alone to a GPU: the CT model's 100 epochs
are the profile's longest job on a CPU (issue 21). The evaluation stays where ``ctbench evaluate`` runs (the CPU; a
twentieth of the training's cost), loading the CUDA-trained weights there.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ..errors import ConfigError
from .stage_paths import StagePaths

#: result template of this stage; the report's training_time.csv names a model's experiment by the folder two above
#: its file, here ``lenet``
PATHS: dict[str, str] = {"lenet_model": "{results}/lenet/{dataset}/{objective}_s{seed}.pt",
                         "lenet_evaluation": "{results}/lenet/eval/{experiment}/{dataset}_s{seed}.parquet"}
#: the experiment whose evaluation the LeNet pair gets (its models are trained as the single experiment's)
EXPERIMENT = "single"
#: CT and BL (the compute claim compares their training times)
OBJECTIVES = ("full", "vanilla")
MODEL = {"type": "lenet"}
#: the devices ``lenet.device`` takes (the workflow schema's pattern of ``device``)
DEVICE = re.compile(r"^(cpu|cuda(:[0-9]+)?)$")


_PATHS = StagePaths("lenet", PATHS)
#: the stage's :class:`~.stage_paths.StagePaths` functions
fields, path, pattern = _PATHS.fields, _PATHS.path, _PATHS.pattern


def device(config: dict[str, Any]) -> str:
    """The LeNet jobs' device: ``lenet.device``, or the profile's ``device`` where it is null (or the block has none).
    Checked here as well as by the schema, since the planner runs without it (Python API, tests)."""
    value = (config.get("lenet") or {}).get("device")
    if value is None:
        return str(config.get("device", "cpu"))
    if not isinstance(value, str) or not DEVICE.match(value):
        raise ConfigError(f"lenet.device: {value!r} is not a device; write cpu, cuda or cuda:N (N: the GPU's index), "
                          f"or null for the profile's `device:` ({config.get('device', 'cpu')})")
    return value


def gpus(config: dict[str, Any]) -> int:
    """GPUs a LeNet training job needs (its rule's ``gpu`` resource): 1 on CUDA, else 0."""
    return 1 if device(config).startswith("cuda") else 0


def train_config(config: dict[str, Any], dataset: str, objective: str, seed: int,
                 epochs: int | None = None) -> dict[str, Any]:
    """The single experiment's final train config of ``dataset`` (the workflow's training, fidelity, data and
    device settings applied) with a LeNet on :func:`device`; ``epochs`` (None: the workflow's ``training.epochs``,
    else 100)."""
    from .final_training import train_config as final_config

    config = {**config, "device": device(config)}  # lenet.device null: the profile's own, the same config
    if epochs is not None:
        config = {**config, "training": {**(config.get("training") or {}), "epochs": int(epochs)}}
    folder = "baseline" if objective == "vanilla" else "single"
    cfg = copy.deepcopy(final_config(config, folder, dataset, objective, int(seed)))
    cfg["model"] = dict(MODEL)
    if grad_chunks(config) != 1:  # absent: the trainer's default 1, the MLP's config untouched
        cfg["training"]["grad_chunks"] = grad_chunks(config)
    return cfg


def grad_chunks(config: dict[str, Any]) -> int:
    """``lenet.grad_chunks`` (null or absent: 1): the pair's mini-batch gradients over that many fixed row chunks
    (:mod:`ctbench.training.grad_chunks`), a setting of the models, recorded in their configs."""
    value = (config.get("lenet") or {}).get("grad_chunks")
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"lenet.grad_chunks: expected a positive integer or null (1), got {value!r}")
    return value


def jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """One training job per (dataset, objective) of the ``lenet`` block: one model each (``out``, ``config``)."""
    block = config.get("lenet") or {}
    device(config)  # a bad lenet.device is refused even while the stage is off
    if not block.get("enabled", False):
        return []
    datasets = [d for d in (block.get("datasets") or ["mnist"]) if d in config["datasets"]]
    from ..data.registry import family

    for d in datasets:
        if family(d) != "vision":
            raise ConfigError(f"lenet.datasets: {d!r} is a {family(d)} dataset; LeNet takes 28×28 images (mnist)")
    seed, epochs = int(block.get("seed", 0)), block.get("epochs")
    results = str(config["results"]).rstrip("/")
    return [{"dataset": d, "objective": o, "seed": seed,
             "out": path("lenet_model", results, dataset=d, objective=o, seed=seed),
             "config": train_config(config, d, o, seed, epochs)} for d in datasets for o in OBJECTIVES]


def evaluation_jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """One evaluation job per LeNet dataset: the single experiment's evaluation job of that dataset (the evaluation
    planner on the config narrowed to it) with the LeNet pair as its models and ``out`` this stage's file."""
    from .evaluation import jobs as planned

    train = jobs(config)
    if not train:
        return []
    seed = train[0]["seed"]
    models = {(j["dataset"], j["objective"]): j["out"] for j in train}
    sub = {**config, "experiments": [EXPERIMENT], "datasets": list(dict.fromkeys(j["dataset"] for j in train)),
           "seeds": [seed]}
    results = str(config["results"]).rstrip("/")
    out = []
    for j in planned(sub):
        if set(j["models"]) != set(OBJECTIVES):  # the planner's CT and BL are the objectives trained here
            raise ConfigError(f"lenet: the {EXPERIMENT} evaluation compares {sorted(j['models'])}, the lenet stage "
                              f"trains {list(OBJECTIVES)}")
        out.append({**j, "models": {o: models[(j["dataset"], o)] for o in j["models"]},
                    "out": path("lenet_evaluation", results, experiment=j["experiment"], dataset=j["dataset"],
                                seed=j["seed"])})
    return out


__all__ = ["DEVICE", "EXPERIMENT", "MODEL", "OBJECTIVES", "PATHS", "device", "evaluation_jobs", "gpus", "grad_chunks",
           "jobs", "path", "pattern", "train_config"]
