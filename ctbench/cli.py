"""The ``ctbench`` command line: the commands the workflow rules and people call."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def _train_configs(args) -> list[dict]:
    import json

    from .config import ConfigError, load_config, resolve_train_config, set_dotted

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
            from .paper_settings import apply_best

            cfg = apply_best(cfg, args.best)
        cfgs.append(cfg)
    return cfgs


def _cmd_train(args) -> int:
    from .api import FailedTraining, train_from_config, train_population_from_configs

    cfgs = _train_configs(args)
    if len(cfgs) == 1:
        trained = {args.out[0]: train_from_config(cfgs[0], progress=not args.quiet)}
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
    from .errors import BadFileError

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
    import pandas as pd

    from .api import load_model
    from .checks import check_value
    from .errors import UserInputError
    from .io import atomic_write_text
    from .yaml12 import split_assignment

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


def _cmd_data_summary(args) -> int:
    import pandas as pd

    from .data import available, load_dataset
    from .report.markdown import frame_to_markdown

    rows = []
    for name, info in available().items():
        if args.datasets and name not in args.datasets:
            continue
        try:
            rows.append({**load_dataset(name, fidelity=args.fidelity).summary(), "family": info["family"]})
        except (FileNotFoundError, ValueError) as err:
            rows.append({"dataset": name, "family": info["family"], "error": str(err).splitlines()[0]})
    print(frame_to_markdown(pd.DataFrame(rows)), end="")
    return 0


def _cmd_data_prepare(args) -> int:
    import json

    from .config import ConfigError
    from .data import available, load_dataset
    from .io import atomic_write_json, provenance

    try:
        params = json.loads(args.params) if args.params else {}
    except json.JSONDecodeError as err:
        raise ConfigError(f"--params: not valid JSON ({err}): {args.params!r}") from None
    if not isinstance(params, dict):
        raise ConfigError(f"--params: expected a JSON object such as '{{\"n_draws\": 5000}}', got {args.params!r}")
    ds = load_dataset(args.dataset, fidelity=args.fidelity, **params)
    info = {"dataset": args.dataset, "family": available()[args.dataset]["family"], "params": params,
            "fidelity": args.fidelity, "summary": ds.summary(), "feature_names": ds.feature_names,
            "protected": ds.protected, "categorical_groups": ds.categorical_groups, "domain": ds.domain,
            "meta": ds.meta, "provenance": provenance()}
    atomic_write_json(args.out, info)
    print(f"{args.dataset}: {ds.summary()}")
    return 0


def _cmd_data_fetch(args) -> int:
    from .data import files

    failed = 0
    for name, outcome in files.fetch_all(args.files or None, raw_dir=args.raw_dir).items():
        print(f"{name}: {outcome}")
        failed += outcome != "ok"
    return 1 if failed else 0


def _cmd_data_status(args) -> int:
    import pandas as pd

    from .data import files
    from .report.markdown import frame_to_markdown

    rows = pd.DataFrame(files.status(args.raw_dir))[["file", "status", "path", "licence"]]
    print(frame_to_markdown(rows), end="")
    return 0


def _protocol_overrides(items: list[str] | None) -> dict:
    from .evaluation.protocol import check_protocol_overrides
    from .yaml12 import split_assignment

    out = dict(split_assignment(kv, "--set", "n_runs=10") for kv in items or [])
    return check_protocol_overrides(out, "protocol")


def _cmd_evaluate(args) -> int:
    from .evaluation.runner import run_evaluate

    df = run_evaluate(args.model, args.out, protocol_overrides=_protocol_overrides(args.set),
                      constrained=args.constrained, experiment=args.experiment, progress=not args.quiet)
    summary = df.groupby("model")[["valid", "cost", "ip", "ip_star"]].mean()
    print(f"wrote {len(df)} rows to {args.out}\n{summary.to_string(float_format=lambda v: f'{v:.3f}')}")
    return 0


def _cmd_robustness(args) -> int:
    from .evaluation.runner import run_robustness

    df = run_robustness(args.model, args.out, seed=args.seed, experiment=args.experiment)
    print(f"wrote {len(df)} rows to {args.out}")
    return 0


def _cmd_attribution(args) -> int:
    from .evaluation.runner import run_attribution

    df = run_attribution(args.model, args.out, n_rounds=args.rounds, n_samples=args.samples, steps=args.steps,
                         seed=args.seed, experiment=args.experiment)
    print(df.groupby("model")["value"].median().to_string())
    return 0


def _config_json(text: str | None) -> dict | None:
    import json

    from .errors import ConfigError

    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"--config-json: not valid JSON ({err})") from None
    if not isinstance(value, dict):
        raise ConfigError("--config-json: expected a JSON object (the workflow config)")
    return value


def _cmd_report(args) -> int:
    from .errors import BadFileError
    from .report.tables import PUBLISHED_DIR, write_extras, write_report

    inputs = [*(args.eval or []), *(args.robustness or []), *(args.attribution or []), *(args.grids or []),
              *(args.tuned or []), *(f"{m}.json" for m in args.models or [])]
    missing = [f for f in inputs if not Path(f).is_file()]
    if missing:  # checked before anything is written
        raise BadFileError(f"report: input file(s) not found: {', '.join(missing)}")
    published = None if args.published == "none" else (args.published or PUBLISHED_DIR)
    written = write_report(args.out, evaluations=args.eval or [], robustness=args.robustness or [],
                           attribution=args.attribution or [], published_dir=published,
                           benchmarks_dir=args.benchmarks, n_boot=args.n_boot)
    written.update(write_extras(args.out, evaluations=args.eval or [], models=args.models or [],
                                tuned=args.tuned or [], grids=args.grids or [], profile=args.profile,
                                config=_config_json(args.config_json)))
    if args.consistency:
        from .report.consistency import write_consistency

        written.update(write_consistency(args.out, args.consistency, published))
    if args.claims:
        from .report.claims import write_verdicts

        write_verdicts(args.claims, args.out)
        written["verdicts"] = "verdicts.csv"
    print(f"wrote to {args.out}: {', '.join(written) or 'nothing (no inputs)'}")
    return 0


def _cmd_prop31(args) -> int:
    from .theory.prop31 import main as prop31_main

    written = prop31_main(args.out, quick=args.quick)
    print(f"Proposition 3.1 check written to {args.out}: {written}")
    return 0


def _cmd_compare(args) -> int:
    from .config import ConfigError
    from .report.compare import Tolerance, compare_reports

    for folder in (args.committed, args.fresh):
        if not Path(folder).is_dir():
            raise ConfigError(f"compare: {folder} is not a folder; give two report folders (ctbench report --out)")
    moved = compare_reports(args.committed, args.fresh, Tolerance(rtol=args.rtol, atol=args.atol))
    if moved.empty:
        print(f"no number moved beyond rtol={args.rtol:g}, atol={args.atol:g} ({args.fresh} vs {args.committed})")
        return 0
    print(moved.to_string(index=False, max_colwidth=60))
    print(f"{len(moved)} cell(s) moved or missing beyond rtol={args.rtol:g}, atol={args.atol:g}")
    return 1


def _cmd_book(args) -> int:
    from .report.book import build_book, committed_results

    report = args.report
    if report is None:
        report = committed_results(args.book)
        print(f"building from the committed result set {report} (pass --report DIR for another)")
    html = build_book(report, args.book, args.out, strict=args.strict, claims_yaml=args.claims)
    print(f"built {html}")
    return 0


def _cmd_bench(args) -> int:
    if args.population:
        from .bench_population import main as population_main

        return population_main(args.out, quick=args.quick)
    from .bench import main as bench_main

    return bench_main(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ctbench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

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

    d = sub.add_parser("data", help="datasets")
    dsub = d.add_subparsers(dest="data_command", required=True)
    s = dsub.add_parser("summary", help="rows per split, features, classes, balance, protected features")
    s.add_argument("datasets", nargs="*")
    s.add_argument("--fidelity", default="reference")
    s.set_defaults(func=_cmd_data_summary)
    pr = dsub.add_parser("prepare", help="build (and cache) a dataset's splits; write its metadata as JSON")
    pr.add_argument("dataset")
    pr.add_argument("--fidelity", default="reference")
    pr.add_argument("--params", help="loader parameters as JSON, e.g. '{\"n_draws\": 5000}'")
    pr.add_argument("--out", required=True)
    pr.set_defaults(func=_cmd_data_prepare)
    f = dsub.add_parser("fetch", help="download missing raw files from their canonical sources and verify sha256")
    f.add_argument("files", nargs="*", help="file names (default: every file)")
    f.add_argument("--raw-dir", dest="raw_dir", help="target folder (default: $CTBENCH_DATA or data/raw)")
    f.set_defaults(func=_cmd_data_fetch)
    st = dsub.add_parser("status", help="which raw files are present and verified")
    st.add_argument("--raw-dir", dest="raw_dir")
    st.set_defaults(func=_cmd_data_status)

    e = sub.add_parser("evaluate", help="the paper's counterfactual evaluation of saved models (one dataset)")
    e.add_argument("--model", action="append", required=True, metavar="NAME=PATH",
                   help="a saved model, e.g. CT=results/ct.pt (repeat for each model)")
    e.add_argument("--constrained", action="store_true",
                   help="use the models' mutability constraints at test time (τ = 0.5, the mutability runs)")
    e.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="protocol override, e.g. n_runs=10, lambdas=[1.0], n_individuals=50, seed=1")
    e.add_argument("--experiment", default="", help="label stored in every row (single, mutability, ablation)")
    e.add_argument("--out", required=True, help="CSV (.csv or .csv.gz), one row per counterfactual")
    e.add_argument("--quiet", action="store_true")
    e.set_defaults(func=_cmd_evaluate)

    r = sub.add_parser("robustness", help="accuracy under FGSM and PGD over the ε grid")
    r.add_argument("--model", action="append", required=True, metavar="NAME=PATH")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--experiment", default="")
    r.add_argument("--out", required=True)
    r.set_defaults(func=_cmd_robustness)

    a = sub.add_parser("attribution", help="integrated gradients on the protected features (Table 2)")
    a.add_argument("--model", action="append", required=True, metavar="NAME=PATH")
    a.add_argument("--rounds", type=int, default=100)
    a.add_argument("--samples", type=int, default=2500)
    a.add_argument("--steps", type=int, default=50)
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--experiment", default="")
    a.add_argument("--out", required=True)
    a.set_defaults(func=_cmd_attribution)

    from . import consistency_study, fidelity_study, figure_runs, grids
    from .report import appendix

    grids.add_cli(sub)
    figure_runs.add_cli(sub)
    appendix.add_cli(sub)
    fidelity_study.add_cli(sub)
    consistency_study.add_cli(sub)

    rp = sub.add_parser("report", help="the paper's tables and figures from evaluation outputs")
    rp.add_argument("--eval", nargs="*", help="outputs of ctbench evaluate")
    rp.add_argument("--robustness", nargs="*", help="outputs of ctbench robustness")
    rp.add_argument("--attribution", nargs="*", help="outputs of ctbench attribution")
    rp.add_argument("--published", help="folder of published tables (default: the copy shipped with ctbench; "
                    "'none' to leave them out)")
    rp.add_argument("--grids", nargs="*", help="grid chunk CSVs (ctbench grid run): appendix grid figures")
    rp.add_argument("--models", nargs="*", help="saved models (.pt): training time per model (training_time.csv)")
    rp.add_argument("--tuned", nargs="*", help="best.json files of the tuning stage (tuning.csv)")
    rp.add_argument("--consistency", nargs="*", help="outputs of ctbench consistency: 003's Table 1 and the CT x "
                    "consistency tables")
    rp.add_argument("--claims", help="claims.yaml: evaluate the claims ledger into verdicts.csv")
    rp.add_argument("--profile", default="", help="profile name recorded in provenance.json")
    rp.add_argument("--config-json", dest="config_json",
                    help="the resolved workflow config as JSON (the workflow passes it), recorded in provenance.json")
    rp.add_argument("--benchmarks", help="folder of Snakemake benchmark files: adds CPU time per stage")
    rp.add_argument("--n-boot", dest="n_boot", type=int, default=1000)
    rp.add_argument("--out", required=True, help="report folder")
    rp.set_defaults(func=_cmd_report)

    p31 = sub.add_parser("prop31", help="numerical check of Proposition 3.1 on a linear-Gaussian simulation")
    p31.add_argument("--quick", action="store_true", help="fewer seeds and settings")
    p31.add_argument("--out", required=True)
    p31.set_defaults(func=_cmd_prop31)

    cp = sub.add_parser("compare", help="which numbers of a fresh report moved against the committed result set")
    cp.add_argument("fresh", help="the fresh report folder, e.g. results/paper/report")
    cp.add_argument("--committed", default="paper/results/report", help="default: paper/results/report")
    cp.add_argument("--rtol", type=float, default=1e-6, help="relative tolerance (default 1e-6)")
    cp.add_argument("--atol", type=float, default=1e-9, help="absolute tolerance (default 1e-9)")
    cp.set_defaults(func=_cmd_compare)

    bk = sub.add_parser("book", help="build the Jupyter Book (HTML, offline) from a report folder")
    bk.add_argument("--report", default=None,
                    help="report folder (ctbench report --out); default: the committed result set, "
                         "paper/results/report, so the book shows the paper-scale numbers without a re-run")
    bk.add_argument("--book", default="paper", help="book sources (default: paper/)")
    bk.add_argument("--out", help="folder for _build/html (default: the book folder)")
    bk.add_argument("--claims", help="claims.yaml to evaluate when the report has no verdicts.csv")
    bk.add_argument("--no-strict", dest="strict", action="store_false", help="do not treat Sphinx warnings as errors")
    bk.set_defaults(func=_cmd_book)

    b = sub.add_parser("bench", help="throughput and training-time benchmarks")
    b.add_argument("--out", default="benchmarks/results", help="folder for the JSON/Markdown results")
    b.add_argument("--device", default="cpu")
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--quick", action="store_true", help="small sizes (a smoke run of the benchmark itself)")
    b.add_argument("--population", action="store_true",
                   help="G single runs in a loop vs one population of G (G = 1, 9, 36, 100; LS and Adult size)")
    b.set_defaults(func=_cmd_bench)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one command. A bad setting, argument or file (``ctbench.errors.UserInputError`` and the ``ValueError`` /
    ``OSError`` of a bad value or path) is one line ``ctbench: error: ...`` and exit code 2, as argparse's own usage
    errors; a training run that failed (diverged, did not learn) or a failed book build is exit code 1."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, OSError) as err:  # UserInputError/ConfigError/BadFileError are ValueErrors
        print(f"ctbench: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ctbench: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as err:  # a failed training run, a failed book build: reported, nothing saved
        from .report.book import BookBuildError
        from .training import TrainingFailedError

        if isinstance(err, (TrainingFailedError, BookBuildError)):
            print(f"ctbench: error: {err}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
