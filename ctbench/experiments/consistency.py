"""The consistency study (Black et al., ICLR 2022, Sec. 5 and App. B) and where it meets counterfactual training.

Two parts, one job each per dataset (and seed): ``jobs(config)`` lists them from the workflow config's
``consistency`` block, ``run(job)`` returns one row per (model, method, factual) (:data:`~.consistency_search.
FRAME_COLUMNS`) and a metadata dict; :func:`write` stores both atomically (CSV + JSON sidecar with provenance).

* ``black2022``: a base model in the paper's architecture and training settings (App. B.2, :data:`ARCHITECTURES`:
  hidden widths, epochs, batch size; Adam(1e-3); Glorot weights; batches reshuffled every epoch as Keras does),
  counterfactuals for the validation split (ctbench's test split) by each method ± SNS with the per-dataset settings
  of App. B.3 / Table 2 (Min-ℓ1/ℓ2 step sizes, the largest Min-ε PGD bound, δ_SNS = 0.8 × that bound, 200 SNS steps
  on a 10-point grid), and n RS and n LOO retrained models, all trained as one population with the base.
* ``ct``: the same protocol on the CT paper's models (``model_config(dataset, "single", "full"/"vanilla", seed)``):
  CT and BL base models, each retrained under RS and LOO with its own objective (CT with CT), counterfactuals by
  the CT generator (``ecco``) and/or Black's methods, ± SNS (δ = 0.8 × the median training norm unless given).

Deviations from the paper (stated in the book): the VAE of ``latent_random`` is ctbench's small REVISE VAE (the
authors trained a 1024-128-32-128-1024 autoencoder); HELOC's batch size is not stated (Keras' default, 32, is used);
``n_factuals`` may cap the validation split to a seeded random subset (the paper uses all of it).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..facts import CONSISTENCY_PARTS
from ..generators.elastic_net import BOXES
from ..generators.pgd import STEP_RULES
from ..generators.sns import AUTHORS_NORM_EPS
from ..io import provenance, write_frame
from .consistency_search import (
    FRAME_COLUMNS,
    METHODS,
    SEARCH_BOXES,
    SearchContext,
    check_methods,
    evaluate,
    search_methods,
)
from .invalidation import retraining_members, retraining_plan

PARTS = CONSISTENCY_PARTS
#: the eight methods of 003's Table 1
TABLE1_METHODS = ["min_l1", "min_l1+sns", "min_l2", "min_l2+sns", "min_eps_pgd", "min_eps_pgd+sns", "prototype",
                  "latent_random"]


@dataclass(frozen=True)
class Architecture:
    """App. B.2 (model, epochs, batch size) and Table 2 (search settings) for one dataset."""

    hidden: tuple[int, ...]
    epochs: int
    batch_size: int
    pgd_max_eps: float | None = None   # None: the median training norm (App. B.3's rule)
    l1_step: float = 0.05
    l2_step: float = 0.01
    latent_radius: float = 1.0
    note: str = ""


ARCHITECTURES: dict[str, Architecture] = {
    "german_credit": Architecture((128, 64, 16), 100, 32, 3.0, 0.05, 0.01, 0.3),
    "epileptic_seizure": Architecture((128, 64, 16), 100, 128, 3.0, 0.05, 0.01, 1.0),
    "cardiotocography": Architecture((100, 32, 16), 100, 16, 0.2, 0.05, 0.01, 1.0),
    "heloc_b22": Architecture((100, 32), 50, 32, 2.1, 0.01, 0.01, 1.0,
                              "batch size not stated in App. B.2: Keras' default 32"),
    "credit_default_b22": Architecture((32, 16), 100, 512, 5.0, 0.05, 0.01, 1.0),
}
#: any other dataset (e.g. a synthetic one in the smoke profile)
DEFAULT_ARCHITECTURE = Architecture((32, 16), 100, 32, None, note="not a dataset of 003: a small default MLP")

DEFAULTS: dict[str, Any] = {
    "methods": TABLE1_METHODS, "n_models": 100, "n_factuals": None, "epochs": None, "sources": ["rs", "loo"],
    # SNS's step x' + η·g/(‖g‖ + norm_eps): the authors' code adds Keras' epsilon 1e-7 (the paper does not state the
    # step's form); 0 takes a unit step whatever the gradient's size
    "sns": {"fidelity": "paper", "radius": None, "radius_factor": 0.8, "norm_eps": AUTHORS_NORM_EPS},
    "lipschitz": {"samples": 16, "radius_factor": 0.05}, "vae_epochs": 100, "data_params": {},
    # Min-ℓ1/ℓ2's box (fidelity switch ``elastic_net_box``); null: the run's fidelity (below) decides
    "elastic_net_box": None,
    # Min-ε PGD's step per bound ε_k (``MinEpsPGDGenerator.step_rule``): ``paper`` α = 2·ε_k/steps (App. B.3's text)
    # or ``code`` α = 2·ε_k²/steps (the authors' code passes 2·ε_k/steps to foolbox's L2PGD as a step *relative* to
    # ε_k; with it CTG's PGD costs are Table 4's); null: the run's fidelity decides (reference: code, paper: paper)
    "pgd_step_rule": None,
    # Min-ε PGD's and SNS's box: ``scalar`` one range for every feature, the training split's overall min and max
    # (the authors' code: their README and example pass ``clamp=[X_train.min(), X_train.max()]`` to the PGD, whose
    # foolbox bounds are that range, and to StableNeighborSearch, whose clamp it is) or ``feature`` each feature's own
    # range (the data's domain); null: part black2022 takes the run's fidelity (reference: scalar, paper: feature),
    # part ct keeps ``feature`` (the CT paper's domain constraints are part of that study)
    "search_box": None,
    # the run's fidelity mode and switch overrides (the workflow passes its own): the CT part trains its CT and BL
    # models with them, as the final models are trained; the Black et al. part takes the elastic-net box from them
    # (unless ``elastic_net_box`` is given), while its base models follow Black et al.'s Keras training (batches
    # reshuffled every epoch) whatever the mode
    "fidelity": "reference",
    "fidelity_overrides": {},
}


def resolve_settings(settings: dict[str, Any] | None, part: str = "black2022") -> dict[str, Any]:
    """Defaults merged with ``settings``; every value checked before any data is loaded or model trained."""
    if part not in PARTS:
        raise ValueError(f"consistency part: {part!r} is not one of {PARTS}")
    given = dict(settings or {})
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"consistency: unknown setting(s) {unknown}; allowed: {sorted(DEFAULTS)}")
    s = copy.deepcopy(DEFAULTS)
    if part == "ct":
        s["methods"] = ["ecco", "ecco+sns"]
    for key in ("sns", "lipschitz"):
        sub = dict(given.pop(key, None) or {})
        bad = sorted(set(sub) - set(s[key]))
        if bad:
            raise ValueError(f"consistency.{key}: unknown key(s) {bad}; allowed: {sorted(s[key])}")
        s[key].update(sub)
    s.update(given)
    check_methods(list(s["methods"]), METHODS if part == "ct" else tuple(m for m in METHODS if "ecco" not in m))
    for key, lo in (("n_models", 1), ("n_factuals", 1), ("epochs", 1), ("vae_epochs", 1)):
        v = s[key]
        if v is None and key in ("n_factuals", "epochs"):
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"consistency.{key}: {v!r} must be an integer >= {lo}"
                             + (" or null" if key in ("n_factuals", "epochs") else ""))
    if not s["sources"] or not set(s["sources"]) <= {"rs", "loo"}:
        raise ValueError(f"consistency.sources: {s['sources']!r}; allowed: a non-empty subset of [rs, loo]")
    for key, v in (("sns.radius", s["sns"]["radius"]), ("sns.radius_factor", s["sns"]["radius_factor"]),
                   ("lipschitz.radius_factor", s["lipschitz"]["radius_factor"])):
        if v is None and key == "sns.radius":
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
            raise ValueError(f"consistency.{key}: {v!r} must be a number > 0 (allowed range: (0, inf))")
    ne = s["sns"]["norm_eps"]
    if isinstance(ne, bool) or not isinstance(ne, int | float) or not 0 <= ne < float("inf"):
        raise ValueError(f"consistency.sns.norm_eps: {ne!r} must be a finite number >= 0 (the authors' code: 1e-7)")
    if s["sns"]["fidelity"] not in ("reference", "paper"):
        raise ValueError(f"consistency.sns.fidelity: {s['sns']['fidelity']!r}; allowed: reference, paper")
    if s["elastic_net_box"] not in (None, *BOXES):
        raise ValueError(f"consistency.elastic_net_box: {s['elastic_net_box']!r}; allowed: null, {', '.join(BOXES)}")
    if s["pgd_step_rule"] not in (None, *STEP_RULES):
        raise ValueError(f"consistency.pgd_step_rule: {s['pgd_step_rule']!r}; allowed: null, {', '.join(STEP_RULES)}")
    if s["search_box"] not in (None, *SEARCH_BOXES):
        raise ValueError(f"consistency.search_box: {s['search_box']!r}; allowed: null, {', '.join(SEARCH_BOXES)}")
    if not isinstance(s["fidelity_overrides"], dict):
        raise ValueError(f"consistency.fidelity_overrides: {s['fidelity_overrides']!r} must be a mapping of switches")
    run_fidelity(s)  # an unknown mode or switch stops here, before any training
    return s


def pgd_step_rule(settings: dict[str, Any]) -> str:
    """Min-ε PGD's step rule of resolved ``settings``: the one given, else the authors' code's (``code``) under the
    ``reference`` fidelity and App. B.3's text (``paper``) under ``paper``."""
    return settings["pgd_step_rule"] or ("paper" if run_fidelity(settings).mode == "paper" else "code")


def search_box(settings: dict[str, Any], part: str = "black2022") -> str:
    """Min-ε PGD's and SNS's box of resolved ``settings``: the one given; else, in part black2022, the authors' code's
    (``scalar``) under the ``reference`` fidelity and each feature's own range (``feature``) under ``paper``; in part
    ct, ``feature``."""
    if settings["search_box"]:
        return settings["search_box"]
    return "feature" if part == "ct" or run_fidelity(settings).mode == "paper" else "scalar"


def run_fidelity(settings: dict[str, Any]):
    """The run's resolved fidelity (mode and overrides of resolved ``settings``)."""
    from ..fidelity import resolve_fidelity

    return resolve_fidelity(settings["fidelity"], settings["fidelity_overrides"])


def _black2022_datasets(chosen: list[str], datasets: list[str]) -> list[str]:
    """``datasets:`` limits the study too: with the paper's datasets (any of the catalog's) it runs on its own
    ``consistency.datasets``; with a user's datasets alone, only on those of them it lists."""
    from ..facts import DATASETS

    if any(d in DATASETS for d in datasets):
        return list(chosen)
    return [d for d in chosen if d in datasets]


def jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The jobs of a workflow config's ``consistency`` block: ``{part, dataset, seed, settings}`` each."""
    block = config.get("consistency") or {}
    if not block.get("enabled", False):
        return []
    out = []
    common = {k: block[k] for k in ("sns", "lipschitz", "vae_epochs", "elastic_net_box", "pgd_step_rule", "search_box")
              if k in block}
    common.update(fidelity=config.get("fidelity", "reference"),
                  fidelity_overrides=dict(config.get("fidelity_overrides") or {}))
    for d in _black2022_datasets(block.get("datasets") or [], list(config.get("datasets") or [])):
        settings = {**common, **{k: block[k] for k in ("methods", "n_models", "n_factuals", "epochs") if k in block}}
        settings["data_params"] = (config.get("data_params") or {}).get(d, {})
        out.append({"part": "black2022", "dataset": d, "seed": int(block.get("seed", 0)), "settings": settings})
    ct = block.get("ct") or {}
    if ct.get("enabled", False):
        for d in [d for d in (ct.get("datasets") or []) if d in config.get("datasets", [])]:  # `datasets:` limits
            settings = {**common, **{k: ct[k] for k in ("methods", "n_models", "n_factuals", "epochs") if k in ct}}
            settings["data_params"] = (config.get("data_params") or {}).get(d, {})
            for seed in ct.get("seeds") or [0]:
                out.append({"part": "ct", "dataset": d, "seed": int(seed), "settings": settings})
    return out


def _factual_rows(n_test: int, n_factuals: int | None, seed: int) -> np.ndarray:
    if n_factuals is None or n_factuals >= n_test:
        return np.arange(n_test)
    return np.sort(np.random.default_rng([int(seed), 7]).choice(n_test, size=n_factuals, replace=False))


def _split(results, members) -> tuple[Any, dict[str, list], list[str]]:
    """(base model, {"rs": models, "loo": models}, failed member errors) of one model's population results."""
    base, retrained, failed = None, {"rs": [], "loo": []}, []
    for m, r in zip(members, results, strict=True):
        if not r.ok:
            failed.append(r.error)
            continue
        kind = m.name.rsplit("/", 1)[-1]
        if kind == "base":
            base = r.model
        else:
            retrained["rs" if kind.startswith("rs") else "loo"].append(r.model)
    if base is None:
        raise RuntimeError(f"consistency: the base model diverged: {failed[0] if failed else ''}")
    return base, retrained, failed


@torch.no_grad()
def _accuracy(models: list, X: torch.Tensor, y: np.ndarray) -> dict[str, float]:
    from .invalidation import stacked_labels

    if not models:
        return {"mean": float("nan"), "min": float("nan"), "max": float("nan")}
    acc = (stacked_labels(models, X).numpy() == y[None, :]).mean(1)
    return {"mean": float(acc.mean()), "min": float(acc.min()), "max": float(acc.max())}


def _targets(model, x: torch.Tensor, n_classes: int, seed: int) -> torch.Tensor:
    from ..training.trainer import sample_targets

    with torch.no_grad():
        pred = model(x).argmax(1)
    return 1 - pred if n_classes == 2 else sample_targets(pred, n_classes, torch.Generator().manual_seed(seed))


def _members(part: str, dataset: str, seed: int, s: dict[str, Any], plan_n_train):
    """(data, constraints, fidelity, {model label: member list}, {label: search context extras}, notes)."""
    from ..constraints import Constraints
    from ..data import load_dataset
    from ..fidelity import resolve_fidelity
    from ..generators import make_generator
    from ..models import build_model
    from ..paper_settings import model_config
    from ..training import Objective, TrainParams
    from ..training.pipeline import prepare_training
    from ..training.population import Member

    if part == "black2022":
        arch = ARCHITECTURES.get(dataset, DEFAULT_ARCHITECTURE)
        data = load_dataset(dataset, **s["data_params"])
        plan = plan_n_train(len(data.y_train))
        X = data.X_train
        params = TrainParams(epochs=int(s["epochs"] or arch.epochs), batch_size=arch.batch_size, nce=None, lr=1e-3,
                             seed=seed)
        spec = {"type": "mlp", "hidden": list(arch.hidden)}

        def make(model_seed: int) -> Member:
            model = build_model(spec, data.n_features, data.n_classes, seed=model_seed)
            return Member(model, Objective("vanilla"), replace(params, seed=model_seed))

        members = {"base": retraining_members(make(seed), make, plan, len(data.y_train))}
        cons = Constraints.build(data.n_features, domain=(X.min(0).tolist(), X.max(0).tolist()))
        fid = resolve_fidelity("reference", {"shuffle_batches": True})
        info = {"architecture": {**arch.__dict__, "hidden": list(arch.hidden), "epochs": params.epochs}}
        return data, cons, fid, members, {"base": None}, plan, info
    members, ecco, first = {}, {}, None
    for label, objective in (("CT", "full"), ("BL", "vanilla")):
        def cfg(sd: int, objective=objective) -> dict:
            return model_config(dataset, "single", objective, sd, epochs=s["epochs"], data_params=s["data_params"],
                                fidelity=s["fidelity"], fidelity_overrides=s["fidelity_overrides"])

        p = prepare_training(cfg(seed), None if first is None else first.data)
        first = first or p
        plan = plan_n_train(len(p.data.y_train))

        def make_rs(sd: int, cfg=cfg, data=first.data) -> Member:
            q = prepare_training(cfg(sd), data)
            return Member(q.model, q.objective, q.params, q.generator, q.conv)

        base = Member(p.model, p.objective, p.params, p.generator, p.conv)
        members[label] = retraining_members(base, make_rs, plan, len(p.data.y_train), prefix=f"{label}/")
        ecco[label] = (make_generator(p.cfg["generator"], p.fid), p.conv)
    info = {"configs": {lab: model_config(dataset, "single", o, seed, epochs=s["epochs"], fidelity=s["fidelity"],
                                          fidelity_overrides=s["fidelity_overrides"])
                        for lab, o in (("CT", "full"), ("BL", "vanilla"))}}
    return first.data, first.cons, first.fid, members, ecco, plan, info


def run(job: dict[str, Any], progress: bool = False, retrained: list[str | Path] | None = None) -> pd.DataFrame:
    """Run one job (``{part, dataset, seed, settings}``); returns the per-counterfactual frame, its metadata (the
    sidecar) in ``attrs["meta"]``.

    ``retrained``: shard files of the job (:mod:`.consistency_shards`) holding its retrained models; then only the
    base model(s) train here, and the frame is bitwise the one of the job training everything itself (the sidecar's
    ``cpu_seconds`` adds the shards' CPU to ``train`` and ``total`` and lists it as ``train_shards``).

    Settings are checked first, then the data size against ``n_models`` (LOO needs that many distinct points): a
    bad value stops before any training. A real dataset whose files are missing gives an empty frame and a
    ``skipped`` note."""
    from ..generators.pgd import median_norm
    from ..generators.vae import fit_cached
    from ..training.population import train_population

    part, dataset, seed = job["part"], job["dataset"], int(job.get("seed", 0))
    s = resolve_settings(job.get("settings"), part)
    meta: dict[str, Any] = {"kind": "consistency", "part": part, "dataset": dataset, "seed": seed, "settings": s}
    cpu: dict[str, float] = {}
    t0 = time.process_time()

    def plan_n_train(n_train: int):
        return retraining_plan(seed, s["n_models"], n_train, s["sources"])

    try:
        data, cons, fid, members, ecco, plan, info = _members(part, dataset, seed, s, plan_n_train)
    except FileNotFoundError as err:
        meta.update(skipped=f"skipped: data for {dataset} not found ({str(err).splitlines()[0]})",
                    provenance=provenance())
        return _with_meta(pd.DataFrame(columns=FRAME_COLUMNS), meta)
    meta.update(info, n_train=int(len(data.y_train)), n_test=int(len(data.y_test)),
                data_scaling=data.meta.get("scaling_switch", "loader"),  # which preparation ran (scaling_switch.py)
                loo_rows=list(plan.loo_rows), rs_seeds=[plan.rs_seeds[0], plan.rs_seeds[-1]] if plan.rs_seeds else [])
    cpu["setup"] = time.process_time() - t0
    torch.set_num_threads(1)
    all_members = [m for ms in members.values() for m in ms]
    t = time.process_time()
    shard_cpu: list[float] = []
    if retrained is None:
        results = train_population(all_members, data.X_train, data.y_train, constraints=cons, fidelity=fid,
                                   n_classes=data.n_classes, progress=progress, log_accuracy=False)
    else:
        from .consistency_shards import load_shards

        loaded, shard_cpu = load_shards(list(retrained), job, s, members)
        bases = [ms[0] for ms in members.values()]
        trained = dict(zip([m.name for m in bases], train_population(
            bases, data.X_train, data.y_train, constraints=cons, fidelity=fid, n_classes=data.n_classes,
            progress=progress, log_accuracy=False), strict=True))
        results = [trained[m.name] if m.name in trained else loaded[m.name] for m in all_members]
    cpu["train"] = time.process_time() - t + sum(shard_cpu)
    X = data.X_train
    eps = ARCHITECTURES.get(dataset, DEFAULT_ARCHITECTURE).pgd_max_eps if part == "black2022" else None
    eps = float(eps or median_norm(X))
    sns_radius = float(s["sns"]["radius"] or s["sns"]["radius_factor"] * eps)
    arch = ARCHITECTURES.get(dataset, DEFAULT_ARCHITECTURE)
    box = s["elastic_net_box"] or run_fidelity(s).elastic_net_box
    vae = None
    if any(m.startswith("latent_random") for m in s["methods"]):
        t = time.process_time()
        vae = fit_cached(X, epochs=s["vae_epochs"], seed=seed)
        cpu["vae"] = time.process_time() - t
    rows = _factual_rows(len(data.y_test), s["n_factuals"], seed)
    x = torch.as_tensor(data.X_test[rows], dtype=torch.float32)
    x_test = torch.as_tensor(data.X_test, dtype=torch.float32)
    frames, models_meta, done = [], {}, 0
    for label, ms in members.items():
        res = results[done:done + len(ms)]
        done += len(ms)
        base, retrained, failed = _split(res, ms)
        ctx = SearchContext(eps, sns_radius, s["sns"]["fidelity"], arch.l1_step, arch.l2_step, arch.latent_radius,
                            X, vae, ecco.get(label), seed, elastic_net_box=box,
                            pgd_step_rule=pgd_step_rule(s), search_box=search_box(s, part),
                            sns_norm_eps=float(s["sns"]["norm_eps"]))
        target = _targets(base, x, data.n_classes, seed)
        found, search_cpu = search_methods(base, x, target, cons, list(s["methods"]), ctx)
        t = time.process_time()
        df = evaluate(base, retrained, found, rows, lipschitz_radius=s["lipschitz"]["radius_factor"] * eps,
                      lipschitz_samples=int(s["lipschitz"]["samples"]), seed=seed,
                      labels={"dataset": dataset, "seed": seed, "model": label})
        cpu[f"eval_{label}"] = time.process_time() - t
        cpu.update({f"search_{label}_{k}": v for k, v in search_cpu.items()})
        frames.append(df)
        models_meta[label] = {
            "failed": failed, "n_rs": len(retrained["rs"]), "n_loo": len(retrained["loo"]),
            "acc_base": _accuracy([base], x_test, data.y_test)["mean"],
            "acc_rs": _accuracy(retrained["rs"], x_test, data.y_test),
            "acc_loo": _accuracy(retrained["loo"], x_test, data.y_test)}
    cpu["total"] = time.process_time() - t0 + sum(shard_cpu)
    if retrained is not None:
        cpu["train_shards"] = shard_cpu
    meta.update(models=models_meta, pgd_max_eps=eps, sns_radius=sns_radius, n_factuals=int(len(rows)),
                elastic_net_box=box, pgd_step_rule=pgd_step_rule(s), search_box=search_box(s, part),
                cpu_seconds=cpu, provenance=provenance())
    return _with_meta(pd.concat(frames, ignore_index=True), meta)


def _with_meta(df: pd.DataFrame, meta: dict[str, Any]) -> pd.DataFrame:
    df.attrs["meta"] = meta
    return df


def write(df: pd.DataFrame, out: str | Path) -> Path:
    """``out`` (CSV, ``.csv.gz`` compressed) and ``out.json`` (``df.attrs["meta"]``), each atomically
    (:func:`ctbench.io.write_frame`)."""
    return write_frame(df, out, df.attrs["meta"])



def train_shard(job: dict[str, Any], shard: int, n_shards: int, progress: bool = False) -> dict[str, Any]:
    """Train shard ``shard`` of ``n_shards`` of the job's retrained models: ``{kind, job, shard, of, names,
    errors, states, cpu_seconds}`` (``states``: each model's ``state_dict``, None where it failed)."""
    from ..training.population import train_population
    from .consistency_shards import SHARD_KIND, shard_identity, shard_slice
    from .invalidation import retraining_plan

    t0 = time.process_time()
    part, dataset, seed = job["part"], job["dataset"], int(job.get("seed", 0))
    s = resolve_settings(job.get("settings"), part)
    try:
        data, cons, fid, members, _, _, _ = _members(
            part, dataset, seed, s, lambda n: retraining_plan(seed, s["n_models"], n, s["sources"]))
    except FileNotFoundError as err:  # the merge skips the job the same way (before it reads any shard)
        return {"kind": SHARD_KIND, "job": shard_identity(job, s), "shard": shard, "of": n_shards, "names": [],
                "errors": [], "states": [], "cpu_seconds": time.process_time() - t0,
                "skipped": f"skipped: data for {dataset} not found ({str(err).splitlines()[0]})"}
    retrained = [m for ms in members.values() for m in ms[1:]]
    mine = retrained[shard_slice(len(retrained), shard, n_shards)]
    torch.set_num_threads(1)
    results = train_population(mine, data.X_train, data.y_train, constraints=cons, fidelity=fid,
                               n_classes=data.n_classes, progress=progress, log_accuracy=False)
    return {"kind": SHARD_KIND, "job": shard_identity(job, s), "shard": shard, "of": n_shards,
            "names": [r.name for r in results], "errors": [r.error for r in results],
            "states": [None if r.model is None else r.model.state_dict() for r in results],
            "cpu_seconds": time.process_time() - t0}

__all__ = ["ARCHITECTURES", "DEFAULTS", "PARTS", "TABLE1_METHODS", "Architecture", "jobs",
           "resolve_settings", "run", "run_fidelity", "train_shard", "write"]
