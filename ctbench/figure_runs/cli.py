"""``ctbench figure1`` and ``ctbench mnist-figures``."""

from __future__ import annotations

from .linear import FIG1, figure1
from .mnist import mnist_figures


def _cmd_figure1(args) -> int:
    res = figure1(args.out, seed=args.seed, epochs=args.epochs, quick=args.quick)
    ratios = ", ".join(f"({k}) {v['sensitivity_ratio']:.2f}" for k, v in res["panels"].items())
    print(f"wrote {', '.join(str(p) for p in res['paths'])}; |w_age|/|w_x2|: {ratios}")
    return 0


def _cmd_mnist_figures(args) -> int:
    res = mnist_figures(args.ct, args.bl, args.out, seed=args.seed, n_factuals=args.n_factuals,
                        targets=args.targets, max_iter=args.max_iter, classes=args.classes,
                        attribution_samples=args.attribution_samples, steps=args.steps,
                        use_constraints=not args.unconstrained, grid10=not args.no_grid10,
                        grid10_lambda_energy=args.grid10_lambda_energy)
    valid = res["counterfactuals"].groupby("model")["valid"].mean().round(3).to_dict()
    print(f"wrote {', '.join(str(p) for p in res['paths'])}; validity {valid}")
    return 0


def add_cli(subparsers) -> None:
    """Register ``ctbench figure1`` and ``ctbench mnist-figures``."""
    f = subparsers.add_parser("figure1", help="the paper's Figure 1: linear BL vs CT on LS, without/with age immutable")
    f.add_argument("--out", required=True, help="folder for figure1.png/.pdf/.csv/.json")
    f.add_argument("--quick", action="store_true", help=f"{FIG1['quick_epochs']} epochs (smoke run)")
    f.add_argument("--epochs", type=int, help=f"training epochs (default {FIG1['training']['epochs']})")
    f.add_argument("--seed", type=int, default=0)
    f.set_defaults(func=_cmd_figure1)

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
