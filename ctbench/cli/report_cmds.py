"""``ctbench report``, ``report-seed-ledger``, ``appendix``, ``compare``, ``book`` and ``gallery``: the report layer's
commands."""

from __future__ import annotations

import json
from pathlib import Path

from .report_figure_cmds import registered_labels


def _config_json(text: str | None) -> dict | None:
    from ..errors import ConfigError

    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"--config-json: not valid JSON ({err})") from None
    if not isinstance(value, dict):
        raise ConfigError("--config-json: expected a JSON object (the workflow config)")
    return value


def check_sidecars(evaluations: list[str], models: list[str], tuned: list[str] = ()) -> None:
    """Before anything is written: every model sidecar is JSON, unedited and of the weights beside it
    (:func:`ctbench.io.read_model_sidecar`), every evaluation sidecar and ``best.json`` is JSON, and every evaluation
    is labelled with one of the paper's experiments (a report from ``--experiment singel`` would have no table)."""
    from ..errors import BadFileError
    from ..facts import EXPERIMENTS
    from ..io import read_json_file, read_model_sidecar

    for m in models:
        read_model_sidecar(m)
    for t in tuned:
        read_json_file(t, "tuning choice")
    for e in evaluations:
        side = Path(f"{e}.json")
        if not side.is_file():
            continue
        meta = read_json_file(side, "evaluation sidecar")
        experiment = meta.get("experiment") if isinstance(meta, dict) else None
        if isinstance(meta, dict) and meta.get("kind") == "counterfactual_evaluation" and experiment not in EXPERIMENTS:
            raise BadFileError(f"evaluation file {e}: its experiment is {experiment!r}, not one of "
                               f"{', '.join(EXPERIMENTS)}, so no table can use it; evaluate again with --experiment "
                               "single (or mutability, ablation)")


def _cmd_report(args) -> int:
    from ..errors import BadFileError
    from ..io import atomic_write_json, recording_writes
    from ..report.common import dataset_labels
    from ..report.run_set import check_versions, code_versions, stale_name, sweep
    from ..report.tables.appendix_tables import write_appendix
    from ..report.tables.paper_tables import PUBLISHED_DIR, write_extras, write_report

    inputs = [*(args.eval or []), *(args.retrain_eval or []), *(args.lenet_eval or []), *(args.robustness or []),
              *(args.attribution or []), *(args.grids or []), *(args.tuned or []),
              *(f"{m}.json" for m in args.models or []), *([args.seed_ledger] if args.seed_ledger else [])]
    missing = [f for f in inputs if not Path(f).is_file()]
    if missing:  # checked before anything is written
        raise BadFileError(f"report: input file(s) not found: {', '.join(missing)}")
    check_sidecars([*(args.eval or []), *(args.retrain_eval or []), *(args.lenet_eval or [])], args.models or [],
                   args.tuned or [])
    if args.retrain_eval:
        from ..report.claims.seeds import check_seed_inputs

        check_seed_inputs([*(args.eval or []), *args.retrain_eval])
    by_kind = {"evaluations": args.eval, "retrain": args.retrain_eval, "lenet": args.lenet_eval,
               "models": args.models, "robustness": args.robustness, "attribution": args.attribution,
               "grids": args.grids, "tuning": args.tuned, "consistency": args.consistency}
    # one code version (and, publishing, no uncommitted changes) or nothing is written
    versions = check_versions(code_versions({k: v for k, v in by_kind.items() if v}),
                              allow_mixed=args.allow_mixed, publish=args.publish)
    out = Path(args.out)
    published = None if args.published == "none" else (args.published or PUBLISHED_DIR)
    before = set(out.rglob("*")) if out.is_dir() else set()
    made: set[Path] = set()
    try:
        with recording_writes() as made, dataset_labels(registered_labels()):
            written = _write_tables(args, out, published, versions, write_report, write_extras, write_appendix)
    except (ValueError, OSError, KeyboardInterrupt):
        _remove_new(out, before, made)
        raise
    except Exception as err:  # a table that cannot be computed from these inputs: no partial report, one line
        _remove_new(out, before, made)
        detail = str(err).splitlines()[0] if str(err) else "no detail"
        raise BadFileError(f"report: the tables cannot be computed from the given files ({type(err).__name__}: "
                           f"{detail}); nothing was written to {out}. Check that the evaluations hold CT (full) and "
                           "BL (vanilla) models with finite metrics") from None
    # the folder holds this run's files only, before the claims are judged on it (verdicts.* are rewritten below)
    # verdicts_seeds.*: per training seed, judged here unless the ledger job did (--seed-ledger: its files stay)
    judged = ("", "_seeds") if (args.eval or args.retrain_eval) and not args.seed_ledger else ("",)
    rewritten = {(out / f"verdicts{k}.{s}").resolve() for s in ("csv", "md") for k in judged} if args.claims else set()
    if args.claims and len(judged) > 1:  # the Table-1 cells per training seed (claims.cell_seeds)
        rewritten.add((out / "table1_seeds.csv").resolve())
    ledger = _ledger_files(args.seed_ledger)
    kept, moved = sweep(out, made | rewritten | ledger, args.stages,
                        own=("report_figures",) if args.figures else ())
    if moved:
        print(f"ignored {len(moved)} file(s) not made by this run (a stage switched off, or an output no longer "
              f"written), moved to {stale_name(out)}: {', '.join(moved)}")
    if args.claims:
        from ..report.claims import write_verdicts

        with dataset_labels(registered_labels()):
            seeds, cells = _seed_verdicts(args, out)
            write_verdicts(args.claims, out, seeds=seeds, cells=cells, write_seeds=not args.seed_ledger)
        written["verdicts"] = "verdicts.csv"
        if seeds is not None:
            written["verdicts_seeds"] = "verdicts_seeds.csv"
            written["table1_seeds"] = "table1_seeds.csv"
    index = json.loads((out / "index.json").read_text()) if (out / "index.json").exists() else {}
    index["run"] = {"stages": args.stages, "files": sorted({*kept, *(p.name for p in rewritten)}),
                    "moved_aside": moved, "mixed": versions["mixed"]}
    atomic_write_json(out / "index.json", index)
    if versions["mixed"]:
        print(f"warning: mixed result set (--allow-mixed): code versions {versions['code_versions']}")
    print(f"wrote to {out}: {', '.join(written) or 'nothing (no inputs)'}")
    tables = [k for k, v in written.items() if isinstance(v, dict) and "csv" in v]
    given = [o for o in ("eval", "robustness", "attribution", "grids", "consistency") if getattr(args, o)]
    if given and not tables:
        import sys

        print(f"ctbench: error: report: no table could be computed from the given --{', --'.join(given)} "
              "file(s): they hold no rows of the paper's experiments (single, mutability, ablation) or no rows at "
              "all; check the inputs", file=sys.stderr)
        return 1
    return 0


def _write_tables(args, out, published, versions, write_report, write_extras, write_appendix) -> dict:
    from ..report.settings import report_settings

    settings = report_settings({"ip_star_nan_groups": args.ip_star_nan_groups})
    written = write_report(out, evaluations=args.eval or [], robustness=args.robustness or [],
                           attribution=args.attribution or [], published_dir=published,
                           benchmarks_dir=args.benchmarks, n_boot=args.n_boot, settings=settings)
    written.update(write_extras(out, evaluations=args.eval or [], models=args.models or [],
                                tuned=args.tuned or [], grids=args.grids or [], profile=args.profile,
                                config=_config_json(args.config_json), versions=versions,
                                sources=_data_sources(args.models or []), settings=settings))
    # appendix Tables 2, 4-6 and Figures 30-65 (composed here: report.appendix builds on report.tables)
    written.update(write_appendix(out, grids=args.grids or [], models=args.models or [],
                                  tuned=args.tuned or [], tuning_figures=False))
    if args.figures:  # else the workflow's report_figures job (ctbench report-figures) draws them
        from ..report.figures.report_figures import write_report_figures

        written.update(write_report_figures(out, grids=args.grids or [], robustness=args.robustness or []))
    if args.lenet_eval:  # after Table 1 and the unconstrained-cost table: the MLP's cells go beside LeNet's
        from ..report.tables.lenet_table import write_lenet_table

        written.update(write_lenet_table(out, args.lenet_eval, written, published, settings))
    if args.consistency:
        from ..report.tables.consistency_tables import write_consistency

        written.update(write_consistency(out, args.consistency, published))
    return written


def _seed_verdicts(args, out: Path):
    """The claims judged once per training seed (:mod:`ctbench.report.claims.seeds`) on the ``--eval`` and
    ``--retrain-eval`` files, robustness, attribution and training times, and the Table-1 cells per seed
    (``table1_seeds.csv``); (None, None) without evaluation files. The extra seeds of ``--retrain-eval`` reach
    these only, never the pooled tables. With ``--seed-ledger`` (the workflow's ``report_seed_ledger`` job) the
    per-seed verdicts are read from that job's files instead of computed (cells None: its file stays)."""
    from ..report.claims.ledger import read_seed_ledger

    if args.seed_ledger:
        return read_seed_ledger(args.seed_ledger), None
    if not (args.eval or args.retrain_eval):
        return None, None
    return _compute_ledger(args)


def _compute_ledger(args):
    """(per-seed verdicts, Table-1 cells per seed) of ``args``' inputs: :func:`ctbench.report.claims.ledger
    .compute_seed_ledger`, the same for ``ctbench report`` and ``ctbench report-seed-ledger``."""
    from ..report.claims.ledger import compute_seed_ledger
    from ..report.settings import report_settings

    return compute_seed_ledger(args.claims, evaluations=args.eval or [], retrain=args.retrain_eval or [],
                               robustness=args.robustness or [], attribution=args.attribution or [],
                               models=args.models or [],
                               settings=report_settings({"ip_star_nan_groups": args.ip_star_nan_groups}))


def _ledger_files(manifest: str | None) -> set[Path]:
    """The resolved files of the per-seed ledger job beside ``manifest`` (none without one): the report keeps them
    (its sweep would otherwise move them aside as files it did not write) and lists them in its ``index.json``."""
    if not manifest:
        return set()
    from ..report.claims.ledger_files import FILES

    folder = Path(manifest).parent
    return {(folder / f).resolve() for f in FILES if (folder / f).is_file()}


def _cmd_report_seed_ledger(args) -> int:
    """The per-seed ledger alone (:mod:`ctbench.report.claims.ledger`): the workflow's ``report_seed_ledger`` job,
    whose ``seed_ledger.json`` ``ctbench report --seed-ledger`` reads."""
    from ..errors import BadFileError, ConfigError
    from ..io import recording_writes
    from ..report.claims.ledger import write_seed_ledger
    from ..report.claims.seeds import check_seed_inputs
    from ..report.common import dataset_labels

    evals = [*(args.eval or []), *(args.retrain_eval or [])]
    if not evals:
        raise ConfigError("report-seed-ledger: no --eval or --retrain-eval files, so no claim can be judged per seed")
    inputs = [*evals, *(args.robustness or []), *(args.attribution or []), *(f"{m}.json" for m in args.models or []),
              args.claims]
    missing = [f for f in inputs if not Path(f).is_file()]
    if missing:  # checked before anything is written
        raise BadFileError(f"report-seed-ledger: input file(s) not found: {', '.join(missing)}")
    check_sidecars(evals, args.models or [])
    check_seed_inputs(evals)
    out = Path(args.out)
    made: set[Path] = set()
    try:
        with recording_writes() as made, dataset_labels(registered_labels()):
            long, cells = _compute_ledger(args)
            manifest = write_seed_ledger(out, long, cells)
    except BaseException:  # a half-written ledger is no ledger: its own new files go, no other job's
        _remove_new(out, set(), made)
        raise
    print(f"per-seed ledger in {out}: {len(long)} claim x seed verdict(s), {len(cells)} Table-1 cell(s) per seed "
          f"→ {manifest.name}")
    return 0


def _data_sources(models: list[str]) -> dict[str, tuple[str, str]]:
    """Dataset name → (source, licence) of the raw files its loader reads (the data catalogue), for the report's
    dataset table; datasets generated from a seed have none."""
    import json

    from ..data import raw_files
    from ..data.catalogue import FILES

    out: dict[str, tuple[str, str]] = {}
    for m in models:
        side = Path(f"{m}.json")
        ds = json.loads(side.read_text()).get("dataset") if side.is_file() else None
        name = ds.get("name") if isinstance(ds, dict) else None
        if not name or name in out:
            continue
        try:
            files = [FILES[f] for f in raw_files(name) if f in FILES]
        except (KeyError, ValueError, OSError):
            files = []
        if files:
            out[name] = ("; ".join(sorted({f.source_url for f in files})),
                         "; ".join(sorted({f.licence for f in files})))
    return out


def _remove_new(out: Path, before: set[Path], made: set[Path]) -> None:
    """Remove what a failed report wrote: the files it made (``made``, resolved) that were not there before it
    started, then the folders that were new and are left empty. Files another job wrote into the folder meanwhile
    (the workflow's report_figures or figure jobs run beside it) stay."""
    if not out.is_dir():
        return
    old = {p.resolve() for p in before}
    for p in made - old:
        p.unlink(missing_ok=True)
    new_dirs = [p for p in out.rglob("*") if p.is_dir() and p.resolve() not in old]
    for d in sorted(new_dirs, key=lambda q: len(q.parts), reverse=True):
        if not any(d.iterdir()):
            d.rmdir()
    if not before and out.is_dir() and not any(out.iterdir()):
        out.rmdir()


def _cmd_compare(args) -> int:
    from ..config import ConfigError
    from ..report.tables.compare import Tolerance, compare_reports

    for folder in (args.committed, args.fresh):
        if not Path(folder).is_dir():
            raise ConfigError(f"compare: {folder} is not a folder; give two report folders (ctbench report --out)")
    moved = compare_reports(args.committed, args.fresh, Tolerance(rtol=args.rtol, atol=args.atol),
                            additions=args.strict, slice_of=args.slice)
    if moved.empty:
        print(f"no number moved beyond rtol={args.rtol:g}, atol={args.atol:g} ({args.fresh} vs {args.committed})")
        return 0
    print(moved.to_string(index=False, max_colwidth=60))
    print(f"{len(moved)} cell(s) moved or missing beyond rtol={args.rtol:g}, atol={args.atol:g}")
    return 1


def _cmd_book(args) -> int:
    from ..report.book.build import build_book, committed_results
    from ..report.common import dataset_labels

    report = args.report
    if report is None:
        report = committed_results(args.book)
        print(f"building from the committed result set {report} (pass --report DIR for another)")
    with dataset_labels(registered_labels()):
        html = build_book(report, args.book, args.out, strict=args.strict, claims_yaml=args.claims)
    print(f"built {html}")
    return 0


def _cmd_appendix(args) -> int:
    import json

    from ..errors import BadFileError
    from ..io import atomic_write_json
    from ..report.common import dataset_labels
    from ..report.tables.appendix_tables import write_appendix

    inputs = [*(args.grids or []), *(args.tuned or []), *(f"{m}.json" for m in args.models or [])]
    missing = [f for f in inputs if not Path(f).is_file()]
    if missing:
        raise BadFileError(f"appendix: input file(s) not found: {', '.join(missing)}")
    check_sidecars([], args.models or [], args.tuned or [])
    out = Path(args.out)
    with dataset_labels(registered_labels()):
        written = write_appendix(out, grids=args.grids or [], models=args.models or [], tuned=args.tuned or [])
    index = out / "index.json"
    if index.exists():  # an existing report: list the new outputs next to the others
        meta = json.loads(index.read_text())
        meta.setdefault("written", {}).update(written)
        atomic_write_json(index, meta)
    print(f"wrote {', '.join(sorted(written))} to {out}")
    return 0


def _cmd_stage_times(args) -> int:
    """CPU time per stage from every ``benchmark:`` record, the report's and the book's included (they are written
    only once those jobs have ended, so the workflow's last job writes this table again)."""
    from ..io import atomic_write_text
    from ..report.markdown import frame_to_markdown
    from ..report.tables.stage_times import job_records, stage_times

    jobs = job_records(args.benchmarks)
    df = stage_times(args.benchmarks, jobs)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, df.to_csv(index=False))
    atomic_write_text(out.with_suffix(".md"), frame_to_markdown(df, digits=3))
    if args.jobs_out:
        Path(args.jobs_out).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(Path(args.jobs_out), jobs.to_csv(index=False))
    print(f"{len(df) - 1 if len(df) else 0} stage(s) from {args.benchmarks} → {out}")
    return 0


def _cmd_gallery(args) -> int:
    from ..report.gallery import write_gallery

    written = write_gallery(args.report, args.out)
    print(f"gallery {args.out}: " + ", ".join(f"{s} {len(f)}" for s, f in written.items() if f))
    return 0


def add_cli(sub) -> None:
    """Register ``report``, ``appendix``, ``compare``, ``book`` and ``gallery``."""
    rp = sub.add_parser("report", help="the paper's tables and figures from evaluation outputs")
    rp.add_argument("--eval", nargs="*", help="outputs of ctbench evaluate")
    rp.add_argument("--retrain-eval", dest="retrain_eval", nargs="*",
                    help="more evaluation files of other training seeds (same format as --eval), used only to judge "
                         "each claim per seed (verdicts.csv's seed_share, verdicts_seeds.csv); the paper's tables "
                         "stay on the --eval files")
    rp.add_argument("--lenet-eval", dest="lenet_eval", nargs="*",
                    help="evaluation files of the lenet stage's LeNet pair (same format as --eval): table1_lenet.csv "
                         "only, LeNet's Table-1-style cells beside the MLP's; the paper's tables stay on --eval")
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
    rp.add_argument("--ip-star-nan-groups", dest="ip_star_nan_groups", choices=("drop", "withhold"), default="drop",
                    help="IP* groups with fewer than 2 counterfactuals (NaN; MNIST): 'drop' them from the means as "
                         "the authors' code does (default, the NaN share noted on the cell) or 'withhold' a cell with "
                         "more than 10%% NaN values as not computable (ctbench.report.settings)")
    rp.add_argument("--stages", nargs="*", default=None,
                    help="the other stages this run enables that write into the report folder (figure1, "
                         "mnist_figures, prop31, fidelity_study; the workflow passes them): their files stay, every "
                         "other file this report did not write is moved to <out>.stale/. Default: keep every other "
                         "stage's files")
    rp.add_argument("--no-figures", dest="figures", action="store_false",
                    help="leave the figures that need no table (grids/, tuning/, robustness.png) to `ctbench "
                         "report-figures` (the workflow runs it as a job of its own); their files in --out stay")
    rp.add_argument("--seed-ledger", dest="seed_ledger",
                    help="seed_ledger.json of `ctbench report-seed-ledger` (the workflow's report_seed_ledger job) "
                         "in --out: the per-seed verdicts are read from its files (they stay) instead of computed")
    rp.add_argument("--allow-mixed", dest="allow_mixed", action="store_true",
                    help="build a report whose inputs carry different code versions, marked mixed in "
                         "provenance.json and on the book's first page (default: refused, exit code 2)")
    rp.add_argument("--publish", action="store_true",
                    help="also refuse inputs made with uncommitted changes (the config's report: {publish: true})")
    rp.add_argument("--out", required=True, help="report folder")
    rp.set_defaults(func=_cmd_report)

    sl = sub.add_parser("report-seed-ledger",
                        help="every claim judged per training seed (verdicts_seeds.csv, table1_seeds.csv) into the "
                             "report folder; `ctbench report --seed-ledger` reads it")
    sl.add_argument("--eval", nargs="*", help="outputs of ctbench evaluate (as for ctbench report)")
    sl.add_argument("--retrain-eval", dest="retrain_eval", nargs="*",
                    help="evaluation files of more training seeds (the retrain stage's)")
    sl.add_argument("--robustness", nargs="*", help="outputs of ctbench robustness")
    sl.add_argument("--attribution", nargs="*", help="outputs of ctbench attribution")
    sl.add_argument("--models", nargs="*", help="saved models (.pt): their training times per seed")
    sl.add_argument("--claims", required=True, help="claims.yaml")
    sl.add_argument("--ip-star-nan-groups", dest="ip_star_nan_groups", choices=("drop", "withhold"), default="drop",
                    help="as for ctbench report (ctbench.report.settings)")
    sl.add_argument("--out", required=True, help="the report folder (ctbench report --out)")
    sl.set_defaults(func=_cmd_report_seed_ledger)

    cp = sub.add_parser("compare", help="which numbers of a fresh report moved against the committed result set")
    cp.add_argument("fresh", help="the fresh report folder, e.g. results/paper/report")
    cp.add_argument("--committed", default="paper/results/report", help="default: paper/results/report")
    cp.add_argument("--rtol", type=float, default=1e-6, help="relative tolerance (default 1e-6)")
    cp.add_argument("--atol", type=float, default=1e-9, help="absolute tolerance (default 1e-9)")
    cp.add_argument("--strict", action="store_true",
                    help="also fail on tables, rows or columns only the fresh set has (the must-not-change check)")
    cp.add_argument("--slice", action="store_true",
                    help="the fresh set is a slice of the committed one (the verify profile): compare every number "
                         "it makes, list what the committed set lacks, ignore tables and rows that pool the whole set")
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

    p = sub.add_parser("appendix", help="appendix Tables 2 and 4-6 and the tuning figures (30-65) from the "
                                               "grid chunk CSVs, final model files and best.json files")
    p.add_argument("--grids", nargs="*", help="chunk CSVs of ctbench grid run (grid searches and tuning)")
    p.add_argument("--models", nargs="*", help="final model files (.pt; their .pt.json sidecars are read)")
    p.add_argument("--tuned", nargs="*", help="best.json files of the tuning stage")
    p.add_argument("--out", required=True, help="report folder (its index.json, if any, is updated)")
    p.set_defaults(func=_cmd_appendix)

    ga = sub.add_parser("gallery", help="sort a report folder into one folder per stage (Snakemake's report)")
    ga.add_argument("--report", required=True, help="report folder (ctbench report --out)")
    ga.add_argument("--out", required=True, help="gallery folder, one sub-folder per stage")
    ga.set_defaults(func=_cmd_gallery)

    st = sub.add_parser("stage-times", help="CPU time per stage from a folder of Snakemake benchmark records")
    st.add_argument("--benchmarks", required=True, help="folder of Snakemake benchmark files (<stage>/<job>.tsv)")
    st.add_argument("--out", required=True, help="CSV file (a Markdown copy is written beside it)")
    st.add_argument("--jobs-out", dest="jobs_out", default=None,
                    help="CSV file of every job's record (stage, job, wall, CPU, peak RSS, which record): the input "
                         "of benchmarks/critical_path.py --records")
    st.set_defaults(func=_cmd_stage_times)
