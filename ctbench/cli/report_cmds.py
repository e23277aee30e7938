"""``ctbench report``, ``appendix``, ``compare``, ``book`` and ``gallery``: the report layer's commands."""

from __future__ import annotations

from pathlib import Path


def _config_json(text: str | None) -> dict | None:
    import json

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


def _cmd_report(args) -> int:
    from ..errors import BadFileError
    from ..report.tables.appendix_tables import write_appendix
    from ..report.tables.paper_tables import PUBLISHED_DIR, write_extras, write_report

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
    # appendix Tables 2, 4-6 and Figures 30-65 (composed here: report.appendix builds on report.tables)
    written.update(write_appendix(args.out, grids=args.grids or [], models=args.models or [],
                                  tuned=args.tuned or []))
    if args.consistency:
        from ..report.tables.consistency_tables import write_consistency

        written.update(write_consistency(args.out, args.consistency, published))
    if args.claims:
        from ..report.claims import write_verdicts

        write_verdicts(args.claims, args.out)
        written["verdicts"] = "verdicts.csv"
    print(f"wrote to {args.out}: {', '.join(written) or 'nothing (no inputs)'}")
    return 0


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

    report = args.report
    if report is None:
        report = committed_results(args.book)
        print(f"building from the committed result set {report} (pass --report DIR for another)")
    html = build_book(report, args.book, args.out, strict=args.strict, claims_yaml=args.claims)
    print(f"built {html}")
    return 0


def _cmd_appendix(args) -> int:
    import json

    from ..errors import BadFileError
    from ..io import atomic_write_json
    from ..report.tables.appendix_tables import write_appendix

    inputs = [*(args.grids or []), *(args.tuned or []), *(f"{m}.json" for m in args.models or [])]
    missing = [f for f in inputs if not Path(f).is_file()]
    if missing:
        raise BadFileError(f"appendix: input file(s) not found: {', '.join(missing)}")
    out = Path(args.out)
    written = write_appendix(out, grids=args.grids or [], models=args.models or [], tuned=args.tuned or [])
    index = out / "index.json"
    if index.exists():  # an existing report: list the new outputs next to the others
        meta = json.loads(index.read_text())
        meta.setdefault("written", {}).update(written)
        atomic_write_json(index, meta)
    print(f"wrote {', '.join(sorted(written))} to {out}")
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
