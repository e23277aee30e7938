"""``ctbench data {summary,prepare,fetch,status}``."""

from __future__ import annotations

from .args import json_object


def _cmd_data_summary(args) -> int:
    import pandas as pd

    from ..data import available, family, load_dataset
    from ..report.markdown import frame_to_markdown

    rows = []
    for name in available():
        if args.datasets and name not in args.datasets:
            continue
        try:
            rows.append({**load_dataset(name, fidelity=args.fidelity).summary(), "family": family(name)})
        except (FileNotFoundError, ValueError) as err:
            rows.append({"dataset": name, "family": family(name), "error": str(err).splitlines()[0]})
    print(frame_to_markdown(pd.DataFrame(rows)), end="")
    return 0


def _cmd_data_prepare(args) -> int:
    from ..data import family, load_dataset
    from ..fidelity import resolve_fidelity
    from ..io import atomic_write_json, provenance

    params = json_object(args.params, "--params")
    # the run's fidelity switches (mode and overrides): data switches such as blob_centers shape the splits
    overrides = json_object(args.fidelity_overrides, "--fidelity-overrides")
    fid = resolve_fidelity(args.fidelity, overrides)
    ds = load_dataset(args.dataset, fidelity=fid, **params)
    info = {"dataset": args.dataset, "family": family(args.dataset), "params": params,
            "fidelity": args.fidelity, "fidelity_overrides": overrides, "summary": ds.summary(),
            "feature_names": ds.feature_names,
            "protected": ds.protected, "categorical_groups": ds.categorical_groups, "domain": ds.domain,
            "meta": ds.meta, "provenance": provenance()}
    atomic_write_json(args.out, info)
    print(f"{args.dataset}: {ds.summary()}")
    return 0


def _cmd_data_fetch(args) -> int:
    from ..data import files

    failed = 0
    for name, outcome in files.fetch_all(args.files or None, raw_dir=args.raw_dir).items():
        print(f"{name}: {outcome}")
        failed += outcome != "ok"
    return 1 if failed else 0


def _cmd_data_status(args) -> int:
    import pandas as pd

    from ..data import files
    from ..report.markdown import frame_to_markdown

    rows = pd.DataFrame(files.status(args.raw_dir))[["file", "status", "path", "licence"]]
    print(frame_to_markdown(rows), end="")
    return 0


def add_cli(sub) -> None:
    """Register ``data`` and its subcommands."""
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
    pr.add_argument("--fidelity-overrides", dest="fidelity_overrides", metavar="JSON",
                    help="fidelity switches over the mode, as JSON, e.g. '{\"blob_centers\": \"calibrated\"}'")
    pr.add_argument("--out", required=True)
    pr.set_defaults(func=_cmd_data_prepare)
    f = dsub.add_parser("fetch", help="download missing raw files from their canonical sources and verify sha256")
    f.add_argument("files", nargs="*", help="file names (default: every file)")
    f.add_argument("--raw-dir", dest="raw_dir", help="target folder (default: $CTBENCH_DATA or data/raw)")
    f.set_defaults(func=_cmd_data_fetch)
    st = dsub.add_parser("status", help="which raw files are present and verified")
    st.add_argument("--raw-dir", dest="raw_dir")
    st.set_defaults(func=_cmd_data_status)
