"""The paper's counterfactual evaluation of saved models (Table 1's stage): ``jobs(config)`` lists one job per
(experiment, dataset, seed) of a workflow config, ``run(job)`` evaluates one and returns one row per counterfactual
(``attrs["meta"]``: the sidecar with the protocol, fidelity switches, model provenance and the environment);
``ctbench evaluate`` writes it with :func:`write`.

Each job loads its models and rebuilds their dataset from the model metadata (same loader, parameters and fidelity
mode as training). :mod:`.robustness` and :mod:`.attributions` evaluate the same saved models with this module's
loaders and writer.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..data.registry import family
from ..facts import EXPERIMENTS
from ..io import provenance
from ..training.pipeline import TrainedModel, load_model
from .final_training import models_of


def parse_models(specs: list[str]) -> dict[str, str]:
    """``["CT=a.pt", "b.pt"]`` → ``{"CT": "a.pt", "b": "b.pt"}`` (name defaults to the file stem)."""
    out: dict[str, str] = {}
    for s in specs:
        name, _, path = s.partition("=") if "=" in s else (Path(s).stem, "", s)
        if name in out:
            raise ValueError(f"model name {name!r} given twice; use NAME=path to tell them apart")
        out[name] = path
    return out


def load_models(specs: list[str]) -> tuple[dict[str, TrainedModel], Any]:
    """Load models that share one dataset and fidelity mode, and that dataset."""
    from ..data import load_dataset

    paths = parse_models(specs)
    models = {name: load_model(p) for name, p in paths.items()}
    first = next(iter(models.values()))
    keys = {(m.config["data"]["name"], repr(sorted(m.config["data"]["params"].items())), m.fidelity.mode)
            for m in models.values()}
    if len(keys) != 1:
        raise ValueError(f"models were trained on different datasets or fidelity modes: {sorted(keys)}")
    data = load_dataset(first.config["data"]["name"], fidelity=first.fidelity, **first.config["data"]["params"])
    return models, data


def write(df: pd.DataFrame, out: str | Path) -> Path:
    """``out`` (CSV, ``.csv.gz`` or Parquet by its suffix) and its ``.json`` sidecar (``df.attrs["meta"]``), each
    atomically: :func:`ctbench.evaluation.files.write_frame`."""
    from ..evaluation.files import write_frame

    return write_frame(df, out)


def model_meta(models: dict[str, TrainedModel]) -> dict[str, Any]:
    return {n: {"objective": m.meta.get("objective_effective"), "seed": m.meta.get("seed"),
                "provenance": m.meta.get("provenance"), "acc_test": m.meta.get("acc_test")}
            for n, m in models.items()}


def settings(config: dict[str, Any], dataset: str) -> dict[str, Any]:
    """The protocol overrides of ``ctbench evaluate`` for ``dataset``: the ``evaluation`` block (``n_individuals``
    may be per family), null entries left out (= the paper's value)."""
    ev = config.get("evaluation") or {}
    n_ind = ev.get("n_individuals")
    sets = {"n_runs": ev.get("n_runs"), "lambdas": ev.get("lambdas"), "seed": ev.get("seed"),
            "n_individuals": n_ind.get(family(dataset)) if isinstance(n_ind, dict) else n_ind}
    return {k: v for k, v in sets.items() if v is not None}


def jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """One job per (experiment, dataset, seed). The ablation leaves out CT and BL when ``single`` is evaluated too:
    the protocol keys every random stream by the model's name, so their rows would be the same."""
    out = []
    for e in config["experiments"]:
        for d in config["datasets"]:
            for s in config["seeds"]:
                models = models_of(config, e, d, int(s))
                if e == "ablation" and "single" in config["experiments"]:
                    models = {o: p for o, p in models.items() if o not in EXPERIMENTS["single"]}
                out.append({"experiment": e, "dataset": d, "seed": int(s), "models": models,
                            "constrained": e == "mutability", "settings": settings(config, d)})
    return out


def run(job: dict[str, Any], progress: bool = False) -> pd.DataFrame:
    """Evaluate one job's models (``{"models": {name: path}, "experiment", "constrained", "settings"}``; ``settings``
    are protocol overrides, e.g. ``n_runs``) under the reference protocol of their dataset's family."""
    model_specs = [f"{n}={p}" for n, p in job["models"].items()]
    constrained, experiment = bool(job.get("constrained", False)), str(job.get("experiment", ""))
    protocol_overrides = job.get("settings") or {}
    from ..evaluation.protocol import EvalProtocol, evaluate_counterfactuals, performance

    models, data = load_models(model_specs)
    fid = next(iter(models.values())).fidelity
    protocol = EvalProtocol.reference(family(data.name), constrained=constrained, **(protocol_overrides or {}))
    X, y = (data.X_test, data.y_test) if protocol.split == "test" else (
        np.vstack([data.X_train, data.X_val]), np.concatenate([data.y_train, data.y_val]))
    t0 = time.perf_counter()
    if protocol.n_individuals > len(X):
        from ..errors import ConfigError

        raise ConfigError(f"protocol.n_individuals: {protocol.n_individuals} individuals per run, but the "
                          f"{protocol.split} split of {data.name!r} has {len(X)} rows; give n_individuals ≤ {len(X)}")
    if constrained and not data.protected:
        raise ValueError(f"--constrained: dataset {data.name!r} declares no protected features")
    df = evaluate_counterfactuals(models, X, y, protocol, fid, n_classes=data.n_classes,
                                  categorical_groups=data.categorical_groups,
                                  mutability=list(data.protected) if constrained else None, dataset=data.name,
                                  progress=progress)
    df.insert(1, "experiment", experiment)
    seeds = {m.meta.get("seed", m.config.get("seed")) for m in models.values()}
    df.insert(2, "seed", seeds.pop() if len(seeds) == 1 else -1)
    perf = performance(models, data.X_test, data.y_test, data.n_classes)
    sidecar = {"kind": "counterfactual_evaluation", "dataset": data.name, "experiment": experiment,
               "protocol": protocol.to_dict(), "fidelity": fid.to_dict(), "models": model_meta(models),
               "performance": perf.to_dict(orient="records"), "seconds": time.perf_counter() - t0,
               "n_rows": len(df), "provenance": provenance()}
    df.attrs["meta"] = sidecar
    return df


def per_model(models: dict[str, TrainedModel], data: Any, experiment: str, frame_of) -> pd.DataFrame:
    """``frame_of(model)`` for every model on the test split, tagged with dataset, experiment, model, objective."""
    frames = []
    for name, m in models.items():
        f = frame_of(m.model.eval())
        f.insert(0, "model", name)
        f.insert(1, "objective", m.meta.get("objective_effective", {}).get("name"))
        frames.append(f)
    df = pd.concat(frames, ignore_index=True)
    df.insert(0, "dataset", data.name)
    df.insert(1, "experiment", experiment)
    return df


