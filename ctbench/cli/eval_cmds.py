"""``ctbench evaluate``, ``robustness`` and ``attribution``: the paper's evaluations of saved models
(:mod:`ctbench.experiments.evaluation`, ``.robustness``, ``.attributions``), written here."""

from __future__ import annotations

from ..facts import ATTRIBUTION
from ..runtime import keep_freed_memory
from ..shape_caches import no_shape_caches


def _protocol_overrides(items: list[str] | None) -> dict:
    from ..evaluation.settings import check_protocol_overrides
    from ..yaml12 import split_assignment

    out = dict(split_assignment(kv, "--set", "n_runs=10") for kv in items or [])
    return check_protocol_overrides(out, "protocol")


def check_experiment(value: str, option: str = "--experiment") -> str:
    """One of the paper's experiments (the label every row carries; the report builds its tables from it)."""
    from ..errors import UserInputError
    from ..facts import EXPERIMENTS

    if value not in EXPERIMENTS:
        given = f"{value!r} is not an experiment" if value else "not given"
        raise UserInputError(f"{option}: {given}; give one of {', '.join(EXPERIMENTS)} (the report builds Table 1 "
                             "from single, Table 3 from mutability and ablation)")
    return value


def _cmd_evaluate(args) -> int:
    keep_freed_memory()  # the searches' step tensors stay in the heap (issue 21)
    no_shape_caches()  # LeNet's searches: new batch sizes every step would fragment that heap (issue 21)
    from ..evaluation.pool_kernels import cached_ip_star
    from ..experiments.evaluation import parse_models, run, write

    check_experiment(args.experiment)

    job = {"models": parse_models(args.model), "experiment": args.experiment, "constrained": args.constrained,
           "settings": _protocol_overrides(args.set)}
    with cached_ip_star():  # the same numbers, each class pool's distances once per job (issue 21)
        df = run(job, progress=not args.quiet)
    write(df, args.out)
    summary = df.groupby("model")[["valid", "cost", "ip", "ip_star"]].mean()
    print(f"wrote {len(df)} rows to {args.out}\n{summary.to_string(float_format=lambda v: f'{v:.3f}')}")
    return 0


def _cmd_robustness(args) -> int:
    keep_freed_memory()
    from ..experiments.evaluation import parse_models, write
    from ..experiments.robustness import run

    df = run({"models": parse_models(args.model), "seed": args.seed, "experiment": args.experiment})
    write(df, args.out)
    print(f"wrote {len(df)} rows to {args.out}")
    return 0


def _cmd_attribution(args) -> int:
    keep_freed_memory()
    from ..experiments.attributions import run
    from ..experiments.evaluation import parse_models, write

    df = run({"models": parse_models(args.model), "seed": args.seed, "experiment": args.experiment,
              "n_rounds": args.rounds, "n_samples": args.samples, "steps": args.steps})
    write(df, args.out)
    print(df.groupby("model")["value"].median().to_string())
    return 0


def add_cli(sub) -> None:
    """Register ``evaluate``, ``robustness`` and ``attribution``."""
    e = sub.add_parser("evaluate", help="the paper's counterfactual evaluation of saved models (one dataset)")
    e.add_argument("--model", action="extend", nargs="+", required=True, metavar="NAME=PATH",
                   help="a saved model, e.g. CT=results/ct.pt (repeat for each model)")
    e.add_argument("--constrained", action="store_true",
                   help="use the models' mutability constraints at test time (τ = 0.5, the mutability runs)")
    e.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="protocol override, e.g. n_runs=10, lambdas=[1.0], n_individuals=50, seed=1")
    e.add_argument("--experiment", default="", help="label stored in every row: single, mutability or ablation "
                   "(required)")
    e.add_argument("--out", required=True, help="CSV (.csv or .csv.gz), one row per counterfactual")
    e.add_argument("--quiet", action="store_true")
    e.set_defaults(func=_cmd_evaluate)

    r = sub.add_parser("robustness", help="accuracy under FGSM and PGD over the ε grid")
    r.add_argument("--model", action="extend", nargs="+", required=True, metavar="NAME=PATH")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--experiment", default="")
    r.add_argument("--out", required=True)
    r.set_defaults(func=_cmd_robustness)

    a = sub.add_parser("attribution", help="integrated gradients on the protected features (Table 2)")
    a.add_argument("--model", action="extend", nargs="+", required=True, metavar="NAME=PATH")
    a.add_argument("--rounds", type=int, default=ATTRIBUTION["rounds"])
    a.add_argument("--samples", type=int, default=ATTRIBUTION["samples"])
    a.add_argument("--steps", type=int, default=ATTRIBUTION["steps"])
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--experiment", default="")
    a.add_argument("--out", required=True)
    a.set_defaults(func=_cmd_attribution)
