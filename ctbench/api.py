"""High-level Python API: train from a config, save and load models, generate counterfactuals.

    >>> from ctbench.api import train_from_config, load_model
    >>> trained = train_from_config({"data": {"name": "lin_sep"}, "training": {"epochs": 5}})
    >>> trained.save("results/ls.pt")
    >>> trained = load_model("results/ls.pt")
    >>> result = trained.counterfactuals(X, target)
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from .config import ConfigError, resolve_train_config
from .constraints import Constraints
from .fidelity import Fidelity, resolve_fidelity
from .generators import VAE, Convergence, CounterfactualResult, make_generator
from .io import _jsonable, atomic_torch_save, atomic_write_json, provenance
from .models import build_model
from .training import Objective, TrainParams, train

FORMAT_VERSION = 1


@dataclass
class TrainedModel:
    """A model with everything needed to reproduce and reuse it."""

    model: nn.Module
    config: dict[str, Any]
    fidelity: Fidelity
    constraints: Constraints
    log: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    vae: VAE | None = None

    def generator(self, spec: dict[str, Any] | None = None):
        """The training generator (or one built from ``spec``) under this model's fidelity mode."""
        return make_generator(spec or self.config["generator"], self.fidelity, vae=self.vae)

    def counterfactuals(self, X: Any, target: Any, *, generator: dict[str, Any] | None = None,
                        convergence: dict[str, Any] | None = None, use_constraints: bool = True,
                        mutability: Any = None, seed: int = 0) -> CounterfactualResult:
        """Search counterfactuals for factuals ``X`` (n, D) towards classes ``target`` (n,).

        ``use_constraints``: the model's own domain and mutability; ``mutability`` (a spec for
        :func:`ctbench.constraints.parse_mutability`) replaces the model's mutability, e.g. to search a baseline
        trained without constraints under the protected features.
        """
        conv = Convergence(**(convergence or self.config["convergence"]))
        dev = next(self.model.parameters()).device
        x = torch.as_tensor(np.asarray(X), dtype=torch.float32, device=dev)
        t = torch.as_tensor(np.asarray(target), dtype=torch.long, device=dev)
        cons = self.constraints if use_constraints else Constraints(x.shape[1])
        if mutability is not None:
            dom = None if cons.lower is None else (cons.lower.tolist(), cons.upper.tolist())
            cons = Constraints.build(x.shape[1], domain=dom, mutability=mutability,
                                     categorical_groups=cons.categorical_groups)
        gen = torch.Generator().manual_seed(int(seed))
        return self.generator(generator).search(self.model, x, t, cons, conv, gen)

    def predict_proba(self, X: Any) -> np.ndarray:
        dev = next(self.model.parameters()).device
        with torch.no_grad():
            x = torch.as_tensor(np.asarray(X), dtype=torch.float32, device=dev)
            return torch.softmax(self.model(x), 1).cpu().numpy()

    def predict(self, X: Any) -> np.ndarray:
        return self.predict_proba(X).argmax(1)

    def save(self, path: str | Path) -> Path:
        """Write ``path`` (weights + metadata) and a readable ``path.json`` sidecar, each atomically."""
        path = Path(path)
        meta = {**self.meta, "format_version": FORMAT_VERSION, "config": self.config,
                "fidelity": self.fidelity.to_dict(), "constraints": self.constraints.to_dict(),
                "log": self.log.to_dict(orient="list")}
        meta = json.loads(json.dumps(meta, default=_jsonable))  # plain types only (safe to load)
        blob = {"meta": meta, "state_dict": {k: v.cpu() for k, v in self.model.state_dict().items()}}
        if self.vae is not None:
            blob["vae"] = {"config": self.vae.config(), "state_dict": self.vae.state_dict()}
        atomic_torch_save(blob, path)
        atomic_write_json(path.with_suffix(path.suffix + ".json"), meta)
        return path


def _constraints_for(cfg: dict[str, Any], data) -> Constraints:
    D = data.n_features
    dom = cfg["domain"]
    domain = data.domain if dom == "inferred" else (None if dom in ("none", None) else dom)
    mut = cfg["mutability"]
    if mut == "protected":
        if not data.protected:
            raise ConfigError(f"mutability: 'protected' but dataset {data.name!r} declares no protected features")
        mut = list(data.protected)
    return Constraints.build(D, domain=domain, mutability=mut)


def effective_objective(cfg: dict[str, Any], fid: Fidelity, family: str | None) -> tuple[Objective, list[str]]:
    """The objective that actually runs, and notes on any fidelity rule that changed it."""
    o = dict(cfg["objective"])
    notes = []
    if (fid.synthetic_mutability_zero_reg_adv and family == "synthetic" and cfg["mutability"] is not None
            and o["name"] in ("full", "ct")):
        o["lambda_reg"], o["lambda_adv"] = 0.0, 0.0
        notes.append("fidelity.synthetic_mutability_zero_reg_adv: lambda_reg and lambda_adv set to 0 "
                     "(reference §11.3, the run records of the synthetic mutability models)")
    return Objective(**o), notes


def train_from_config(config: dict[str, Any] | None = None, *, data=None, progress: bool = False) -> TrainedModel:
    """Resolve ``config``, load the data, train, and return a :class:`TrainedModel` (not yet saved)."""
    from .data import available, load_dataset

    cfg = resolve_train_config(config)
    fid = resolve_fidelity(cfg["fidelity"], cfg["fidelity_overrides"])
    torch.set_num_threads(int(cfg["threads"]))
    if cfg["device"].startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError("device: 'cuda' requested but no CUDA device is available; use device: cpu")
    if data is None:
        data = load_dataset(cfg["data"]["name"], fidelity=fid, **cfg["data"]["params"])
    family = available().get(cfg["data"]["name"], {}).get("family") or data.meta.get("family")
    cons = _constraints_for(cfg, data)
    objective, notes = effective_objective(cfg, fid, family)
    model = build_model(cfg["model"], data.n_features, data.n_classes, seed=cfg["seed"])
    vae = None
    if cfg["generator"].get("type") == "revise":
        v = cfg["vae"]
        vae = VAE(data.n_features, v["latent_dim"], v["hidden"], seed=v["seed"])
        vae.fit(data.X_train, epochs=v["epochs"], batch_size=v["batch_size"], seed=v["seed"], progress=progress)
    generator = make_generator(cfg["generator"], fid, vae=vae) if objective.needs_counterfactuals else None
    params = TrainParams(seed=cfg["seed"], **cfg["training"])
    conv = Convergence(**cfg["convergence"])
    t0 = time.perf_counter()
    model, log = train(model, data.X_train, data.y_train, objective=objective, generator=generator, params=params,
                       constraints=cons, convergence=conv, fidelity=fid, X_val=data.X_val, y_val=data.y_val,
                       n_classes=data.n_classes, device=cfg["device"], progress=progress)
    wall = time.perf_counter() - t0
    with torch.no_grad():
        x_test = torch.as_tensor(data.X_test, dtype=torch.float32, device=cfg["device"])
        acc_test = float((model(x_test).argmax(1).cpu().numpy() == data.y_test).mean()) if len(x_test) else None
    meta = {
        "seed": cfg["seed"], "fidelity_mode": fid.mode, "objective_effective": objective.to_dict(),
        "notes": notes, "generator_params": generator.params() if generator else None,
        "model_spec": {**cfg["model"], "n_features": data.n_features, "n_classes": data.n_classes},
        "dataset": {"name": data.name, "family": family, "summary": data.summary(), "meta": data.meta},
        "train_seconds": wall, "acc_test": acc_test, "provenance": provenance(),
    }
    return TrainedModel(model, cfg, fid, cons, log, meta, vae)


def load_model(path: str | Path, device: str = "cpu") -> TrainedModel:
    """Load a model saved by :meth:`TrainedModel.save` (weights are checked to be finite)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"model file {path} does not exist")
    blob = torch.load(path, map_location=device, weights_only=True)
    meta = blob["meta"]
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: model format {meta.get('format_version')} is not {FORMAT_VERSION}")
    spec = dict(meta["model_spec"])
    n_features, n_classes = spec.pop("n_features"), spec.pop("n_classes")
    model = build_model(spec, n_features, n_classes)
    model.load_state_dict(blob["state_dict"])
    model.to(device).eval()
    c = meta["constraints"]
    cons = Constraints.build(n_features, domain=c["domain"], mutability=c["mutability"],
                             categorical_groups=c["categorical_groups"])
    fid = Fidelity(**meta["fidelity"])
    vae = None
    if "vae" in blob:
        vae = VAE(**blob["vae"]["config"])
        vae.load_state_dict(blob["vae"]["state_dict"])
    log = pd.DataFrame(meta["log"])
    core = {k: v for k, v in meta.items() if k not in ("config", "fidelity", "constraints", "log")}
    return TrainedModel(model, meta["config"], fid, cons, log, core, vae)
