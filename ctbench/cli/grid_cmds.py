"""``ctbench grid {points,baseline,run,figures}`` and ``ctbench tune select`` (argparse only; the work is in
:mod:`ctbench.experiments.grids`, the figures in :mod:`ctbench.report.figures.grid_figures`)."""

from __future__ import annotations

import json
from typing import Any

from ..experiments.grids.configs import baseline_config
from ..experiments.grids.definitions import GRIDS, baseline_key, baseline_keys, chunks, grid_points
from ..experiments.grids.runner import run_chunk, write
from ..experiments.grids.tuning import write_best
from ..runtime import keep_freed_memory
from .args import json_object


def _sets(items: list[str] | None) -> dict[str, Any]:
    """``--set key=value`` overrides, typed by the one YAML 1.2 parser of ``ctbench train --set`` (1e-3 is a
    float)."""
    from ..yaml12 import split_assignment

    return dict(split_assignment(kv, "--set", "vae.epochs=5") for kv in items or [])


def _apply_flag(value: str) -> bool | None:
    return {"auto": None, "yes": True, "no": False}[value]


def _cmd_points(args) -> int:
    ov = json_object(args.overrides, "--overrides")
    pts = grid_points(args.grid, ov)
    if args.ids_only:
        print(json.dumps([p["id"] for p in pts]))
        return 0
    out = {"grid": args.grid, "note": GRIDS[args.grid]["note"], "n_points": len(pts),
           "n_models": 2 * len(pts), "baseline_keys": baseline_keys(args.grid, ov),
           "points": [{"id": p["id"], "params": p["params"], "baseline_key": baseline_key(args.grid, p)}
                      for p in pts]}
    if args.chunk_size:
        out["chunks"] = [[p["id"] for p in c] for c in chunks(pts, args.chunk_size)]
    print(json.dumps(out, indent=None if args.compact else 2))
    return 0


def _common_train_kw(args) -> dict[str, Any]:
    return {"fidelity_overrides": json_object(args.fidelity_overrides, "--fidelity-overrides") or None,
            "data_params": json_object(args.data_params, "--data-params") or None,
            "threads": args.threads, "device": args.device}


def _cmd_baseline(args) -> int:
    from ..training.pipeline import train_from_config

    kw = _common_train_kw(args)
    cfg = baseline_config(args.grid, args.key, args.dataset, args.seed, args.fidelity, args.epochs,
                          grid_overrides=json_object(args.overrides, "--overrides"), overrides=_sets(args.set) or None,
                          **kw)
    trained = train_from_config(cfg, progress=not args.quiet)
    out = trained.save(args.out)
    print(f"saved {out} (BL {args.grid}/{args.key}, test accuracy {trained.meta['acc_test']:.4f}, "
          f"{trained.meta['train_seconds']:.1f}s)")
    return 0


def _cmd_run(args) -> int:
    keep_freed_memory()  # CT training and evaluation of the chunk's points (issue 21)
    ov = json_object(args.overrides, "--overrides")
    if args.point:
        pts: list[Any] = list(args.point)
    elif args.chunk is not None:
        all_chunks = chunks(grid_points(args.grid, ov), args.chunk_size)
        if not 0 <= args.chunk < len(all_chunks):
            raise ValueError(f"--chunk {args.chunk}: grid {args.grid} has {len(all_chunks)} chunks of "
                             f"{args.chunk_size}")
        pts = all_chunks[args.chunk]
    else:
        raise ValueError("grid run: give --point ID (repeatable) or --chunk K --chunk-size N")
    kw = _common_train_kw(args)
    df = run_chunk(args.grid, args.dataset, pts, args.baseline, None, json_object(args.eval, "--eval"), args.seed,
                   fidelity=args.fidelity, epochs_override=args.epochs, config_overrides=_sets(args.set) or None,
                   grid_overrides=ov, apply_step_size=_apply_flag(args.apply_step_size),
                   save_models_dir=args.save_models, progress=not args.quiet, **kw)
    write(df, args.out)
    means = df.groupby("point")[["ip_change_pct", "cost_change_pct", "validity_ct", "acc_test_ct"]].mean()
    print(f"wrote {len(df)} rows to {args.out}\n{means.to_string(float_format=lambda v: f'{v:.3f}')}")
    return 0


def _cmd_figures(args) -> int:
    from ..report.figures.grid_figures import write_grid_figures

    written = write_grid_figures(args.csv, args.out)
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def _cmd_select(args) -> int:
    sel = write_best(args.csv, args.dataset, args.out, max_acc_drop=args.max_acc_drop, grids=tuple(args.grids))
    print(f"{args.dataset}: tau={sel['best']['tau']:g}, lambda_reg={sel['best']['lambda_reg']:g} "
          f"({'eligible' if sel['eligible'] else 'no pair within the accuracy margin; fallback'}) -> {args.out}")
    return 0


def _train_args(p) -> None:
    p.add_argument("--dataset", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fidelity", default="reference", help="reference | paper")
    p.add_argument("--fidelity-overrides", dest="fidelity_overrides", metavar="JSON",
                   help="fidelity switches as a JSON object (or a JSON file)")
    p.add_argument("--data-params", dest="data_params", metavar="JSON", help="dataset loader parameters (JSON)")
    p.add_argument("--overrides", metavar="JSON",
                   help="the grid's config block (JSON or JSON file): {param: [values]}, {'fixed': {...}}")
    p.add_argument("--epochs", type=int, help="epochs of every model (not of the points of a grid that varies them)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="extra train-config override for every model, e.g. vae.epochs=5")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--quiet", action="store_true")


def add_cli(subparsers) -> None:
    """Register ``ctbench grid {points,baseline,run,figures}`` and ``ctbench tune select`` on ``subparsers``."""
    g = subparsers.add_parser("grid", help="appendix grid searches (Notes 3-12): points, baselines, chunks, figures")
    gsub = g.add_subparsers(dest="grid_command", required=True)

    p = gsub.add_parser("points", help="print a grid's points (ids, parameters, BL keys, chunks) as JSON")
    p.add_argument("--grid", required=True, choices=sorted(GRIDS))
    p.add_argument("--overrides", metavar="JSON", help="the grid's config block (JSON or JSON file)")
    p.add_argument("--chunk-size", dest="chunk_size", type=int, default=0, help="also list the chunks of N points")
    p.add_argument("--ids-only", dest="ids_only", action="store_true", help="print a JSON list of ids only")
    p.add_argument("--compact", action="store_true", help="one-line JSON")
    p.set_defaults(func=_cmd_points)

    b = gsub.add_parser("baseline", help="train the shared vanilla (BL) model of one baseline key")
    b.add_argument("--grid", required=True, choices=sorted(GRIDS))
    b.add_argument("--key", default="bl", help="baseline key (see `grid points`), e.g. bl or bl_ep50")
    b.add_argument("--out", required=True, help="model file (.pt)")
    _train_args(b)
    b.set_defaults(func=_cmd_baseline)

    r = gsub.add_parser("run", help="train + evaluate one chunk of CT points against the shared BL model")
    r.add_argument("--grid", required=True, choices=sorted(GRIDS))
    r.add_argument("--baseline", required=True, help="the BL model file of this chunk's baseline key")
    r.add_argument("--point", action="append", metavar="ID", help="point id (repeatable)")
    r.add_argument("--chunk", type=int, help="chunk index (with --chunk-size)")
    r.add_argument("--chunk-size", dest="chunk_size", type=int, default=0)
    r.add_argument("--eval", metavar="JSON", help="grid protocol overrides, e.g. {\"n_runs\": 2, \"lambdas\": [1.0]}")
    r.add_argument("--apply-step-size", dest="apply_step_size", choices=("auto", "yes", "no"), default="auto",
                   help="use the grid's CE step size (tune_lr); auto = only in the paper fidelity mode")
    r.add_argument("--save-models", dest="save_models", metavar="DIR", help="also save the CT models here")
    r.add_argument("--out", required=True, help="chunk CSV; writes <out>.epochs.csv and <out>.json too")
    _train_args(r)
    r.set_defaults(func=_cmd_run)

    f = gsub.add_parser("figures", help="appendix figures (%% change vs BL, share of mature CEs) from chunk CSVs")
    f.add_argument("csv", nargs="+", help="chunk CSVs (their .epochs.csv files are read too)")
    f.add_argument("--out", required=True, help="figure folder")
    f.set_defaults(func=_cmd_figures)

    t = subparsers.add_parser("tune", help="tuning stage (Notes 9-12)")
    tsub = t.add_subparsers(dest="tune_command", required=True)
    s = tsub.add_parser("select", help="choose (tau, lambda_reg) for a dataset from tuning chunk CSVs -> best.json")
    s.add_argument("csv", nargs="+", help="chunk CSVs of the tune / tune_lr grids")
    s.add_argument("--dataset", required=True)
    s.add_argument("--max-acc-drop", dest="max_acc_drop", type=float, default=0.01,
                   help="largest allowed CT test-accuracy loss vs BL (fraction; default 0.01 = 1 pp)")
    s.add_argument("--grids", nargs="+", default=["tune", "tune_lr"])
    s.add_argument("--out", required=True, help="best.json ({tau, lambda_reg}); the rationale goes to <out>.json")
    s.set_defaults(func=_cmd_select)
