"""``ctbench check-config``: the workflow's start-up check, by hand, with one-line messages where Snakemake's own
argument and config-file parsing (which runs before any ctbench code) would print a traceback or no file name."""

from __future__ import annotations

from pathlib import Path


def _cmd_check_config(args) -> int:
    from ..errors import ConfigError
    from ..workflow import Workflow
    from ..workflow_check import typed_config

    root = Path(__file__).resolve().parents[2]
    files = [root / "workflow/config/paper.yaml", *args.configfile]  # the Snakefile's `configfile:` comes first
    cli: dict = {}
    for item in args.config or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--config {item!r}: expected KEY=VALUE, e.g. --config results=results/mine")
        if "." in key:
            head, _, rest = key.partition(".")
            raise ConfigError(f"--config {item!r}: Snakemake takes top-level keys only; set a nested value as a "
                              f"mapping: --config '{head}={{{rest.replace('.', ': {')}: {value}"
                              f"{'}' * (rest.count('.') + 1)}'")
        cli[key] = value
    config = typed_config(files, cli)
    Workflow(config).check(str(root / "workflow/schemas/config.schema.yaml"))
    print(f"ok: {', '.join(map(str, args.configfile)) or 'workflow/config/paper.yaml'}"
          f"{' with --config ' + ' '.join(args.config) if args.config else ''} passes the start-up check")
    return 0


def add_cli(sub) -> None:
    """Register ``check-config``."""
    c = sub.add_parser("check-config", help="the workflow's start-up check of config files and --config values")
    c.add_argument("configfile", nargs="*", type=Path, help="config files, as given to snakemake --configfile")
    c.add_argument("--config", nargs="*", metavar="KEY=VALUE", help="values as given to snakemake --config")
    c.set_defaults(func=_cmd_check_config)
