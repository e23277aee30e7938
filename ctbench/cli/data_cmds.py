"""``ctbench data {summary,prepare,fetch,status}``."""

from __future__ import annotations


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
    import json

    from ..config import ConfigError
    from ..data import family, load_dataset
    from ..io import atomic_write_json, provenance

    try:
        params = json.loads(args.params) if args.params else {}
    except json.JSONDecodeError as err:
        raise ConfigError(f"--params: not valid JSON ({err}): {args.params!r}") from None
    if not isinstance(params, dict):
        raise ConfigError(f"--params: expected a JSON object such as '{{\"n_draws\": 5000}}', got {args.params!r}")
    ds = load_dataset(args.dataset, fidelity=args.fidelity, **params)
    info = {"dataset": args.dataset, "family": family(args.dataset), "params": params,
            "fidelity": args.fidelity, "summary": ds.summary(), "feature_names": ds.feature_names,
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
    pr.add_argument("--out", required=True)
    pr.set_defaults(func=_cmd_data_prepare)
    f = dsub.add_parser("fetch", help="download missing raw files from their canonical sources and verify sha256")
    f.add_argument("files", nargs="*", help="file names (default: every file)")
    f.add_argument("--raw-dir", dest="raw_dir", help="target folder (default: $CTBENCH_DATA or data/raw)")
    f.set_defaults(func=_cmd_data_fetch)
    st = dsub.add_parser("status", help="which raw files are present and verified")
    st.add_argument("--raw-dir", dest="raw_dir")
    st.set_defaults(func=_cmd_data_status)
