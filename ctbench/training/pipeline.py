"""Train from a config, save and load models, generate counterfactuals (core; :mod:`ctbench.api` is its public
entry point, which the README documents).

    >>> from ctbench.training.pipeline import train_from_config, load_model
    >>> trained = train_from_config({"data": {"name": "lin_sep"}, "training": {"epochs": 5}})
    >>> trained.save("results/ls.pt")
    >>> trained = load_model("results/ls.pt")
    >>> result = trained.counterfactuals(X, target)
"""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..config import ConfigError
from ..constraints import Constraints
from ..errors import BadFileError, UserInputError
from ..fidelity import Fidelity
from ..generators import VAE, Convergence, CounterfactualResult, make_generator
from ..generators.vae import fit_cached
from ..io import atomic_write_bytes, atomic_write_json, jsonable, provenance, read_model_sidecar, with_digest
from ..models import build_model
from .health import TrainingFailedError
from .objectives import Objective
from .preflight import check_train_config
from .trainer import TrainParams, train

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

    @property
    def failure(self) -> str | None:
        """Why training failed, for a model kept for inspection (``training.keep_failed``); None for a normal one."""
        return self.meta.get("training_failure")

    @property
    def n_features(self) -> int:
        return int(self.meta["model_spec"]["n_features"])

    @property
    def n_classes(self) -> int:
        return int(self.meta["model_spec"]["n_classes"])

    def check_inputs(self, X: Any, target: Any = None, *, what: str = "factuals") -> tuple[np.ndarray, Any]:
        """``X`` as a float32 (n, D) array and ``target`` as int64 (n,), checked against this model: the width, finite
        values, target classes in 0..K−1. Raises :class:`~ctbench.errors.UserInputError` naming ``what``."""
        try:
            x = np.asarray(X, dtype=np.float32)
        except (TypeError, ValueError) as err:
            raise UserInputError(f"{what}: not a numeric matrix ({err})") from None
        if x.ndim == 1 and x.size == 0:
            x = x.reshape(0, self.n_features)
        if x.ndim != 2:
            raise UserInputError(f"{what}: expected a matrix (rows × {self.n_features} features), got shape "
                                 f"{x.shape}")
        if x.shape[1] != self.n_features:
            raise UserInputError(f"{what}: {x.shape[1]} column(s), but the model takes {self.n_features} "
                                 f"feature(s) (dataset {self.config['data']['name']!r}); give one column per "
                                 "feature, in the training order")
        if not np.isfinite(x).all():
            raise UserInputError(f"{what}: contains NaN or Inf (row {int(np.argwhere(~np.isfinite(x))[0, 0])}); "
                                 "give finite feature values")
        if target is None:
            return x, None
        t = np.asarray(target)
        if t.ndim == 0:
            t = np.full(len(x), t)
        whole = np.issubdtype(t.dtype, np.integer) or (np.issubdtype(t.dtype, np.floating) and
                                                         bool(np.all(np.mod(t, 1) == 0)))
        if t.shape != (len(x),) or not whole:
            raise UserInputError(f"target: expected one whole class number per factual ({len(x)}), got {target!r}")
        bad = (t < 0) | (t >= self.n_classes)
        if bad.any():
            raise UserInputError(f"target: class {int(t[bad][0])} does not exist; the model has {self.n_classes} "
                                 f"classes, numbered 0..{self.n_classes - 1}")
        return x, t.astype(np.int64)

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
        X, target = self.check_inputs(X, target)
        dev = next(self.model.parameters()).device
        x = torch.as_tensor(X, dtype=torch.float32, device=dev)
        t = torch.as_tensor(target, dtype=torch.long, device=dev)
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
        meta = {**self.meta, "training_status": "failed" if self.failure else "ok",
                "format_version": FORMAT_VERSION, "config": self.config,
                "fidelity": self.fidelity.to_dict(), "constraints": self.constraints.to_dict(),
                "log": self.log.to_dict(orient="list")}
        meta = json.loads(json.dumps(meta, default=jsonable))  # plain types only (safe to load)
        blob = {"meta": meta, "state_dict": {k: v.cpu() for k, v in self.model.state_dict().items()}}
        if self.vae is not None:
            blob["vae"] = {"config": self.vae.config(), "state_dict": self.vae.state_dict()}
        buf = io.BytesIO()
        torch.save(blob, buf)
        data = buf.getvalue()
        atomic_write_bytes(path, data)
        # the sidecar records the sha256 of the weights file and of itself: read_model_sidecar refuses an edit
        atomic_write_json(path.with_suffix(path.suffix + ".json"), with_digest(meta, data))
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


@dataclass
class PreparedTraining:
    """A resolved training config with everything built from it (model, objective, generator, constraints...)."""

    cfg: dict[str, Any]
    fid: Fidelity
    data: Any
    family: str | None
    cons: Constraints
    objective: Objective
    notes: list[str]
    model: nn.Module
    vae: VAE | None
    generator: Any
    params: TrainParams
    conv: Convergence


def prepare_training(config: dict[str, Any] | None, data=None, progress: bool = False,
                     vaes: dict | None = None) -> PreparedTraining:
    """Resolve ``config`` and build its parts; ``vaes`` caches trained VAEs by (dataset, VAE config)."""
    from ..data import load_dataset
    from ..data.registry import family as dataset_family

    cfg, fid = check_train_config(config)
    if data is None:
        data = load_dataset(cfg["data"]["name"], fidelity=fid, **cfg["data"]["params"])
    classes = np.unique(np.asarray(data.y_train))
    if len(classes) < 2 or data.n_classes < 2:
        raise UserInputError(
            f"dataset {cfg['data']['name']!r} (data.params {cfg['data']['params']}): the training split has one class "
            f"only (class {classes[0] if len(classes) else '-'} in all {len(data.y_train)} rows): a classifier needs "
            "at least two classes. Check the dataset and its size parameters (e.g. n_train, n_draws).")
    family = dataset_family(cfg["data"]["name"], default=None)
    cons = _constraints_for(cfg, data)
    objective, notes = effective_objective(cfg, fid, family)
    model = build_model(cfg["model"], data.n_features, data.n_classes, seed=cfg["seed"])
    vae = None
    if cfg["generator"].get("type") == "revise" and objective.needs_counterfactuals:
        v = cfg["vae"]
        key = (data.name, json.dumps(v, sort_keys=True))
        vae = (vaes or {}).get(key)
        if vae is None:
            vae = fit_cached(data.X_train, latent_dim=v["latent_dim"], hidden=v["hidden"], epochs=v["epochs"],
                             batch_size=v["batch_size"], seed=v["seed"], progress=progress)
            if vaes is not None:
                vaes[key] = vae
    generator = make_generator(cfg["generator"], fid, vae=vae) if objective.needs_counterfactuals else None
    params = TrainParams(seed=cfg["seed"], **cfg["training"])
    conv = Convergence(**cfg["convergence"])
    return PreparedTraining(cfg, fid, data, family, cons, objective, notes, model, vae, generator, params, conv)


def _trained(p: PreparedTraining, model: nn.Module, log: pd.DataFrame, seconds: float,
             population: dict[str, Any] | None = None, failure: str | None = None) -> TrainedModel:
    data, cfg = p.data, p.cfg
    with torch.no_grad():
        x_test = torch.as_tensor(data.X_test, dtype=torch.float32, device=cfg["device"])
        acc_test = float((model(x_test).argmax(1).cpu().numpy() == data.y_test).mean()) if len(x_test) else None
    meta = {
        "seed": cfg["seed"], "fidelity_mode": p.fid.mode, "objective_effective": p.objective.to_dict(),
        "notes": p.notes, "generator_params": p.generator.params() if p.generator else None,
        "model_spec": {**cfg["model"], "n_features": data.n_features, "n_classes": data.n_classes},
        "dataset": {"name": data.name, "family": p.family, "summary": data.summary(), "meta": data.meta},
        "train_seconds": seconds, "acc_test": acc_test, "provenance": provenance(),
    }
    if population is not None:
        meta["population"] = population
    if failure is not None:  # kept for inspection (training.keep_failed): marked, and refused by load_model
        meta["training_failure"] = failure
    return TrainedModel(model, cfg, p.fid, p.cons, log, meta, p.vae)


def train_from_config(config: dict[str, Any] | None = None, *, data=None, progress: bool = False) -> TrainedModel:
    """Resolve ``config``, load the data, train, and return a :class:`TrainedModel` (not yet saved)."""
    p = prepare_training(config, data, progress)
    torch.set_num_threads(int(p.cfg["threads"]))
    t0 = time.perf_counter()
    try:
        model, log = train(p.model, p.data.X_train, p.data.y_train, objective=p.objective, generator=p.generator,
                           params=p.params, constraints=p.cons, convergence=p.conv, fidelity=p.fid,
                           X_val=p.data.X_val, y_val=p.data.y_val, n_classes=p.data.n_classes,
                           device=p.cfg["device"], progress=progress)
    except TrainingFailedError as err:
        if not p.params.keep_failed or err.model is None:
            raise
        return _trained(p, err.model, err.log, time.perf_counter() - t0, failure=str(err))
    return _trained(p, model, log, time.perf_counter() - t0)


@dataclass
class FailedTraining:
    """A population member whose training failed (diverged or did not learn): its config, the reason and the log up
    to the failure (nothing saved)."""

    name: str
    config: dict[str, Any]
    error: str
    log: pd.DataFrame


def _program_key(p: PreparedTraining) -> str:
    """Members with equal keys share data, fidelity, constraints and device, so one population can train them."""
    c = p.cfg
    return json.dumps([c["data"], p.fid.to_dict(), p.cons.to_dict(), c["device"]], sort_keys=True, default=str)


def train_population_from_configs(configs: dict[str, dict[str, Any]] | list[dict[str, Any]], *, data=None,
                                  progress: bool = False) -> dict[str, TrainedModel | FailedTraining]:
    """Train many configs at once as populations (:func:`ctbench.training.population.train_population`).

    ``configs`` maps a member name to a ``ctbench train`` config (a list is named "0", "1", ...). Every config is
    resolved and checked before any training starts (a :class:`ConfigError` names the member). Configs that share
    data, fidelity, constraints and device train together; within those, the trainer groups members that can share
    a program (architecture, batch size, epochs). Each result is a :class:`TrainedModel` with the same metadata as
    :func:`train_from_config` (``train_seconds`` is the population's wall time divided by its size, and
    ``meta["population"]`` says which population it came from), or a :class:`FailedTraining` for a member that
    diverged; the others still finish. Identical configs train once and share the result.
    """
    from .population import Member, train_population

    named = dict(configs) if isinstance(configs, dict) else {str(i): c for i, c in enumerate(configs)}
    if not named:
        raise ConfigError("train_population_from_configs: no configs")
    prepared: dict[str, PreparedTraining] = {}
    vaes: dict = {}
    datasets: dict[str, Any] = {}
    same_as: dict[str, str] = {}   # a config identical to an earlier one trains once (e.g. single/full = ablation/full)
    first_of: dict[str, str] = {}
    for name, config in named.items():
        try:
            cfg, _ = check_train_config(config)
            ckey = json.dumps(cfg, sort_keys=True, default=str)
            if ckey in first_of:
                same_as[name] = first_of[ckey]
                continue
            first_of[ckey] = name
            dkey = json.dumps([cfg["data"], cfg["fidelity"], cfg["fidelity_overrides"]], sort_keys=True)
            p = prepare_training(cfg, data if data is not None else datasets.get(dkey), progress, vaes)
        except (ConfigError, ValueError) as err:
            raise ConfigError(f"member {name!r}: {err}") from err
        datasets[dkey] = p.data
        prepared[name] = p
    threads = max(int(p.cfg["threads"]) for p in prepared.values())
    torch.set_num_threads(threads)
    groups: dict[str, list[str]] = {}
    for name, p in prepared.items():
        groups.setdefault(_program_key(p), []).append(name)
    out: dict[str, TrainedModel | FailedTraining] = {}
    for names in groups.values():
        ps = [prepared[n] for n in names]
        first = ps[0]
        members = [Member(p.model, p.objective, p.params, p.generator, p.conv, name=n)
                   for n, p in zip(names, ps, strict=True)]
        d = first.data
        results = train_population(members, d.X_train, d.y_train, constraints=first.cons, fidelity=first.fid,
                                   X_val=d.X_val, y_val=d.y_val, n_classes=d.n_classes, device=first.cfg["device"],
                                   progress=progress)
        for n, p, r in zip(names, ps, results, strict=True):
            pop = {"size": r.population_size, "wall_seconds": r.population_seconds, "members": len(names)}
            if not r.ok and r.model is not None:  # training.keep_failed: kept for inspection, marked failed
                out[n] = _trained(p, r.model, r.log, r.seconds, pop, failure=r.error)
            elif not r.ok:
                out[n] = FailedTraining(n, p.cfg, r.error, r.log)
            else:
                out[n] = _trained(p, r.model, r.log, r.seconds, pop)
    for name, first in same_as.items():
        out[name] = out[first]
    return {n: out[n] for n in named}


def _read_model_file(path: Path, device: str) -> dict[str, Any]:
    if not path.is_file():
        raise BadFileError(f"model file {path} does not exist" if not path.exists() else
                           f"model file {path} is not a file")
    try:
        blob = torch.load(path, map_location=device, weights_only=True)
    except Exception as err:  # truncated, not a torch file, or written by something else: name the file
        size = path.stat().st_size
        raise BadFileError(f"model file {path} ({size} bytes) cannot be read: {type(err).__name__}: "
                           f"{str(err).split('. ')[0] if str(err) else 'no detail'}. It is truncated or not a "
                           "model saved by ctbench; train it again (ctbench train --out ...).") from None
    if not isinstance(blob, dict) or not isinstance(blob.get("meta"), dict) or "state_dict" not in blob:
        raise BadFileError(f"model file {path} is a torch file but not a ctbench model (no meta/state_dict)")
    return blob


def load_model(path: str | Path, device: str = "cpu", *, allow_failed: bool = False) -> TrainedModel:
    """Load a model saved by :meth:`TrainedModel.save` (weights are checked to be finite).

    A model whose training failed and was kept for inspection (``training.keep_failed``) is refused unless
    ``allow_failed``; an unreadable file raises :class:`~ctbench.errors.BadFileError` naming it."""
    path = Path(path)
    blob = _read_model_file(path, device)
    if path.with_name(path.name + ".json").is_file():  # the sidecar the report reads: unchanged, and of these weights
        read_model_sidecar(path)
    meta = blob["meta"]
    if meta.get("format_version") != FORMAT_VERSION:
        raise BadFileError(f"{path}: model format {meta.get('format_version')} is not {FORMAT_VERSION}; "
                           "train it again with this ctbench")
    if meta.get("training_failure") and not allow_failed:
        raise BadFileError(f"model file {path} was kept after its training failed ({meta['training_failure']}); "
                           "it is for inspection only (load_model(..., allow_failed=True)), not for evaluation")
    spec = dict(meta["model_spec"])
    n_features, n_classes = spec.pop("n_features"), spec.pop("n_classes")
    model = build_model(spec, n_features, n_classes)
    try:
        model.load_state_dict(blob["state_dict"])
    except RuntimeError as err:
        raise BadFileError(f"model file {path}: the weights do not fit the model it describes ({err})") from None
    bad = [k for k, v in blob["state_dict"].items() if torch.is_floating_point(v) and not torch.isfinite(v).all()]
    if bad:
        raise BadFileError(f"model file {path}: the weights {', '.join(bad[:3])}{' ...' if len(bad) > 3 else ''} "
                           "contain NaN or Inf; such a model cannot be evaluated or explained. Train it again "
                           "(ctbench train --out ...)")
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
