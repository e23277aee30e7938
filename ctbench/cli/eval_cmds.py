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
    from .search_threads import search_threads

    check_experiment(args.experiment)

    job = {"models": parse_models(args.model), "experiment": args.experiment, "constrained": args.constrained,
           "settings": _protocol_overrides(args.set)}
    with cached_ip_star(), search_threads(args.search_threads):  # each class pool's distances once per job
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


#: the commands ``ctbench each`` runs
EACH = ("evaluate", "robustness", "attribution")


def _cmd_each(args) -> int:
    """Several jobs of one command in this process, one after another (issue 21: the workflow's small evaluation
    jobs of one dataset, each as its own ``ctbench COMMAND ...`` would run it, without a process start-up each).
    Every job's arguments are parsed and checked before the first one runs; the first failing job's exit code ends
    the run."""
    import argparse
    import json

    from ..errors import UserInputError
    from .out_check import check_out_is_not_an_input

    try:
        jobs = json.loads(args.jobs)
    except json.JSONDecodeError as err:
        raise UserInputError(f"--jobs: not JSON ({err}); give a list of argument lists, e.g. "
                             '[["--model", "CT=a.pt", "--out", "a.csv"]]') from None
    if not isinstance(jobs, list) or not jobs or not all(
            isinstance(j, list) and j and all(isinstance(a, str) for a in j) for j in jobs):
        raise UserInputError(f"--jobs: {args.jobs[:200]!r} is not a non-empty list of non-empty lists of strings")
    parser = argparse.ArgumentParser(prog="ctbench")
    add_cli(parser.add_subparsers(dest="command", required=True))
    parsed = [parser.parse_args([args.each, *j]) for j in jobs]
    outs = [p.out for p in parsed]
    if len(set(outs)) != len(outs):
        raise UserInputError(f"--jobs: two jobs write the same --out ({sorted(o for o in outs if outs.count(o) > 1)})")
    for p in parsed:
        check_out_is_not_an_input(p)
    for p in parsed:
        rc = p.func(p)
        if rc:
            return rc
    return 0


def add_cli(sub) -> None:
    """Register ``evaluate``, ``robustness``, ``attribution`` and ``each``."""
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
    e.add_argument("--search-threads", dest="search_threads", type=int, metavar="N",
                   help="split each search's rows into N chunks searched at once, each on one thread (for LeNet "
                   "the one-thread numbers bit for bit); the rest at the process's threads")
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

    m = sub.add_parser("each", help="several evaluate, robustness or attribution jobs in one process, in order")
    m.add_argument("each", choices=EACH, metavar="COMMAND", help=f"one of {', '.join(EACH)}")
    m.add_argument("--jobs", required=True, metavar="JSON",
                   help='the jobs\' arguments (after COMMAND), a JSON list of lists, e.g. [["--model", "CT=a.pt", '
                        '"--experiment", "single", "--out", "a.parquet"], ...]')
    m.set_defaults(func=_cmd_each)
