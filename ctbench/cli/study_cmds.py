"""``ctbench fidelity-effect``, ``fidelity-effects-merge``, ``consistency`` and ``prop31``: the studies of
:mod:`ctbench.experiments`, run and written here (the figures of ``prop31`` drawn by
:mod:`ctbench.report.figures.prop31_figures`)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..io import atomic_write_text
from ..runtime import keep_freed_memory
from .args import json_object


def _cmd_effect(args) -> int:
    keep_freed_memory()  # trains and evaluates (issue 21)
    from ..experiments.evaluation import parse_models
    from ..experiments.fidelity import REQUIRED, run_effect, write

    overrides = json_object(args.fidelity_overrides, "--fidelity-overrides")
    df = run_effect(args.switch, args.dataset, seed=args.seed, epochs=args.epochs, n_runs=args.n_runs,
                    n_individuals=args.n_individuals, quick=args.quick, seeds=args.seeds,
                    reuse=dict(parse_models(args.reuse)) if args.reuse else None, fidelity_overrides=overrides,
                    reference_evals=_seed_paths(args.reference_eval or []))
    write(df, args.out)
    with pd.option_context("display.width", 120):
        print(df[REQUIRED].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if df["note"].astype(str).str.startswith("skipped").any():
        print(df["note"].iloc[0])
    return 0


def _seed_paths(specs: list[str]) -> dict[int, str]:
    """``["0=a.parquet"]`` → ``{0: "a.parquet"}`` (``--reference-eval``)."""
    out: dict[int, str] = {}
    for spec in specs:
        seed, sep, path = spec.partition("=")
        if not sep or not seed.strip().lstrip("-").isdigit() or not path:
            raise SystemExit(f"fidelity-effect: --reference-eval {spec!r}: give SEED=PATH, e.g. "
                             "0=eval/single/lin_sep_s0.parquet")
        if int(seed) in out:
            raise SystemExit(f"fidelity-effect: --reference-eval: seed {int(seed)} given twice")
        out[int(seed)] = path
    return out


def _cmd_merge(args) -> int:
    from ..experiments.fidelity import merge_effects

    df = merge_effects(args.inputs, args.out)
    print(f"wrote {args.out}: {len(df)} rows, {df['switch'].nunique()} switches")
    return 0


def _cmd_consistency(args) -> int:
    keep_freed_memory()
    from ..experiments.consistency import run, write

    settings = json.loads(args.settings) if args.settings else {}
    job = {"part": args.part, "dataset": args.dataset, "seed": args.seed, "settings": settings}
    if args.shard is not None:
        from ..experiments.consistency import train_shard
        from ..experiments.consistency_shards import parse_shard, write_shard

        if args.retrained:
            raise SystemExit("consistency: --shard trains a shard, --retrained merges shards; give one of them")
        shard = train_shard(job, *parse_shard(args.shard), progress=not args.quiet)
        write_shard(shard, args.out)
        if "skipped" in shard:
            print(shard["skipped"])
            return 0
        print(f"wrote {args.out}: shard {args.shard}, {len(shard['names'])} retrained models "
              f"({sum(e is not None for e in shard['errors'])} failed), CPU seconds {shard['cpu_seconds']:.1f}")
        return 0
    df = run(job, progress=not args.quiet, retrained=args.retrained)
    meta = df.attrs["meta"]
    write(df, args.out)
    if "skipped" in meta:
        print(meta["skipped"])
        return 0
    summ = df[df["valid"]].groupby(["model", "method"], sort=False)[["iv_loo", "iv_rs", "cost_l2"]].mean()
    with pd.option_context("display.width", 140):
        print(summ.to_string(float_format=lambda v: f"{v:.3f}"))
    print(f"CPU seconds: {meta['cpu_seconds']['total']:.1f} (train {meta['cpu_seconds']['train']:.1f})")
    return 0


def write_prop31(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Path]:
    """The files of :func:`ctbench.experiments.prop31.check`: four CSVs and the figures ``prop31_paths`` and
    ``prop31_sensitivity`` (PNG and PDF), each written atomically; returns the main paths by name."""
    from ..report.figures.prop31_figures import plot_paths, plot_sensitivity

    x = dict(table.attrs)
    table.attrs.clear()
    out = Path(out_dir)

    def csv(name: str, frame: pd.DataFrame) -> Path:
        return atomic_write_text(out / name, frame.to_csv(index=False, float_format="%.6g"))

    files = {"summary": csv("prop31_summary.csv", table), "violations": csv("prop31_violations.csv", x["violations"]),
             "settings": csv("prop31_settings.csv", x["settings"]),
             "trainer_runs": csv("prop31_trainer_runs.csv", x["trainer_runs"])}
    files["paths"] = plot_paths(x["paths"], out / "prop31_paths.png")[0]
    files["sensitivity"] = plot_sensitivity(x["final"], out / "prop31_sensitivity.png", x["viol"])[0]
    print(x["log"])
    return files


def _cmd_prop31(args) -> int:
    from ..experiments.prop31 import check

    written = write_prop31(check(quick=args.quick), args.out)
    print(f"Proposition 3.1 check written to {args.out}: {written}")
    return 0


def add_cli(subparsers) -> None:
    """Register ``fidelity-effect``, ``fidelity-effects-merge``, ``consistency`` and ``prop31``."""
    from ..experiments.fidelity import QUICK, SWITCHES  # no torch: the CLI starts without it (issue 21)
    from ..facts import CONSISTENCY_PARTS as PARTS
    from ..facts import EVALUATION
    from ..paper_settings import COMMON

    e = subparsers.add_parser("fidelity-effect", help="effect of one fidelity switch (reference vs paper value)")
    e.add_argument("--switch", required=True, choices=sorted(SWITCHES))
    e.add_argument("--dataset", help="dataset (default: the switch's first default dataset)")
    e.add_argument("--out", required=True, help="CSV (a .json sidecar is written next to it)")
    e.add_argument("--quick", action="store_true",
                   help=f"small sizes: {QUICK['epochs']} epochs, {QUICK['n_runs']} runs, "
                        f"{QUICK['n_individuals']} individuals")
    e.add_argument("--epochs", type=int, help=f"training epochs (default: the paper's {COMMON['training']['epochs']})")
    e.add_argument("--n-runs", dest="n_runs", type=int, help=f"evaluation runs (default {EVALUATION['n_runs']})")
    e.add_argument("--n-individuals", dest="n_individuals", type=int, help="individuals per run (default: family's)")
    e.add_argument("--seed", type=int, default=0, help="seed of the evaluation protocol")
    e.add_argument("--seeds", type=int, nargs="+",
                   help="training seeds (default: --seed); values pool the runs of all seeds as Table 1 does")
    e.add_argument("--reuse", nargs="+", metavar="OBJECTIVE_sSEED=PATH",
                   help="saved models to use where their config is the one the study would train (e.g. "
                        "full_s0=results/paper/models/single/lin_sep/full_s0.pt)")
    e.add_argument("--reference-eval", dest="reference_eval", nargs="+", metavar="SEED=PATH",
                   help="the `ctbench evaluate` file of the reused final models of a training seed (Table 1's): "
                        "the reference setting of that seed is read from it where it evaluated exactly those models "
                        "under the study's protocol and fidelity (the same rows), else evaluated")
    e.add_argument("--fidelity-overrides", dest="fidelity_overrides", metavar="JSON",
                   help="the run's other fidelity switches, kept in both settings (JSON, e.g. "
                        "'{\"blob_centers\": \"calibrated\"}')")
    e.set_defaults(func=_cmd_effect)

    m = subparsers.add_parser("fidelity-effects-merge", help="concatenate fidelity-effect CSVs (checked)")
    m.add_argument("inputs", nargs="+", help="CSV files of ctbench fidelity-effect")
    m.add_argument("--out", required=True, help="merged CSV, e.g. fidelity_effects.csv")
    m.set_defaults(func=_cmd_merge)

    c = subparsers.add_parser("consistency", help="invalidation of counterfactuals under retraining (Black et al.)")
    c.add_argument("--part", choices=PARTS, default="black2022",
                   help="black2022: 003's Table 1 protocol; ct: the same on CT and BL models")
    c.add_argument("--dataset", required=True)
    c.add_argument("--seed", type=int, default=0, help="seed of the base model")
    c.add_argument("--settings", help="JSON: methods, n_models, n_factuals, epochs, sources, sns, lipschitz, ...")
    c.add_argument("--out", required=True, help="CSV (.csv or .csv.gz), one row per counterfactual; + .json "
                   "(with --shard: the shard's model file)")
    c.add_argument("--shard", metavar="I/K", help="train only the I-th of K slices of the retrained models and write "
                   "their weights to --out (the DAG runs the K shards at once; issue 21)")
    c.add_argument("--retrained", nargs="+", metavar="SHARD", help="the job's K shard files: only the base model "
                   "trains here; the output is bitwise the single job's")
    c.add_argument("--quiet", action="store_true")
    c.set_defaults(func=_cmd_consistency)

    p31 = subparsers.add_parser("prop31", help="numerical check of Proposition 3.1 on a linear-Gaussian simulation")
    p31.add_argument("--quick", action="store_true", help="fewer seeds and settings")
    p31.add_argument("--out", required=True)
    p31.set_defaults(func=_cmd_prop31)
