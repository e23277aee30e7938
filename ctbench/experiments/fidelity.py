"""Measured effect of each place where the authors' code and the paper disagree (book chapter "Where code and paper
disagree").

For one switch and one dataset, :func:`run_effect` trains the CT and BL models of the paper's final setting
(:func:`ctbench.paper_settings.model_config`) under the **reference** value of the switch and under the
**paper** value (everything else at the ``reference`` fidelity mode), evaluates each pair with the paper's protocol
(:class:`ctbench.evaluation.protocol.EvalProtocol`, sizes reducible) and reports, per metric, the value under each
setting and ``delta = paper − reference``:

* ``IP``, ``IP*``, ``Cost``: the % reduction CT vs BL of Table I
  (:func:`ctbench.evaluation.aggregate.reduction_table`), with its ± (100·std of the per-run ratios) in
  ``pm_reference``/``pm_paper``;
* ``validity CT``: the CT model's mean validity (Table III's recipe,
  :func:`~ctbench.evaluation.aggregate.validity_table`);
* ``accuracy CT``: the CT model's test accuracy.

Metrics come from the switch's experiment: ``single`` (τ = 0.95; its Cost is the appendix's unconstrained cost) or,
for ``synthetic_mutability_zero_reg_adv``, ``mutability`` (τ = 0.5, protected feature immutable: Table I's Cost).

Every setting is measured on the same training seeds as Table 1 (``seeds``; the workflow passes the profile's), its
values by Table 1's recipe over all (seed, run) pairs with the seed-level interval beside
(:mod:`ctbench.evaluation.seeds`). Where the workflow has trained a model with exactly the config a setting needs, the
study loads it (``reuse``), so the reference column is Table 1's own cell; where the workflow has also evaluated
those models (``reference_evals``: Table 1's evaluation files), the reference setting is read from those files
instead of searched again (:mod:`.fidelity_reference`, the same rows bit for bit; issue 21), and
``ip_star_per_run``'s paper setting is read off the same rows (:data:`DERIVED`).

Models are trained only where the switch can change them (``SwitchSpec.retrain``): an evaluation-only switch
(``mmd_length_scale``, ``ip_star_per_run``, ``redraw_per_lambda``, ``adult_substring_groups`` — the Adult groups
are only used to snap one-hot groups at evaluation, the arrays are the same) reuses one CT and one BL model for
both settings; a switch that only changes counterfactual training (``ce_step_size``, ``adversarial_label``,
``synthetic_mutability_zero_reg_adv``) reuses the BL model; ``domain_n_sigma`` retrains both (the domain box is part
of each model's constraints). Identical training configs are trained once.

What "paper" means per switch: :mod:`ctbench.experiments.fidelity_switches`. Output: a CSV (columns
:data:`COLUMNS`) and a
``.json`` sidecar (switch spec, training configs, each evaluation's protocol and switches, accuracies, timings,
provenance), written atomically; :func:`merge_effects` concatenates them into ``fidelity_effects.csv``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..facts import EVALUATION
from ..io import atomic_write_text, provenance, write_frame
from .fidelity_reference import derive_ip_star_per_run, read_reference
from .fidelity_switches import SWITCHES, SwitchSpec, default_plan

__all__ = ["COLUMNS", "METRICS", "SWITCHES", "SwitchSpec", "default_plan", "jobs", "merge_effects", "run", "run_effect",
           "write"]

#: required columns of an effect table (the book chapter's contract), then the extra ones this module writes
REQUIRED = ["switch", "dataset", "metric", "reference", "paper", "delta"]
#: per setting (``_reference``/``_paper``): the paper's ± and star over all (seed, run) pairs, and the seed-level
#: t-interval over training seeds (:func:`ctbench.evaluation.seeds.seed_level`)
STAT_COLUMNS = [f"{c}_{s}" for s in ("reference", "paper")
                for c in ("pm", "significant", "seed_lb", "seed_ub", "seed_significant", "seed_values")]
COLUMNS = REQUIRED + STAT_COLUMNS + ["reference_setting", "paper_setting", "experiment", "epochs", "n_runs",
                                     "n_individuals", "n_seeds", "seeds", "note"]
METRICS = ("IP", "IP*", "Cost", "validity CT", "accuracy CT")
#: switches whose paper setting is read off the reference setting's rows (same models, same search; issue 21):
#: switch → (reference frame, paper value) → the paper setting's frame
DERIVED = {"ip_star_per_run": lambda frame, value: derive_ip_star_per_run(frame, bool(value))}
#: sizes of ``quick`` runs (smoke tests of the workflow)
QUICK = {"epochs": 10, "n_runs": 10, "n_individuals": 50}


# --------------------------------------------------------------------------------------------------- helpers
def _fmt(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)




_NO_STATS = {"pm": math.nan, "significant": pd.NA, "seed_lb": math.nan, "seed_ub": math.nan,
             "seed_significant": pd.NA, "seed_values": ""}


def _reduction(df: pd.DataFrame, column: str, dataset: str) -> tuple[float, dict[str, Any]]:
    """Table I's reduction over all (seed, run) pairs, with its ±, star and the seed-level interval."""
    from ..evaluation.aggregate import reduction_table
    from ..evaluation.seeds import pool_seeds, seed_level

    t = reduction_table(pool_seeds(df), column, kind=column, avg_row=False)
    t = t[t["dataset"] == dataset]
    if t.empty:
        return math.nan, dict(_NO_STATS)
    r = t.iloc[0]
    stats = {"pm": float(r["pm"]), "significant": r["significant"]}
    sl = seed_level(df, column, kind=column)
    sl = sl[sl["dataset"] == dataset]
    if len(sl):
        q = sl.iloc[0]
        stats.update(seed_lb=float(q["seed_lb"]), seed_ub=float(q["seed_ub"]),
                     seed_significant=q["seed_significant"], seed_values=q["seed_values"])
    return float(r["reduction_pct"]), {**_NO_STATS, **stats}


def _metrics(df: pd.DataFrame, accuracy_ct: float, dataset: str) -> dict[str, tuple[float, dict[str, Any]]]:
    """metric → (value, statistics) for one setting's evaluation over all training seeds (statistics only for the
    reductions). The recipes copy and filter the frame per metric and seed, so they get only the columns they read
    (half their CPU on the paper's frames; the same rows in the same order, so the same values)."""
    from ..evaluation.aggregate import COLS, validity_table

    read = (COLS.dataset, COLS.run, COLS.lam, COLS.objective, COLS.valid, "seed", "ip", "ip_star", "cost")
    df = df[[c for c in read if c in df.columns]]
    out = {"IP": _reduction(df, "ip", dataset), "IP*": _reduction(df, "ip_star", dataset),
           "Cost": _reduction(df, "cost", dataset)}
    v = validity_table(df, avg_row=False)
    v = v[(v["dataset"] == dataset) & (v["objective"] == "full")]
    out["validity CT"] = (float(v["validity"].iloc[0]) if len(v) else math.nan, dict(_NO_STATS))
    out["accuracy CT"] = (float(accuracy_ct), dict(_NO_STATS))
    return out


def _rows(switch: str, dataset: str, spec: SwitchSpec | None,
          values: dict[str, dict[str, tuple[float, dict[str, Any]]]] | None, *, experiment: str,
          epochs: int | None, n_runs: int | None, n_individuals: int | None, seeds: tuple[int, ...],
          note: str = "") -> pd.DataFrame:
    rows = []
    for metric in METRICS:
        ref, st_ref = values["reference"][metric] if values else (math.nan, dict(_NO_STATS))
        pap, st_pap = values["paper"][metric] if values else (math.nan, dict(_NO_STATS))
        row = {"switch": switch, "dataset": dataset, "metric": metric, "reference": ref, "paper": pap,
               "delta": pap - ref}
        for setting, st in (("reference", st_ref), ("paper", st_pap)):
            row.update({f"{k}_{setting}": v for k, v in st.items()})
        row.update({"reference_setting": _fmt(spec.reference) if spec else "",
                    "paper_setting": _fmt(spec.paper) if spec else "", "experiment": experiment,
                    "epochs": epochs, "n_runs": n_runs, "n_individuals": n_individuals, "n_seeds": len(seeds),
                    "seeds": " ".join(map(str, seeds)), "note": note})
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def _objective(cfg: dict[str, Any]) -> str:
    obj = cfg.get("objective")
    return str(obj.get("name") if isinstance(obj, dict) else obj)


def _reuse_models(configs: dict[str, dict[str, Any]], reuse: dict[str, str | Path]) -> tuple[dict, dict[str, str]]:
    """Load the given saved models whose resolved config equals one the study would train (key → model)."""
    from ..training.pipeline import check_train_config, load_model

    models, used = {}, {}
    for key, cfg in configs.items():
        name = f"{_objective(cfg)}_s{cfg.get('seed')}"
        if name not in reuse:
            continue
        m = load_model(reuse[name])
        want = json.dumps(check_train_config(cfg)[0], sort_keys=True, default=str)
        if json.dumps(check_train_config(m.config)[0], sort_keys=True, default=str) == want:
            models[key], used[name] = m, str(reuse[name])
    return models, used


def write(df: pd.DataFrame, out_csv: str | Path) -> Path:
    """``out_csv`` and its ``.json`` sidecar (``df.attrs["meta"]``), each atomically
    (:func:`ctbench.io.write_frame`)."""
    return write_frame(df, out_csv, df.attrs["meta"])


def _done(df: pd.DataFrame, side: dict[str, Any], out_csv: str | Path | None) -> pd.DataFrame:
    df.attrs["meta"] = side
    if out_csv is not None:
        write(df, out_csv)
    return df


def jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """One job per (switch, dataset) of a workflow config's ``fidelity_study`` block, limited to the config's
    ``datasets``. ``seeds``: ``fidelity_study.seeds``, or null = the profile's seeds, so each switch's effect carries
    the same seed-level uncertainty as Table 1. ``reuse`` (``<objective>_s<seed>`` → path): the final models of the
    switch's experiment that this profile trains; the study loads one only where its config is exactly the one it
    would train. ``fidelity_overrides``: the run's, which the study keeps for every switch but the one it varies.
    ``reference_evals`` (seed → file): the profile's evaluation of exactly those final models, which the study reads
    for its reference setting (:func:`_reference_evals`)."""
    from .final_training import members, model_path

    study = config.get("fidelity_study") or {}
    if not study.get("enabled", False):
        return []
    switches, seeds = study.get("switches"), study.get("seeds") or config.get("seeds") or [0]
    seeds = [int(s) for s in seeds]
    finals = {model_path(config, f, d, o, s) for d in config.get("datasets", []) for f, o, s in members(config)}
    out = []
    for sw, ds in default_plan():
        if (switches is not None and sw not in switches) or ds not in config.get("datasets", []):
            continue
        reuse = {f"{o}_s{s}": p for s in seeds for o in ("full", "vanilla")
                 if (p := model_path(config, SWITCHES[sw].experiment, ds, o, s)) in finals}
        out.append({"switch": sw, "dataset": ds, "seeds": seeds, "quick": bool(study.get("quick", False)),
                    "reuse": reuse, "fidelity_overrides": dict(config.get("fidelity_overrides") or {}),
                    "reference_evals": _reference_evals(config, SWITCHES[sw].experiment, ds, seeds, reuse)})
    return out


def _reference_evals(config: dict[str, Any], experiment: str, dataset: str, seeds: list[int],
                     reuse: dict[str, str]) -> dict[str, str]:
    """Training seed → the workflow's evaluation file of exactly the reused final CT and BL of that seed (Table 1's
    evaluation, :mod:`.fidelity_reference`); seeds without one are evaluated by the study."""
    from ..facts import path as result_path
    from .evaluation import jobs as evaluation_jobs

    evals = {(j["experiment"], j["dataset"], j["seed"]): j for j in evaluation_jobs(config)
             if j["dataset"] == dataset and j["experiment"] == experiment}
    out = {}
    for s in seeds:
        j = evals.get((experiment, dataset, s))
        if j and j["models"] == {o: reuse.get(f"{o}_s{s}") for o in ("full", "vanilla")}:
            out[str(s)] = result_path("evaluation", str(config["results"]).rstrip("/"), experiment=experiment,
                                      dataset=dataset, seed=s)
    return out


def run(job: dict[str, Any]) -> pd.DataFrame:
    """One effect (:func:`run_effect` with the job's settings); ``df.attrs["meta"]`` is the sidecar."""
    kw = {k: v for k, v in job.items() if k not in ("switch", "dataset")}
    return run_effect(job["switch"], job["dataset"], **kw)


# --------------------------------------------------------------------------------------------------- the study
def run_effect(switch: str, dataset: str | None, out_csv: str | Path | None = None, seed: int = 0,
               epochs: int | None = None,
               n_runs: int | None = None, n_individuals: int | None = None, quick: bool = False,
               lambdas: tuple[float, ...] | None = None, progress: bool = False,
               seeds: tuple[int, ...] | list[int] | None = None,
               reuse: dict[str, str | Path] | None = None,
               fidelity_overrides: dict[str, Any] | None = None,
               reference_evals: dict[int, str | Path] | None = None) -> pd.DataFrame:
    """Measure the effect of flipping ``switch`` from its reference to its paper value on ``dataset``.

    The study runs in the reference mode with the run's ``fidelity_overrides`` (the workflow passes its own) for every
    other switch, so its models and data are those of the run's Table 1; the studied switch takes its reference value
    in one setting and its paper value in the other, whatever the overrides say of it.

    ``seeds`` are the training seeds (default: ``(seed,)``); every model is trained once per seed (all of them in one
    population call) and each setting's metrics pool the evaluation runs of all seeds, as Table 1 does, with the
    seed-level interval beside. ``seed`` is the evaluation protocol's seed (the same for every training seed, as in
    the workflow's evaluation). ``reuse`` maps ``"<objective>_s<seed>"`` to a saved model (the workflow passes its
    final models): a model the study would train with exactly that resolved config is loaded instead, so the reference
    column of an evaluation-only switch is Table 1's own cell; a model whose config differs is trained (the sidecar
    says which were reused). ``dataset`` None takes the switch's first default dataset. ``epochs`` default: the
    paper's 100 (``quick``: 10); ``n_runs`` default :data:`ctbench.facts.EVALUATION`'s (``quick``: 10);
    ``n_individuals`` default: the family's (``FAMILY_FACTS``; ``quick``: 50); ``lambdas`` default: the paper's
    test-time λ_egy (``EVALUATION``). ``reference_evals`` (training seed → ``ctbench evaluate`` file; the workflow
    passes Table 1's): the reference setting of that seed is read from the file instead of evaluated, where its
    models are the reused final models and the file is their evaluation under this protocol and fidelity
    (:mod:`.fidelity_reference`; the same rows, bit for bit); the sidecar's ``reference_evaluations`` says per seed
    which file was read or why it was not.
    Returns the table (one row per metric of :data:`METRICS`; ``attrs["meta"]``: the sidecar), written to
    ``out_csv`` and ``out_csv.json`` when given. A real
    dataset whose files are missing gives rows of NaN with a ``note`` saying why (the run is skipped, not failed).
    """
    from ..data import load_dataset
    from ..data.registry import family as dataset_family
    from ..evaluation.protocol import EvalProtocol, evaluate_counterfactuals, performance
    from ..fidelity import check_switches, resolve_fidelity
    from ..paper_settings import COMMON, model_config
    from ..training.pipeline import FailedTraining, train_population_from_configs

    if switch not in SWITCHES:
        raise ValueError(f"fidelity study: unknown switch {switch!r}; choose one of {sorted(SWITCHES)}")
    seeds = tuple(int(s) for s in (seeds if seeds else (seed,)))
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"fidelity study: training seeds must be distinct, got {list(seeds)}")
    spec = SWITCHES[switch]
    dataset = dataset or spec.datasets[0]
    family = dataset_family(dataset)
    epochs = int(epochs) if epochs is not None else (QUICK["epochs"] if quick else None)
    n_runs = int(n_runs) if n_runs is not None else (QUICK["n_runs"] if quick else EVALUATION["n_runs"])
    protocol_base = EvalProtocol.reference(family, constrained=spec.experiment == "mutability", n_runs=n_runs,
                                           seed=seed)
    if n_individuals is not None or quick:
        protocol_base = replace(protocol_base, n_individuals=int(n_individuals or QUICK["n_individuals"]))
    if lambdas is not None:
        protocol_base = replace(protocol_base, lambdas=tuple(float(v) for v in lambdas))
    meta = {"experiment": spec.experiment, "epochs": epochs if epochs is not None else COMMON["training"]["epochs"],
            "n_runs": n_runs,
            "n_individuals": protocol_base.n_individuals, "seeds": seeds}
    side: dict[str, Any] = {"kind": "fidelity_effect", "switch": asdict(spec), "dataset": dataset, "seed": seed,
                            "training_seeds": list(seeds), "quick": quick, **{k: v for k, v in meta.items()
                                                                              if k != "seeds"}}
    notes = []
    if switch == "synthetic_mutability_zero_reg_adv" and family != "synthetic":
        notes.append(f"the switch only acts on synthetic data; {dataset} is {family}, so no effect is expected")

    # the run's other switches, in both settings (an override of the studied switch itself is what the study varies)
    base = {k: v for k, v in check_switches(fidelity_overrides or {}).items() if k != switch}
    side["fidelity_overrides"] = base
    t_start = time.perf_counter()
    data_cache: dict[str, Any] = {}

    def data_for(fid_over: dict[str, Any]):
        key = json.dumps(fid_over, sort_keys=True)
        if key not in data_cache:
            data_cache[key] = load_dataset(dataset, fidelity=resolve_fidelity("reference", fid_over))
        return data_cache[key]

    try:
        data_for(base)
    except FileNotFoundError as err:
        first = str(err).splitlines()[0]
        note = f"skipped: data for {dataset} not found ({first})"
        df = _rows(switch, dataset, spec, None, note=note, **meta)
        side.update(skipped=note, provenance=provenance())
        return _done(df, side, out_csv)

    # every (setting, model, seed) → a training config; identical configs (a model the switch cannot change) train once
    configs: dict[str, dict[str, Any]] = {}
    plan: dict[tuple[str, str, int], str] = {}
    for setting, value in spec.values().items():
        # the reference value is the default: trained with no override, as the workflow's final models are
        fid_over = {**base, switch: value} if spec.kind == "fidelity" and setting == "paper" else dict(base)
        for s in seeds:
            for name, objective in (("CT", "full"), ("BL", "vanilla")):
                retrain = spec.retrain == "all" or (spec.retrain == "ct" and objective == "full")
                # one BL per dataset and seed serves every experiment, as in the workflow (models/baseline/): a
                # vanilla model never searches counterfactuals in training, and the evaluation constrains the search
                exp = "single" if objective == "vanilla" else spec.experiment
                cfg = model_config(dataset, exp, objective, s, fidelity="reference",
                                   fidelity_overrides=fid_over if retrain else dict(base), epochs=epochs)
                key = json.dumps(cfg, sort_keys=True, default=str)
                configs.setdefault(key, cfg)
                plan[(setting, name, s)] = key
    keys = list(configs)
    by_key, reused = _reuse_models(configs, reuse or {})
    reused_keys = set(by_key)
    t0 = time.perf_counter()
    todo = [k for k in keys if k not in by_key]
    trained = train_population_from_configs({str(keys.index(k)): configs[k] for k in todo}, progress=progress) \
        if todo else {}
    failed = [(keys[int(n)], m) for n, m in trained.items() if isinstance(m, FailedTraining)]
    if failed:
        cfg = configs[failed[0][0]]
        raise RuntimeError(f"fidelity study {switch}/{dataset}: training failed for {len(failed)} model(s), e.g. "
                           f"objective {_objective(cfg)} seed {cfg.get('seed')}: {failed[0][1].error}")
    by_key.update({keys[int(n)]: m for n, m in trained.items()})
    train_seconds = time.perf_counter() - t0

    values: dict[str, dict[str, tuple[float, dict[str, Any]]]] = {}
    settings_meta: dict[str, Any] = {}
    reference_evals = {int(k): v for k, v in (reference_evals or {}).items()}
    read_from: dict[str, str] = {}  # training seed → the evaluation file read, or why it was not
    derived: tuple[list, list, list] = ([], [], [])  # the last setting's (frames, accuracies, performance)
    for setting, value in spec.values().items():
        fid_over = {**base, switch: value} if spec.kind == "fidelity" else dict(base)
        proto_over = {switch: value} if spec.kind == "protocol" else {}
        data = data_for(fid_over)
        fid = resolve_fidelity("reference", fid_over)
        protocol = replace(protocol_base, **proto_over)
        frames, accs, perfs = [], [], []
        t0 = time.perf_counter()
        from_rows = setting == "paper" and spec.retrain == "none" and switch in DERIVED and bool(derived[0])
        if from_rows:
            # the same models and search; only what is read off the rows differs (e.g. the IP* column chosen)
            ref_frames, accs, perfs = derived
            frames = [DERIVED[switch](f, value) for f in ref_frames]
        for s in seeds if not from_rows else ():
            # named as in the workflow's evaluation ("full", "vanilla"): the protocol keys its draws by model name,
            # so an evaluation-only switch's reference value is the Table-1 value of the same models
            models = {obj: by_key[plan[(setting, name, s)]] for name, obj in (("CT", "full"), ("BL", "vanilla"))}
            for m in models.values():  # a reused model must have seen exactly the arrays it is evaluated on
                train_data = data_for(m.config["fidelity_overrides"])
                if train_data is not data and not all(np.array_equal(getattr(train_data, a), getattr(data, a))
                                                      for a in ("X_train", "y_train", "X_test", "y_test")):
                    raise RuntimeError(f"{switch}: a reused model was trained on other data than it is evaluated on")
            read = None
            if setting == "reference" and s in reference_evals:  # Table 1's own evaluation of these models
                from_final = all(plan[(setting, name, s)] in reused_keys for name in ("CT", "BL"))
                read = read_reference(reference_evals[s], models, protocol, fid, dataset) if from_final else \
                    f"{reference_evals[s]}: the reference models of seed {s} are not the final models it evaluated"
                read_from[str(s)] = read if isinstance(read, str) else str(reference_evals[s])
            if isinstance(read, tuple):
                df, records = read
                frames.append(df.assign(seed=s))
                accs.append(float(next(r["accuracy"] for r in records if r["model"] == "full")))
                perfs.append([{**r, "seed": s} for r in records])
                continue
            # constrained: every model under the dataset's protected features, as `ctbench evaluate --constrained`
            df = evaluate_counterfactuals(models, data.X_test, data.y_test, protocol, fid, n_classes=data.n_classes,
                                          categorical_groups=data.categorical_groups, dataset=dataset,
                                          mutability=list(data.protected) if protocol.constrained else None,
                                          progress=progress)
            frames.append(df.assign(seed=s))
            perf = performance(models, data.X_test, data.y_test, data.n_classes).set_index("model")
            accs.append(float(perf.loc["full", "accuracy"]))
            perfs.append(perf.reset_index().assign(seed=s).to_dict(orient="records"))
        if switch in DERIVED:  # kept for the next setting only where it is read off these rows
            derived = (frames, accs, perfs)
        df = pd.concat(frames, ignore_index=True)
        values[setting] = _metrics(df, float(np.mean(accs)), dataset)
        settings_meta[setting] = {
            "value": value, "fidelity": fid.to_dict(), "protocol": protocol.to_dict(),
            "models": {f"{name}_s{s}": keys.index(plan[(setting, name, s)]) for s in seeds for name in ("CT", "BL")},
            "performance": perfs, "eval_seconds": time.perf_counter() - t0, "n_rows": len(df),
            "share_valid": df.groupby("model")["valid"].mean().to_dict(),
            **({"derived_from": "reference"} if from_rows else {})}
    if spec.retrain == "none":
        notes.append("evaluation-only switch: the same CT and BL models are evaluated under both settings")
    elif spec.retrain == "ct":
        notes.append("the BL models are shared by both settings (the switch does not change conventional training)")
    if reused:
        notes.append(f"{len(reused)} model(s) are the workflow's final models ({', '.join(sorted(reused))})")
    if len(seeds) > 1:
        notes.append(f"{len(seeds)} training seeds; values pool all (seed, run) pairs as Table 1 does")
    out = _rows(switch, dataset, spec, values, note="; ".join(notes), **meta)
    side.update(settings=settings_meta,
                models=[{"config": configs[k], "acc_test": by_key[k].meta.get("acc_test"),
                         "notes": by_key[k].meta.get("notes")} for k in keys],
                n_models_trained=len(keys) - len(reused), reused=reused, train_seconds=train_seconds,
                reference_evaluations=read_from,
                seconds=time.perf_counter() - t_start,
                provenance=provenance())
    return _done(out, side, out_csv)


def merge_effects(paths: list[str | Path], out: str | Path) -> pd.DataFrame:
    """Concatenate effect CSVs into one table (e.g. ``fidelity_effects.csv``), checking every input first.

    Each input must have the :data:`REQUIRED` columns, metrics from :data:`METRICS` and ``delta == paper −
    reference`` (where both are finite); a (switch, dataset, metric) may appear only once over all inputs.
    """
    if not paths:
        raise ValueError("fidelity-effects-merge: no input files")
    frames = []
    for p in paths:
        df = pd.read_csv(p, dtype={"reference_setting": str, "paper_setting": str})  # "true" stays "true"
        missing = [c for c in REQUIRED if c not in df.columns]
        if missing:
            raise ValueError(f"{p}: missing column(s) {missing}; an effect table needs {REQUIRED}")
        bad = sorted(set(df["metric"]) - set(METRICS))
        if bad:
            raise ValueError(f"{p}: unknown metric(s) {bad}; expected {list(METRICS)}")
        ref, pap, dlt = (pd.to_numeric(df[c], errors="coerce").to_numpy(float) for c in ("reference", "paper",
                                                                                          "delta"))
        both = np.isfinite(ref) & np.isfinite(pap)
        if not np.allclose(dlt[both], pap[both] - ref[both], rtol=1e-9, atol=1e-9):
            raise ValueError(f"{p}: delta is not paper − reference")
        frames.append(df)
    merged = pd.concat(frames, ignore_index=True, sort=False)
    dup = merged.duplicated(["switch", "dataset", "metric"], keep=False)
    if dup.any():
        keys = merged.loc[dup, ["switch", "dataset", "metric"]].drop_duplicates().values.tolist()
        raise ValueError(f"fidelity-effects-merge: rows given more than once: {keys[:5]}")
    cols = [c for c in COLUMNS if c in merged.columns] + [c for c in merged.columns if c not in COLUMNS]
    merged = merged[cols]
    atomic_write_text(out, merged.to_csv(index=False))
    return merged
