"""Running one chunk of a grid: train its CT points as populations, evaluate each against the shared BL model
under the grid protocol, and write the chunk CSV, its per-epoch CSV and sidecar."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .configs import effective_step, point_config, step_size_applied
from .definitions import GRID_EVAL, GRIDS, baseline_key, chunks, find_points, grid_points


def grid_protocol(eval_overrides: dict[str, Any] | None = None):
    """The grid :class:`~ctbench.evaluation.protocol.EvalProtocol` with ``eval_overrides`` applied."""
    from ...evaluation.settings import EvalProtocol, check_protocol_overrides

    spec = check_protocol_overrides({**GRID_EVAL, **(eval_overrides or {})}, "grid evaluation")
    return EvalProtocol(**spec)


def epochs_path(out_csv: str | Path) -> Path:
    """``chunk.csv`` → ``chunk.epochs.csv`` (the per-epoch long table of :func:`run_chunk`)."""
    p = Path(out_csv)
    return p.with_name(p.name[:-4] + ".epochs.csv") if p.name.endswith(".csv") else p.with_name(p.name + ".epochs.csv")


def _pct_change(ct: float, bl: float) -> float:
    if not (np.isfinite(ct) and np.isfinite(bl)) or bl == 0:
        return float("nan")
    return 100.0 * (ct - bl) / bl


def _per_run_change(d: pd.DataFrame, metric: str) -> float:
    """100·(mean_r ρ_r − 1), ρ_r = valid-only mean of CT / of BL in run r (the paper's per-run ratio recipe)."""
    v = d[d["valid"].astype(bool)]
    m = v.groupby(["run", "model"])[metric].mean().unstack("model")
    if "CT" not in m or "BL" not in m:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = (m["CT"] / m["BL"]).to_numpy(dtype=float)
    rho = rho[np.isfinite(rho)]
    return 100.0 * (rho.mean() - 1.0) if rho.size else float("nan")


#: columns of a chunk CSV, in order (the parameter columns are the config values that actually ran)
SUMMARY_COLUMNS = [
    "grid", "dataset", "seed", "fidelity", "point", "baseline_key",
    "generator", "tau", "lambda_energy", "max_iter", "lambda_cost", "lambda_adv", "lambda_div", "lambda_reg",
    "burnin", "nce", "epochs", "batch_size", "step_size", "step_size_effective",
    "lambda_energy_eval", "n_ct", "n_bl", "validity_ct", "validity_bl",
    "ip_ct", "ip_bl", "ip_change_pct", "ip_change_runs_pct",
    "cost_ct", "cost_bl", "cost_change_pct", "cost_change_runs_pct",
    "acc_test_ct", "acc_test_bl", "f1_test_ct", "f1_test_bl", "train_seconds", "eval_seconds", "share_mature_last",
    "mean_steps_last",
    "error",
]
EPOCH_COLUMNS = ["grid", "dataset", "seed", "point", "epoch", "share_mature", "mean_steps", "loss", "acc_train",
                 "acc_val", "seconds"]


def summarise_point(ev: pd.DataFrame, base: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per test-time λ_egy from the per-CE frame ``ev`` (models ``CT`` and ``BL``).

    ``ip_*``/``cost_*`` = mean over the *valid* CEs pooled over runs; ``*_change_pct`` = 100·(CT − BL)/BL of those
    means (negative = CT lower, i.e. more plausible / cheaper); ``*_change_runs_pct`` = the per-run-ratio version.
    """
    rows = []
    for lam, d in ev.groupby("lambda_energy", sort=True):
        row = dict(base, lambda_energy_eval=float(lam))
        for m, tag in (("CT", "ct"), ("BL", "bl")):
            dm = d[d["model"] == m]
            valid = dm["valid"].astype(bool)
            row[f"n_{tag}"] = int(len(dm))
            row[f"validity_{tag}"] = float(valid.mean()) if len(dm) else float("nan")
            for metric in ("ip", "cost"):
                row[f"{metric}_{tag}"] = float(dm.loc[valid, metric].mean()) if valid.any() else float("nan")
        for metric in ("ip", "cost"):
            row[f"{metric}_change_pct"] = _pct_change(row[f"{metric}_ct"], row[f"{metric}_bl"])
            row[f"{metric}_change_runs_pct"] = _per_run_change(d, metric)
        rows.append(row)
    return rows


def run_chunk(name: str, dataset: str, points: Sequence[dict[str, Any] | str], baseline_model_path: str | Path,
              out_csv: str | Path | None = None, eval_overrides: dict[str, Any] | None = None, seed: int = 0, *,
              fidelity: str = "reference", fidelity_overrides: dict[str, Any] | None = None,
              data_params: dict[str, Any] | None = None, epochs_override: int | None = None,
              config_overrides: dict[str, Any] | None = None, grid_overrides: dict[str, Any] | None = None,
              apply_step_size: bool | None = None, threads: int = 1, device: str = "cpu",
              save_models_dir: str | Path | None = None, progress: bool = False) -> pd.DataFrame:
    """Train and evaluate a chunk of grid points against the shared BL model; write the chunk's CSVs.

    All points of the chunk train at once as populations (one torch thread by default); then BL is evaluated once
    with :func:`grid_protocol` on the training data (train+val) and each CT model alone with the same protocol and
    seed (common random numbers: every model of a grid, BL included, gets the same draws of label pairs and
    individuals), and :func:`summarise_point` compares the two. BL's numbers are identical in every row of a grid
    (the denominator of every % change). A point whose training diverged gets a row with its ``error``. Returns the
    summary frame (:data:`SUMMARY_COLUMNS`; ``attrs``: ``epochs``, :data:`EPOCH_COLUMNS`, and ``meta``, the sidecar),
    written by :func:`write` to ``out_csv`` when given. ``save_models_dir``: also save each CT model as
    ``<dir>/<point>.pt``.
    """
    import torch

    from ...data import load_dataset
    from ...evaluation.protocol import evaluate_counterfactuals
    from ...evaluation.robustness import macro_f1
    from ...fidelity import resolve_fidelity
    from ...training.pipeline import FailedTraining, load_model, train_population_from_configs
    t_start = time.perf_counter()
    torch.set_num_threads(int(threads))
    pts = [p for p in points if not isinstance(p, str)]
    ids = [p for p in points if isinstance(p, str)]
    if ids:
        pts += find_points(name, ids, grid_overrides)
    if not pts:
        raise ValueError("run_chunk: no points")
    fid = resolve_fidelity(fidelity, fidelity_overrides)
    protocol = grid_protocol(eval_overrides)  # settings first, then the files
    bl = load_model(baseline_model_path, device=device)
    if bl.config["data"]["name"] != dataset:
        raise ValueError(f"baseline {baseline_model_path} was trained on {bl.config['data']['name']!r}, "
                         f"not {dataset!r}")
    if bl.fidelity.to_dict() != fid.to_dict():
        raise ValueError(f"baseline {baseline_model_path}: fidelity {bl.fidelity.mode!r} / switches differ from the "
                         f"requested {fid.mode!r}")
    bl_objective = bl.meta.get("objective_effective", {}).get("name", bl.config["objective"]["name"])
    if bl_objective != "vanilla":
        raise ValueError(f"baseline {baseline_model_path} has objective {bl_objective!r}, expected 'vanilla'")
    data = load_dataset(dataset, fidelity=fid, **(data_params or {}))
    X_eval = np.vstack([data.X_train, data.X_val])
    y_eval = np.concatenate([data.y_train, data.y_val])
    rows, epoch_frames, configs, seconds, failures = [], [], {}, {}, {}
    for point in pts:
        configs[point["id"]] = point_config(
            name, point, dataset, seed, fidelity, epochs_override, fidelity_overrides=fidelity_overrides,
            data_params=data_params, overrides=config_overrides, apply_step_size=apply_step_size, threads=threads,
            device=device)
    # all points of the chunk train at once, as populations (one tensor program per shareable group)
    trained = train_population_from_configs(configs, data=data, progress=progress)
    # IP* is not part of a chunk's summary (summarise_point): left out, the other columns are unchanged
    eval_kw = dict(n_classes=data.n_classes, categorical_groups=data.categorical_groups, dataset=dataset,
                   with_ip_star=False)
    ev_bl = evaluate_counterfactuals({"BL": bl}, X_eval, y_eval, protocol, fid, **eval_kw)
    f1_bl = macro_f1(bl.model, data.X_test, data.y_test, n_classes=data.n_classes)  # appendix Tables 4-6
    iterator: Iterable = pts
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(pts, desc=f"{name} {dataset} evaluation", unit="point")
    for point in iterator:
        ct = trained[point["id"]]
        if not isinstance(ct, FailedTraining) and ct.failure and save_models_dir is not None:
            ct.save(Path(save_models_dir) / f"{point['id']}.pt")  # kept for inspection, marked failed
        if isinstance(ct, FailedTraining) or ct.failure:  # its own row and the sidecar say why; the others go on
            ct = FailedTraining(point["id"], ct.config, ct.error if isinstance(ct, FailedTraining) else ct.failure,
                                ct.log)
            failures[point["id"]] = ct.error
            warnings.warn(f"grid {name} {dataset}: point {point['id']} not evaluated: {ct.error}", RuntimeWarning,
                          stacklevel=2)
            rows.append({"grid": name, "dataset": dataset, "seed": int(seed), "fidelity": fid.mode,
                         "point": point["id"], "baseline_key": baseline_key(name, point), "error": ct.error})
            continue
        if save_models_dir is not None:
            ct.save(Path(save_models_dir) / f"{point['id']}.pt")
        t0 = time.perf_counter()
        ev = pd.concat([ev_bl, evaluate_counterfactuals({"CT": ct}, X_eval, y_eval, protocol, fid, **eval_kw)],
                       ignore_index=True)
        eval_seconds = time.perf_counter() - t0
        c = ct.config
        log = ct.log
        last = log.iloc[-1]
        base = {
            "grid": name, "dataset": dataset, "seed": int(seed), "fidelity": fid.mode, "point": point["id"],
            "baseline_key": baseline_key(name, point), "generator": c["generator"]["type"],
            "tau": c["convergence"]["tau"], "lambda_energy": c["generator"].get("lambda_energy"),
            "max_iter": c["convergence"]["max_iter"], "lambda_cost": c["generator"].get("lambda_cost"),
            "lambda_adv": ct.meta["objective_effective"].get("lambda_adv"),
            "lambda_div": ct.meta["objective_effective"].get("lambda_div"),
            "lambda_reg": ct.meta["objective_effective"].get("lambda_reg"),
            "burnin": c["training"]["burnin"], "nce": c["training"]["nce"], "epochs": c["training"]["epochs"],
            "batch_size": c["training"]["batch_size"], "step_size": point["settings"].get("step_size"),
            "step_size_effective": effective_step(c, fid),
            "acc_test_ct": ct.meta.get("acc_test"), "acc_test_bl": bl.meta.get("acc_test"),
            "f1_test_ct": macro_f1(ct.model, data.X_test, data.y_test, n_classes=data.n_classes), "f1_test_bl": f1_bl,
            "train_seconds": ct.meta.get("train_seconds"), "eval_seconds": eval_seconds,
            "share_mature_last": float(last.get("share_mature", np.nan)),
            "mean_steps_last": float(last.get("mean_steps", np.nan)),
        }
        rows += summarise_point(ev, base)
        ep = log.reindex(columns=["epoch", "share_mature", "mean_steps", "loss", "acc_train", "acc_val", "seconds"])
        epoch_frames.append(ep.assign(grid=name, dataset=dataset, seed=int(seed), point=point["id"]))
        seconds[point["id"]] = {"train": ct.meta.get("train_seconds"), "eval": eval_seconds}
    summary = pd.DataFrame(rows).reindex(columns=SUMMARY_COLUMNS)
    epochs = (pd.concat(epoch_frames, ignore_index=True) if epoch_frames else pd.DataFrame()).reindex(
        columns=EPOCH_COLUMNS)
    sidecar = {
        "kind": "grid_chunk", "grid": name, "note": GRIDS[name]["note"], "dataset": dataset, "seed": int(seed),
        "points": [p["id"] for p in pts], "point_settings": {p["id"]: p["settings"] for p in pts},
        "grid_overrides": grid_overrides or {}, "configs": configs, "protocol": protocol.to_dict(),
        "fidelity": fid.to_dict(),
        "step_size_applied": step_size_applied(apply_step_size, fidelity, fidelity_overrides),
        "baseline": {"path": str(baseline_model_path), "config": bl.config, "acc_test": bl.meta.get("acc_test"),
                     "provenance": bl.meta.get("provenance")},
        "seconds": seconds, "failures": failures, "wall_seconds": time.perf_counter() - t_start,
    }
    summary.attrs.update(epochs=epochs, meta=sidecar)
    if out_csv is not None:
        write(summary, out_csv)
    return summary


def write(summary: pd.DataFrame, out_csv: str | Path) -> Path:
    """A chunk's files: :func:`epochs_path`, ``out_csv + ".json"`` and ``out_csv``, each atomically (the summary last:
    its presence means the chunk is complete)."""
    from ...io import atomic_write_json, atomic_write_text, provenance

    out_csv = Path(out_csv)
    atomic_write_text(epochs_path(out_csv), summary.attrs["epochs"].to_csv(index=False))
    side = {**summary.attrs["meta"], "epochs_csv": epochs_path(out_csv).name, "provenance": provenance()}
    atomic_write_json(out_csv.with_name(out_csv.name + ".json"), side)
    atomic_write_text(out_csv, summary.to_csv(index=False))
    return out_csv


def jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """One job per (grid, dataset, chunk of points sharing a BL model, seed) of a workflow config's ``grids`` and
    ``tune`` blocks (the first training seed: the authors' grids ran one seed each; more training seeds add
    uncertainty to the final models' tables, not to the hyper-parameter choice). ``baseline`` is the BL model file
    that ``ctbench grid baseline`` trains for the chunk's key; ``points`` the chunk's point ids."""
    from ...facts import path as result_path

    res, out = str(config["results"]).rstrip("/"), []
    for section in ("grids", "tune"):
        block = config.get(section) or {}
        for grid in (block.get("names") or []) if block.get("enabled", False) else []:
            overrides = dict((block.get("overrides") or {}).get(grid, {}))
            by_key: dict[str, list[str]] = {}
            for p in grid_points(grid, overrides, f"{section}.overrides.{grid}"):
                by_key.setdefault(baseline_key(grid, p), []).append(p["id"])
            settings = {"fidelity": config["fidelity"], "fidelity_overrides": config.get("fidelity_overrides") or {},
                        "grid_overrides": overrides, "epochs": block.get("epochs"),
                        "evaluation": block.get("evaluation") or {}}
            for d in [d for d in (block.get("datasets") or config["datasets"]) if d in config["datasets"]]:
                for key, ids in by_key.items():
                    for i, ids_c in enumerate(chunks(ids, int(block.get("chunk_size", 9)))):
                        for s in [int(v) for v in config["seeds"][:1]]:
                            bl = result_path("grid_baseline", res, grid=grid, dataset=d, key=key, seed=s)
                            out.append({"grid": grid, "dataset": d, "key": key, "chunk": i, "seed": s,
                                        "section": section, "points": list(ids_c), "baseline": bl,
                                        "data_params": (config.get("data_params") or {}).get(d, {}), **settings})
    return out


def select_jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The tuning stage's ``tune select`` jobs: one per tuned dataset, with the tuning grids' chunks it reads
    (``chunks``: parallel lists of grid, key, chunk, seed) and its ``out`` (``best.json``)."""
    from ...facts import TUNING_GRIDS
    from ...facts import path as result_path

    by_dataset: dict[str, list[dict[str, Any]]] = {}
    for j in jobs(config):
        if j["grid"] in TUNING_GRIDS:
            by_dataset.setdefault(j["dataset"], []).append(j)
    out = []
    for d in sorted(by_dataset):
        chunk_jobs = by_dataset[d]
        out.append({"dataset": d, "out": result_path("tune_best", str(config["results"]).rstrip("/"), dataset=d),
                    "chunks": {k: [j[k] for j in chunk_jobs] for k in ("grid", "key", "chunk", "seed")}})
    return out


def run(job: dict[str, Any]) -> pd.DataFrame:
    """One chunk (:func:`run_chunk` with the job's settings) against the job's ``baseline`` model file."""
    return run_chunk(job["grid"], job["dataset"], job["points"], job["baseline"], None, job.get("evaluation") or None,
                     int(job.get("seed", 0)), fidelity=job.get("fidelity", "reference"),
                     fidelity_overrides=job.get("fidelity_overrides") or None,
                     data_params=job.get("data_params") or None, epochs_override=job.get("epochs"),
                     grid_overrides=job.get("grid_overrides") or None)


def read_chunks(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Concatenate chunk CSVs (summary rows)."""
    frames = [pd.read_csv(p) for p in paths]
    if not frames:
        raise ValueError("no chunk CSVs given")
    return pd.concat(frames, ignore_index=True)

