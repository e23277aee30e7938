"""Evaluate saved models from files: the glue behind ``ctbench evaluate | robustness | attribution``.

Each function loads the models, rebuilds their dataset from the model metadata (same loader, parameters and
fidelity mode as training), runs one evaluation and writes a tidy CSV plus a ``.json`` sidecar with the protocol,
fidelity switches, model provenance and the environment, atomically.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..api import TrainedModel, load_model
from ..io import atomic_write_json, atomic_write_text, provenance


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


def _write(df: pd.DataFrame, out: str | Path, sidecar: dict[str, Any]) -> Path:
    out = Path(out)
    compression = "gzip" if out.suffix == ".gz" else None
    if compression:
        import gzip

        from ..io import atomic_write_bytes

        atomic_write_bytes(out, gzip.compress(df.to_csv(index=False).encode(), compresslevel=1, mtime=0))
    else:
        atomic_write_text(out, df.to_csv(index=False))
    atomic_write_json(out.with_name(out.name + ".json"), sidecar)
    return out


def _model_meta(models: dict[str, TrainedModel]) -> dict[str, Any]:
    return {n: {"objective": m.meta.get("objective_effective"), "seed": m.meta.get("seed"),
                "provenance": m.meta.get("provenance"), "acc_test": m.meta.get("acc_test")}
            for n, m in models.items()}


def run_evaluate(model_specs: list[str], out: str | Path, *, protocol_overrides: dict[str, Any] | None = None,
                 constrained: bool = False, experiment: str = "", progress: bool = False) -> pd.DataFrame:
    from ..data import available
    from .protocol import EvalProtocol, evaluate_counterfactuals, performance

    models, data = load_models(model_specs)
    fid = next(iter(models.values())).fidelity
    family = available().get(data.name, {}).get("family", "tabular")
    protocol = EvalProtocol.reference(family, constrained=constrained, **(protocol_overrides or {}))
    X, y = (data.X_test, data.y_test) if protocol.split == "test" else (
        np.vstack([data.X_train, data.X_val]), np.concatenate([data.y_train, data.y_val]))
    t0 = time.perf_counter()
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
               "protocol": protocol.to_dict(), "fidelity": fid.to_dict(), "models": _model_meta(models),
               "performance": perf.to_dict(orient="records"), "seconds": time.perf_counter() - t0,
               "n_rows": len(df), "provenance": provenance()}
    _write(df, out, sidecar)
    return df


def _per_model(models: dict[str, TrainedModel], data: Any, experiment: str, frame_of) -> pd.DataFrame:
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


def run_robustness(model_specs: list[str], out: str | Path, *, eps_grid: list[float] | None = None,
                   seed: int = 0, experiment: str = "") -> pd.DataFrame:
    from .robustness import robustness_curve

    models, data = load_models(model_specs)
    X = torch.as_tensor(data.X_test)
    y = torch.as_tensor(data.y_test)
    df = _per_model(models, data, experiment, lambda m: robustness_curve(m, X, y, eps_grid=eps_grid, seed=seed))
    sidecar = {"kind": "robustness", "dataset": data.name, "experiment": experiment, "seed": seed,
               "models": _model_meta(models), "fidelity": next(iter(models.values())).fidelity.to_dict(),
               "provenance": provenance()}
    _write(df, out, sidecar)
    return df


def run_attribution(model_specs: list[str], out: str | Path, *, n_rounds: int = 100, n_samples: int = 2500,
                    steps: int = 50, seed: int = 0, experiment: str = "") -> pd.DataFrame:
    """Integrated gradients on the protected features (Table 2): the same rounds and baselines for every model."""
    from .attribution import ig_rounds

    models, data = load_models(model_specs)
    if not data.protected:
        raise ValueError(f"dataset {data.name!r} has no protected features to attribute")
    X = torch.as_tensor(data.X_test)
    y = torch.as_tensor(data.y_test)
    df = _per_model(models, data, experiment, lambda m: ig_rounds(
        m, X, y, data.protected, n_rounds=n_rounds, n_samples=n_samples, seed=seed, steps=steps))
    sidecar = {"kind": "integrated_gradients", "dataset": data.name, "experiment": experiment,
               "n_rounds": n_rounds, "n_samples": n_samples, "steps": steps, "seed": seed,
               "protected": data.protected, "models": _model_meta(models), "provenance": provenance()}
    _write(df, out, sidecar)
    return df
