"""``ctbench train`` and ``ctbench generate``: train models from configs, counterfactuals from a saved model."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ..runtime import keep_freed_memory
from ..shape_caches import no_shape_caches


def _train_configs(args) -> list[dict]:
    import json

    from ..config import ConfigError, load_config, resolve_train_config, set_dotted

    if args.config_json and args.config:
        raise ConfigError("give --config or --config-json, not both")
    sources = args.config_json or args.config or [None]
    if len(sources) != len(args.out):
        raise ConfigError(f"{len(sources)} config(s) for {len(args.out)} --out file(s): give one --out per config")
    sets = list(args.set or []) + (["training.keep_failed=true"] if args.keep_failed else [])
    cfgs = []
    for src in sources:
        if args.config_json:
            try:
                cfg = json.loads(src)
            except json.JSONDecodeError as err:
                raise ConfigError(f"--config-json: not valid JSON ({err}): {src[:80]!r}") from None
            if not isinstance(cfg, dict):
                raise ConfigError(f"--config-json: expected a JSON object of settings, got {src[:80]!r}")
            for a in sets:
                set_dotted(cfg, a)
            cfg = resolve_train_config(cfg)
        else:
            cfg = load_config(src, sets)
        if args.best:
            from ..paper_settings import apply_best

            cfg = apply_best(cfg, args.best)
        cfgs.append(cfg)
    return cfgs


def _cmd_train(args) -> int:
    keep_freed_memory()  # CT training searches every step (issue 21)
    no_shape_caches()  # before any convolution: the searches' batch sizes would fragment the heap (issue 21)
    from ..errors import UserInputError
    from ..training.pipeline import FailedTraining, train_from_config, train_population_from_configs
    from .search_threads import search_threads, unsplit_search_note

    cfgs = _train_configs(args)
    if len(cfgs) == 1:
        note = unsplit_search_note(cfgs[0], args.search_threads)
        if note:
            print(note, file=sys.stderr)
        with search_threads(args.search_threads):
            trained = {args.out[0]: train_from_config(cfgs[0], progress=not args.quiet)}
        if args.search_threads is not None:  # recorded beside the config's threads (the sidecar's meta)
            trained[args.out[0]].meta["search_threads"] = args.search_threads
    elif args.search_threads is not None:
        raise UserInputError("--search-threads applies to one model (one --out); populations search together")
    else:  # several models: trained together as populations, one tensor program per shareable group
        trained = train_population_from_configs(dict(zip(args.out, cfgs, strict=True)), progress=not args.quiet)
    failed = 0
    for out, result in trained.items():
        if isinstance(result, FailedTraining):
            failed += 1
            print(f"not saved: {out}: {result.error}", file=sys.stderr)
            continue
        if result.failure:  # training.keep_failed / --keep-failed: saved for inspection, marked failed
            failed += 1
            result.save(out)
            print(f"training failed; kept for inspection (marked failed in {out}.json): {out}: {result.failure}",
                  file=sys.stderr)
            continue
        path = result.save(out)
        last = result.log.iloc[-1]
        print(f"saved {path} (test accuracy {result.meta['acc_test']:.4f}, final share mature "
              f"{last['share_mature']:.3f}, {result.meta['train_seconds']:.1f}s, fidelity {result.fidelity.mode})")
    return 1 if failed else 0


def _read_matrix(path: str, option: str = "--factuals") -> np.ndarray:
    """A feature matrix from ``.npy`` or a CSV with a header row; errors name the option and the file."""
    from ..errors import BadFileError

    p = Path(path)
    if not p.is_file():
        raise BadFileError(f"{option} {p}: the file does not exist" if not p.exists() else f"{option} {p}: not a file")
    try:
        if p.suffix == ".npy":
            X = np.load(p, allow_pickle=False)
        else:
            import pandas as pd

            try:
                X = pd.read_csv(p).to_numpy(dtype=np.float32)
            except pd.errors.EmptyDataError:
                raise BadFileError(f"{option} {p}: the file is empty; give a header row (one name per feature) "
                                   "and one row per factual") from None
        return np.asarray(X, dtype=np.float32)
    except BadFileError:
        raise
    except Exception as err:  # truncated .npy, text in a number column, a binary file given as CSV, ...
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise BadFileError(f"{option} {p}: cannot read a numeric matrix ({type(err).__name__}: {detail}); give a "
                           ".npy array or a CSV with a header row and numbers only") from None


def _cmd_generate(args) -> int:
    keep_freed_memory()
    no_shape_caches()
    import pandas as pd

    from ..checks import check_value
    from ..errors import UserInputError
    from ..io import atomic_write_text
    from ..training.pipeline import load_model
    from ..yaml12 import split_assignment

    trained = load_model(args.model)
    X, _ = trained.check_inputs(_read_matrix(args.factuals), what=f"--factuals {args.factuals}")
    if args.target is not None:
        if not 0 <= args.target < trained.n_classes:
            raise UserInputError(f"--target {args.target}: no such class; the model {args.model} has "
                                 f"{trained.n_classes} classes, numbered 0..{trained.n_classes - 1}")
        target = np.full(len(X), args.target, dtype=np.int64)
    else:  # default: the next class after the predicted one
        target = (trained.predict(X) + 1) % trained.n_classes
    gen_spec = dict(trained.config["generator"])
    for kv in args.generator or []:
        k, v = split_assignment(kv, "--generator", "lambda_energy=1.0")
        gen_spec[k] = check_value(f"generator.{k}", v)
    conv = dict(trained.config["convergence"])
    if args.tau is not None:
        conv["tau"] = check_value("convergence.tau", args.tau)
    if args.max_iter is not None:
        conv["max_iter"] = check_value("convergence.max_iter", args.max_iter)
    if len(X) == 0:  # nothing to search: an empty result at once
        print(f"{args.factuals} has no rows: nothing to search", file=sys.stderr)
    res = trained.counterfactuals(X, target, generator=gen_spec, convergence=conv, seed=args.seed)
    D = X.shape[1]
    cf = pd.DataFrame(res.counterfactual.cpu().numpy(), columns=[f"cf_{i}" for i in range(D)])
    cf.insert(0, "target", res.target.cpu().numpy())
    cf.insert(1, "mature", res.mature.cpu().numpy())
    cf.insert(2, "steps", res.steps.cpu().numpy())
    cf.insert(3, "prob_target", res.prob_target.cpu().numpy())
    atomic_write_text(args.out, cf.to_csv(index=False))
    share = f"{float(res.mature.float().mean()):.1%} mature" if len(cf) else "no factuals"
    print(f"wrote {len(cf)} counterfactuals to {args.out} ({share})")
    return 0


def add_cli(sub) -> None:
    """Register ``train`` and ``generate``."""
    t = sub.add_parser("train", help="train and save a model from a YAML config (several: as one population)")
    t.add_argument("--config", action="append", help="YAML config (see ctbench.config.DEFAULT_TRAIN_CONFIG); "
                   "repeat with one --out each to train several models at once")
    t.add_argument("--config-json", dest="config_json", action="append",
                   help="the config as a JSON string (used by the workflow); repeatable like --config")
    t.add_argument("--out", required=True, action="append",
                   help="output model file (.pt), one per config; a .pt.json sidecar is written too")
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config key, e.g. training.epochs=5")
    t.add_argument("--best", help="best.json of the tuning stage: its tau and lambda_reg replace the config's")
    t.add_argument("--keep-failed", dest="keep_failed", action="store_true",
                   help="save a run that diverged or did not learn anyway, for inspection, marked failed in its "
                   "sidecar (= training.keep_failed: true); the exit code stays 1")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.add_argument("--search-threads", dest="search_threads", type=int, metavar="N",
                   help="split each epoch's counterfactual search into N row chunks searched at once, each on "
                   "one thread, and run training.grad_chunks' gradient chunks on up to N threads; the rest at the "
                   "config's threads: for LeNet the one-thread model bit for bit; recorded in the sidecar as "
                   "search_threads")
    t.set_defaults(func=_cmd_train)

    g = sub.add_parser("generate", help="counterfactuals for given factuals with a saved model")
    g.add_argument("--model", required=True)
    g.add_argument("--factuals", required=True, help=".npy or .csv (header row, features only)")
    g.add_argument("--target", type=int, help="target class for all rows (default: predicted + 1 mod K)")
    g.add_argument("--generator", action="append", metavar="KEY=VALUE", help="generator override, e.g. type=generic")
    g.add_argument("--tau", type=float)
    g.add_argument("--max-iter", type=int, dest="max_iter")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", required=True, help="CSV with target, mature, steps, prob_target and the counterfactual")
    g.set_defaults(func=_cmd_generate)
