"""``ctbench figure1``, ``black-figure1``, ``black-figure2`` and ``mnist-figures``: the runs of
:mod:`ctbench.experiments.figure_runs`, drawn by :mod:`ctbench.report.figures.paper_figures`,
:mod:`~ctbench.report.figures.black_figures` and :mod:`~ctbench.report.figures.mnist_grid` and written here (each
file atomically)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..io import atomic_write_json, atomic_write_text, save_figure
from ..paper_settings import FIG1
from .args import json_object

# the runs (torch) are imported by the commands that need them, not at the CLI's start-up (issue 21)


def _detach(table: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The run's extras (arrays, the sidecar) off the table, so pandas does not copy them with every operation."""
    extras = dict(table.attrs)
    table.attrs.clear()
    return table, extras


def write_figure1(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Any]:
    """Draw and write the result of :func:`~ctbench.experiments.figure_runs.figure1`: ``figure1.png``/``.pdf``,
    ``.csv`` and ``.json``; returns the paths and each panel's summary."""
    from ..report.figures.paper_figures import figure1_plot

    table, extras = _detach(table)
    meta, out = extras["meta"], Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig = figure1_plot(table, extras["panels"], *extras["train"], seed=meta["seed"],
                       epochs=meta["settings"]["epochs"], feature_label=FIG1["feature_labels"][0])
    paths = save_figure(fig, out / "figure1")
    paths.append(atomic_write_text(out / "figure1.csv", table.to_csv(index=False)))
    paths.append(atomic_write_json(out / "figure1.json", meta))
    return {"paths": paths, "table": table, "panels": meta["panels"]}


def write_mnist_figures(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Any]:
    """Draw and write the result of :func:`~ctbench.experiments.figure_runs.mnist_figures` (counterfactual grid,
    10×10 grids, attribution maps, their tables and ``mnist_figures.json``); returns the paths and both tables."""
    from ..report.figures.mnist_grid import write_mnist_grids
    from ..report.figures.paper_figures import mnist_attribution_plot, mnist_counterfactual_plot

    table, x = _detach(table)
    pl, out = x["plot"], Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig = mnist_counterfactual_plot(x["images"], x["factuals"], x["counterfactuals"], table, pl["factual_class"],
                                    pl["targets"], lambda_energy=pl["lambda_energy"], lambda_cost=pl["lambda_cost"],
                                    max_iter=pl["max_iter"])
    paths = save_figure(fig, out / "mnist_counterfactuals")
    paths.append(atomic_write_text(out / "mnist_counterfactuals.csv", table.to_csv(index=False)))
    if x["grid"] is not None:
        paths += write_mnist_grids(x["grid"], out)["paths"]
    paths += save_figure(mnist_attribution_plot(x["maps"], pl["classes"], pl["protected"]), out / "mnist_attribution")
    paths.append(atomic_write_text(out / "mnist_attribution.csv", x["attribution"].to_csv(index=False)))
    paths.append(atomic_write_json(out / "mnist_figures.json", x["meta"]))
    return {"paths": paths, "counterfactuals": table, "attribution": x["attribution"]}


def write_black_figure1(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Any]:
    """Draw and write Black et al.'s Figure 1 (:func:`~ctbench.experiments.figure_runs.black.black_figure1`):
    ``black_figure1.png``/``.pdf``, ``.csv`` (the grid: predictions and disagreement) and ``.json`` (the sidecar)."""
    from ..report.figures.black_figures import black_figure1_plot

    table, x = _detach(table)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig = black_figure1_plot(table, *x["train"], *x["grid"], x["meta"]["disagreement_share"])
    paths = save_figure(fig, out / "black_figure1")
    paths.append(atomic_write_text(out / "black_figure1.csv", table.to_csv(index=False)))
    paths.append(atomic_write_json(out / "black_figure1.json", x["meta"]))
    return {"paths": paths, "meta": x["meta"]}


def _cmd_black_figure1(args) -> int:
    from ..experiments.figure_runs.black import black_figure1

    res = write_black_figure1(black_figure1(seed=args.seed, quick=args.quick, epochs=args.epochs,
                                            fidelity=args.fidelity), args.out)
    print(f"wrote {', '.join(str(p) for p in res['paths'])}; disagreement {res['meta']['disagreement_share']}")
    return 0


def write_black_figure2(table: pd.DataFrame, out_dir: str | Path) -> dict[str, Any]:
    """Draw and write Black et al.'s Figure 2 (:func:`~ctbench.experiments.figure_runs.black2.black_figure2`):
    ``black_figure2.png``/``.pdf``, ``.csv`` (one row per factual and method), ``black_figure2_curves.csv`` (the
    drawn σ(t·x') and dσ/dt), ``black_figure2_regions.csv`` (panel (a)'s grid) and ``.json`` (the sidecar)."""
    from ..report.figures.black_figures import black_figure2_plot

    table, x = _detach(table)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig = black_figure2_plot(table, x["grid"], x["points"], x["curves"], *x["train"], *x["axes"],
                             x["meta"]["flatness"])
    paths = save_figure(fig, out / "black_figure2")
    paths.append(atomic_write_text(out / "black_figure2.csv", table.to_csv(index=False)))
    for name, frame in (("curves", x["curves"]), ("regions", x["grid"])):
        paths.append(atomic_write_text(out / f"black_figure2_{name}.csv", frame.to_csv(index=False,
                                                                                       float_format="%.6g")))
    paths.append(atomic_write_json(out / "black_figure2.json", x["meta"]))
    return {"paths": paths, "meta": x["meta"]}


def _cmd_black_figure2(args) -> int:
    from ..experiments.figure_runs.black2 import black_figure2

    res = write_black_figure2(black_figure2(seed=args.seed, quick=args.quick, epochs=args.epochs,
                                            fidelity=args.fidelity), args.out)
    slopes = {m: round(v["median_max_slope"], 4) for m, v in res["meta"]["flatness"]["all"].items()}
    print(f"wrote {', '.join(str(p) for p in res['paths'])}; median max_t dσ/dt {slopes}")
    return 0


def _cmd_figure1(args) -> int:
    from ..experiments.figure_runs.linear import figure1

    res = write_figure1(figure1(seed=args.seed, epochs=args.epochs, quick=args.quick, fidelity=args.fidelity,
                                fidelity_overrides=json_object(args.fidelity_overrides, "--fidelity-overrides")),
                        args.out)
    ratios = ", ".join(f"({k}) {v['sensitivity_ratio']:.2f}" for k, v in res["panels"].items())
    print(f"wrote {', '.join(str(p) for p in res['paths'])}; |w_age|/|w_x2|: {ratios}")
    return 0


def _cmd_mnist_figures(args) -> int:
    from ..experiments.figure_runs.mnist import mnist_figures

    table = mnist_figures(args.ct, args.bl, seed=args.seed, n_factuals=args.n_factuals,
                          targets=args.targets, max_iter=args.max_iter, classes=args.classes,
                          attribution_samples=args.attribution_samples, steps=args.steps,
                          use_constraints=not args.unconstrained, grid10=not args.no_grid10,
                          grid10_lambda_energy=args.grid10_lambda_energy)
    res = write_mnist_figures(table, args.out)
    valid = res["counterfactuals"].groupby("model")["valid"].mean().round(3).to_dict()
    print(f"wrote {', '.join(str(p) for p in res['paths'])}; validity {valid}")
    return 0


def add_cli(subparsers) -> None:
    """Register ``ctbench figure1``, ``ctbench black-figure1``, ``ctbench black-figure2`` and ``ctbench
    mnist-figures``."""
    f = subparsers.add_parser("figure1", help="the paper's Figure 1: linear BL vs CT on LS, without/with age immutable")
    f.add_argument("--out", required=True, help="folder for figure1.png/.pdf/.csv/.json")
    f.add_argument("--quick", action="store_true", help=f"{FIG1['quick_epochs']} epochs (smoke run)")
    f.add_argument("--epochs", type=int, help=f"training epochs (default {FIG1['training']['epochs']})")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--fidelity", default=FIG1["fidelity"], help=f"fidelity mode (default {FIG1['fidelity']})")
    f.add_argument("--fidelity-overrides", dest="fidelity_overrides", metavar="JSON",
                   help="fidelity switches over the mode, as JSON, e.g. '{\"blob_centers\": \"calibrated\"}'")
    f.set_defaults(func=_cmd_figure1)

    b = subparsers.add_parser("black-figure1", help="Black et al.'s Figure 1: where two deep / two linear models "
                              "trained from different seeds disagree")
    b.add_argument("--out", required=True, help="folder for black_figure1.png/.pdf/.csv/.json")
    b.add_argument("--quick", action="store_true", help="a few epochs (smoke run)")
    b.add_argument("--epochs", type=int, help="training epochs (default: the run's setting)")
    b.add_argument("--seed", type=int, default=0, help="the pairs' seeds are SEED and SEED+1")
    b.add_argument("--fidelity", default="reference", help="fidelity mode of the data (default reference)")
    b.set_defaults(func=_cmd_black_figure1)

    b2 = subparsers.add_parser("black-figure2", help="Black et al.'s Figure 2: a ReLU MLP's activation regions and "
                               "gradients; σ(t·x') for Min-ℓ2 and Min-ℓ2 + SNS")
    b2.add_argument("--out", required=True, help="folder for black_figure2.png/.pdf/.csv/.json and black_figure2_*.csv")
    b2.add_argument("--quick", action="store_true", help="a few epochs (smoke run)")
    b2.add_argument("--epochs", type=int, help="training epochs (default: the run's setting)")
    b2.add_argument("--seed", type=int, default=0, help="the model's seed and the factuals' draw")
    b2.add_argument("--fidelity", default="reference", help="fidelity mode of the data (default reference)")
    b2.set_defaults(func=_cmd_black_figure2)

    m = subparsers.add_parser("mnist-figures", help="MNIST counterfactual grid and per-class integrated gradients")
    m.add_argument("--ct", required=True, help="CT model (.pt)")
    m.add_argument("--bl", required=True, help="BL model (.pt)")
    m.add_argument("--out", required=True, help="folder for mnist_counterfactuals.* and mnist_attribution.*")
    m.add_argument("--seed", type=int, default=42)
    m.add_argument("--n-factuals", dest="n_factuals", type=int, default=3)
    m.add_argument("--targets", type=int, nargs="+", default=[1, 2, 3, 4])
    m.add_argument("--max-iter", dest="max_iter", type=int, default=1000)
    m.add_argument("--classes", type=int, nargs="+", default=[5, 6, 7, 8, 9], help="classes of the attribution maps")
    m.add_argument("--attribution-samples", dest="attribution_samples", type=int,
                   help="at most N test images per class for the maps (default: all)")
    m.add_argument("--steps", type=int, default=50, help="integrated-gradients path steps")
    m.add_argument("--unconstrained", action="store_true", help="search without the models' mutability constraints")
    m.add_argument("--no-grid10", dest="no_grid10", action="store_true",
                   help="skip the appendix's 10x10 grids (mnist_grid_ct/bl.png, paper Figures 4-5)")
    m.add_argument("--grid10-lambda-energy", dest="grid10_lambda_energy", type=float, default=25.0,
                   help="ECCo energy penalty of the 10x10 grids (the authors': 25)")
    m.set_defaults(func=_cmd_mnist_figures)
