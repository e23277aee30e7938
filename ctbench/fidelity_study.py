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

All metrics of a run come from that run's own experiment: ``single`` (unconstrained search, τ = 0.95; its Cost is
the appendix's "cost without mutability constraints") or, for ``synthetic_mutability_zero_reg_adv``, ``mutability``
(protected feature immutable in training and search, τ = 0.5 — Table I's Cost column).

Models are trained only where the switch can change them (``SwitchSpec.retrain``): an evaluation-only switch
(``mmd_length_scale``, ``ip_star_per_run``, ``redraw_per_lambda``, ``adult_substring_groups`` — the Adult groups
are only used to snap one-hot groups at evaluation, the arrays are the same) reuses one CT and one BL model for
both settings; a switch that only changes counterfactual training (``ce_step_size``, ``adversarial_label``,
``synthetic_mutability_zero_reg_adv``) reuses the BL model; ``domain_n_sigma`` retrains both (the domain box is part
of each model's constraints). Identical training configs are trained once.

What "paper" means per switch: the text's value where the paper states one (``ce_step_size`` 0.25,
``domain_n_sigma`` 3, ``mmd_length_scale`` 0.5, ``adult_substring_groups`` off); for
``synthetic_mutability_zero_reg_adv`` the default is already the final table's λ's (the published Cost column was
made with them, issue 11), so the alternative is the code's run records (λ_reg = λ_adv = 0); for
``redraw_per_lambda`` the alternative is one draw reused for all λ's; for ``adversarial_label`` the paper and the
final code agree (true label), so the alternative is the 2025 preprints' predicted label; for ``ip_star_per_run`` (a
protocol option of this reproduction) the alternative is IP* pooled over runs, the literal reading of the reference
code (``EvalProtocol.ip_star_per_run``). The columns ``reference_setting``/``paper_setting`` name the two values of
every row.

Output: a CSV (columns :data:`COLUMNS`) and a ``.json`` sidecar (switch spec, the resolved training configs, the
protocol and fidelity switches of each evaluation, model accuracies, timings, provenance), written atomically.
:func:`merge_effects` concatenates per-run CSVs into ``fidelity_effects.csv``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .io import atomic_write_json, atomic_write_text, provenance

__all__ = ["COLUMNS", "METRICS", "SWITCHES", "SwitchSpec", "add_cli", "default_plan", "merge_effects", "run_effect"]

#: required columns of an effect table (the book chapter's contract), then the extra ones this module writes
REQUIRED = ["switch", "dataset", "metric", "reference", "paper", "delta"]
COLUMNS = REQUIRED + ["pm_reference", "pm_paper", "reference_setting", "paper_setting", "experiment", "epochs",
                      "n_runs", "n_individuals", "note"]
METRICS = ("IP", "IP*", "Cost", "validity CT", "accuracy CT")
#: sizes of ``quick`` runs (smoke tests of the workflow)
QUICK = {"epochs": 10, "n_runs": 10, "n_individuals": 50}


@dataclass(frozen=True)
class SwitchSpec:
    """One discrepancy: its two values and what has to be redone when it flips."""

    name: str
    #: ``fidelity`` (a field of :class:`ctbench.fidelity.Fidelity`) or ``protocol`` (of ``EvalProtocol``)
    kind: str
    reference: Any
    paper: Any
    #: models to retrain under the paper value: ``none`` (evaluation only), ``ct`` (CT only) or ``all``
    retrain: str
    #: the experiment whose models and evaluation are used: ``single`` or ``mutability``
    experiment: str
    #: default datasets (the plan of :func:`default_plan`)
    datasets: tuple[str, ...]
    #: item of reference/ct_reference.md
    source: str
    description: str

    def values(self) -> dict[str, Any]:
        return {"reference": self.reference, "paper": self.paper}


SWITCHES: dict[str, SwitchSpec] = {s.name: s for s in (
    SwitchSpec("ce_step_size", "fidelity", 0.1, 0.25, "ct", "single", ("lin_sep", "moons"), "§11.1",
               "step size of the counterfactual search, in training and at evaluation"),
    SwitchSpec("domain_n_sigma", "fidelity", 2.0, 3.0, "all", "single", ("lin_sep", "moons"), "§11.2",
               "domain box μ ± nσ (widened to the observed range), in training and at evaluation"),
    SwitchSpec("mmd_length_scale", "fidelity", 5.0, 0.5, "none", "single", ("lin_sep", "circles", "moons"),
               "§11.15", "Gaussian-kernel length-scale of the IP* MMD"),
    SwitchSpec("adversarial_label", "fidelity", "true", "predicted", "ct", "single", ("over", "moons"), "§11.4",
               "label of the adversarial (nascent) example; paper = final code = true, alternative = the 2025 "
               "preprints' predicted label"),
    SwitchSpec("synthetic_mutability_zero_reg_adv", "fidelity", False, True, "ct", "mutability",
               ("lin_sep", "circles"), "§11.3",
               "synthetic mutability runs trained with the final table's λ_reg, λ_adv (default) vs λ_reg = λ_adv = 0 "
               "(the code's run records)"),
    SwitchSpec("redraw_per_lambda", "fidelity", True, False, "none", "single", ("lin_sep", "moons"), "§7.1",
               "one draw of label pairs and individuals per test-time λ_egy (the authors' one evaluation per λ) vs "
               "one draw reused for all five λ's"),
    SwitchSpec("adult_substring_groups", "fidelity", True, False, "none", "single", ("adult",), "§11.12",
               "Adult one-hot groups by substring match (education_num swallowed) vs the true groups; used to snap "
               "categorical groups at evaluation"),
    SwitchSpec("ip_star_per_run", "protocol", True, False, "none", "single", ("lin_sep", "circles"),
               "§7.3, §11.15", "IP* groups per evaluation run (this reproduction's default) vs pooled over runs "
               "(the literal reading of the reference code)"),
)}


def default_plan() -> list[tuple[str, str]]:
    """``(switch, dataset)`` pairs of the study: synthetic data for most switches, Adult for the grouping switch."""
    return [(name, ds) for name, spec in SWITCHES.items() for ds in spec.datasets]


# --------------------------------------------------------------------------------------------------- helpers
def _fmt(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _family(dataset: str) -> str:
    from .data import available

    info = available().get(dataset)
    if info is None:
        raise ValueError(f"dataset {dataset!r} is not registered; known: {sorted(available())}")
    return info["family"]


def _reduction(df: pd.DataFrame, column: str, dataset: str) -> tuple[float, float]:
    from .evaluation.aggregate import reduction_table

    t = reduction_table(df, column, kind=column, avg_row=False)
    t = t[t["dataset"] == dataset]
    if t.empty:
        return math.nan, math.nan
    return float(t["reduction_pct"].iloc[0]), float(t["pm"].iloc[0])


def _metrics(df: pd.DataFrame, accuracy_ct: float, dataset: str) -> dict[str, tuple[float, float]]:
    """metric → (value, ±) for one evaluation (± only for the reductions)."""
    from .evaluation.aggregate import validity_table

    out = {"IP": _reduction(df, "ip", dataset), "IP*": _reduction(df, "ip_star", dataset),
           "Cost": _reduction(df, "cost", dataset)}
    v = validity_table(df, avg_row=False)
    v = v[(v["dataset"] == dataset) & (v["objective"] == "full")]
    out["validity CT"] = (float(v["validity"].iloc[0]) if len(v) else math.nan, math.nan)
    out["accuracy CT"] = (float(accuracy_ct), math.nan)
    return out


def _rows(switch: str, dataset: str, spec: SwitchSpec | None, values: dict[str, dict[str, tuple[float, float]]] | None,
          *, experiment: str, epochs: int | None, n_runs: int | None, n_individuals: int | None,
          note: str = "") -> pd.DataFrame:
    rows = []
    for metric in METRICS:
        ref, pm_ref = values["reference"][metric] if values else (math.nan, math.nan)
        pap, pm_pap = values["paper"][metric] if values else (math.nan, math.nan)
        rows.append({"switch": switch, "dataset": dataset, "metric": metric, "reference": ref, "paper": pap,
                     "delta": pap - ref, "pm_reference": pm_ref, "pm_paper": pm_pap,
                     "reference_setting": _fmt(spec.reference) if spec else "",
                     "paper_setting": _fmt(spec.paper) if spec else "", "experiment": experiment,
                     "epochs": epochs, "n_runs": n_runs, "n_individuals": n_individuals, "note": note})
    return pd.DataFrame(rows, columns=COLUMNS)


def _write(df: pd.DataFrame, out_csv: str | Path, sidecar: dict[str, Any]) -> Path:
    out = Path(out_csv)
    atomic_write_text(out, df.to_csv(index=False))
    atomic_write_json(out.with_name(out.name + ".json"), sidecar)
    return out


# --------------------------------------------------------------------------------------------------- the study
def run_effect(switch: str, dataset: str | None, out_csv: str | Path, seed: int = 0, epochs: int | None = None,
               n_runs: int | None = None, n_individuals: int | None = None, quick: bool = False,
               lambdas: tuple[float, ...] | None = None, progress: bool = False) -> pd.DataFrame:
    """Measure the effect of flipping ``switch`` from its reference to its paper value on ``dataset``.

    ``dataset`` None takes the switch's first default dataset. ``epochs`` default: the paper's 100 (``quick``: 10);
    ``n_runs`` default 100 (``quick``: 10); ``n_individuals`` default: the family's (250 synthetic, 100 tabular,
    25 vision; ``quick``: 50); ``lambdas`` default: the paper's five test-time λ_egy. Writes ``out_csv`` and
    ``out_csv.json`` and returns the table (one row per metric of :data:`METRICS`). A real dataset whose files are
    missing gives rows of NaN with a ``note`` saying why (the run is skipped, not failed).
    """
    from .api import train_from_config
    from .data import load_dataset
    from .evaluation.protocol import EvalProtocol, evaluate_counterfactuals, performance
    from .fidelity import resolve_fidelity
    from .paper_settings import model_config

    if switch not in SWITCHES:
        raise ValueError(f"fidelity study: unknown switch {switch!r}; choose one of {sorted(SWITCHES)}")
    spec = SWITCHES[switch]
    dataset = dataset or spec.datasets[0]
    family = _family(dataset)
    epochs = int(epochs) if epochs is not None else (QUICK["epochs"] if quick else None)
    n_runs = int(n_runs) if n_runs is not None else (QUICK["n_runs"] if quick else 100)
    protocol_base = EvalProtocol.reference(family, constrained=spec.experiment == "mutability", n_runs=n_runs,
                                           seed=seed)
    if n_individuals is not None or quick:
        protocol_base = replace(protocol_base, n_individuals=int(n_individuals or QUICK["n_individuals"]))
    if lambdas is not None:
        protocol_base = replace(protocol_base, lambdas=tuple(float(v) for v in lambdas))
    meta = {"experiment": spec.experiment, "epochs": epochs if epochs is not None else 100, "n_runs": n_runs,
            "n_individuals": protocol_base.n_individuals}
    side: dict[str, Any] = {"kind": "fidelity_effect", "switch": asdict(spec), "dataset": dataset, "seed": seed,
                            "quick": quick, **meta}
    notes = []
    if switch == "synthetic_mutability_zero_reg_adv" and family != "synthetic":
        notes.append(f"the switch only acts on synthetic data; {dataset} is {family}, so no effect is expected")

    t_start = time.perf_counter()
    data_cache: dict[str, Any] = {}

    def data_for(fid_over: dict[str, Any]):
        key = json.dumps(fid_over, sort_keys=True)
        if key not in data_cache:
            data_cache[key] = load_dataset(dataset, fidelity=resolve_fidelity("reference", fid_over))
        return data_cache[key]

    try:
        data_for({})
    except FileNotFoundError as err:
        first = str(err).splitlines()[0]
        note = f"skipped: data for {dataset} not found ({first})"
        df = _rows(switch, dataset, spec, None, note=note, **meta)
        side.update(skipped=note, provenance=provenance())
        _write(df, out_csv, side)
        return df

    model_cache: dict[str, Any] = {}
    trained_cfgs: dict[str, Any] = {}
    values: dict[str, dict[str, tuple[float, float]]] = {}
    settings_meta: dict[str, Any] = {}
    for setting, value in spec.values().items():
        fid_over = {switch: value} if spec.kind == "fidelity" else {}
        proto_over = {switch: value} if spec.kind == "protocol" else {}
        models, model_keys = {}, {}
        for name, objective in (("CT", "full"), ("BL", "vanilla")):
            retrain = spec.retrain == "all" or (spec.retrain == "ct" and objective == "full")
            train_over = fid_over if retrain else {}
            cfg = model_config(dataset, spec.experiment, objective, seed, fidelity="reference",
                               fidelity_overrides=train_over, epochs=epochs)
            key = json.dumps(cfg, sort_keys=True, default=str)
            if key not in model_cache:
                t0 = time.perf_counter()
                model_cache[key] = train_from_config(cfg, data=data_for(train_over), progress=progress)
                trained_cfgs[key] = {"config": cfg, "seconds": time.perf_counter() - t0,
                                     "acc_test": model_cache[key].meta.get("acc_test"),
                                     "notes": model_cache[key].meta.get("notes")}
            models[name] = model_cache[key]
            model_keys[name] = list(model_cache).index(key)
        data = data_for(fid_over)
        for m in models.values():  # a reused model must have seen exactly the arrays it is evaluated on
            train_data = data_for(m.config["fidelity_overrides"])
            if train_data is not data and not all(np.array_equal(getattr(train_data, a), getattr(data, a))
                                                  for a in ("X_train", "y_train", "X_test", "y_test")):
                raise RuntimeError(f"{switch}: a reused model was trained on other data than it is evaluated on")
        fid = resolve_fidelity("reference", fid_over)
        protocol = replace(protocol_base, **proto_over)
        t0 = time.perf_counter()
        df = evaluate_counterfactuals(models, data.X_test, data.y_test, protocol, fid, n_classes=data.n_classes,
                                      categorical_groups=data.categorical_groups, dataset=dataset,
                                      progress=progress)
        perf = performance(models, data.X_test, data.y_test, data.n_classes).set_index("model")
        values[setting] = _metrics(df, perf.loc["CT", "accuracy"], dataset)
        settings_meta[setting] = {
            "value": value, "fidelity": fid.to_dict(), "protocol": protocol.to_dict(), "model_index": model_keys,
            "performance": perf.reset_index().to_dict(orient="records"), "eval_seconds": time.perf_counter() - t0,
            "n_rows": len(df), "share_valid": df.groupby("model")["valid"].mean().to_dict()}
    if spec.retrain == "none":
        notes.append("evaluation-only switch: the same CT and BL models are evaluated under both settings")
    elif spec.retrain == "ct":
        notes.append("the BL model is shared by both settings (the switch does not change conventional training)")
    out = _rows(switch, dataset, spec, values, note="; ".join(notes), **meta)
    side.update(settings=settings_meta, models=list(trained_cfgs.values()), n_models_trained=len(trained_cfgs),
                seconds=time.perf_counter() - t_start, provenance=provenance())
    _write(out, out_csv, side)
    return out


def merge_effects(paths: list[str | Path], out: str | Path) -> pd.DataFrame:
    """Concatenate effect CSVs into one table (e.g. ``fidelity_effects.csv``), checking every input first.

    Each input must have the :data:`REQUIRED` columns, metrics from :data:`METRICS` and ``delta == paper −
    reference`` (where both are finite); a (switch, dataset, metric) may appear only once over all inputs.
    """
    if not paths:
        raise ValueError("fidelity-effects-merge: no input files")
    frames = []
    for p in paths:
        df = pd.read_csv(p)
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


# --------------------------------------------------------------------------------------------------- CLI
def _cmd_effect(args) -> int:
    df = run_effect(args.switch, args.dataset, args.out, seed=args.seed, epochs=args.epochs, n_runs=args.n_runs,
                    n_individuals=args.n_individuals, quick=args.quick)
    with pd.option_context("display.width", 120):
        print(df[REQUIRED].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if df["note"].astype(str).str.startswith("skipped").any():
        print(df["note"].iloc[0])
    return 0


def _cmd_merge(args) -> int:
    df = merge_effects(args.inputs, args.out)
    print(f"wrote {args.out}: {len(df)} rows, {df['switch'].nunique()} switches")
    return 0


def add_cli(subparsers) -> None:
    """Register ``ctbench fidelity-effect`` and ``ctbench fidelity-effects-merge``."""
    e = subparsers.add_parser("fidelity-effect", help="effect of one fidelity switch (reference vs paper value)")
    e.add_argument("--switch", required=True, choices=sorted(SWITCHES))
    e.add_argument("--dataset", help="dataset (default: the switch's first default dataset)")
    e.add_argument("--out", required=True, help="CSV (a .json sidecar is written next to it)")
    e.add_argument("--quick", action="store_true",
                   help=f"small sizes: {QUICK['epochs']} epochs, {QUICK['n_runs']} runs, "
                        f"{QUICK['n_individuals']} individuals")
    e.add_argument("--epochs", type=int, help="training epochs (default: the paper's 100)")
    e.add_argument("--n-runs", dest="n_runs", type=int, help="evaluation runs (default 100)")
    e.add_argument("--n-individuals", dest="n_individuals", type=int, help="individuals per run (default: family's)")
    e.add_argument("--seed", type=int, default=0)
    e.set_defaults(func=_cmd_effect)

    m = subparsers.add_parser("fidelity-effects-merge", help="concatenate fidelity-effect CSVs (checked)")
    m.add_argument("inputs", nargs="+", help="CSV files of ctbench fidelity-effect")
    m.add_argument("--out", required=True, help="merged CSV, e.g. fidelity_effects.csv")
    m.set_defaults(func=_cmd_merge)

