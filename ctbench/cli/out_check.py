"""The check every command's ``--out`` passes before anything is written: it must not be one of the command's input
files (its own module so that a command module can run it, ``ctbench each``, without importing ``ctbench.cli``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

#: the arguments that name input files (``NAME=PATH`` values included); ``--out`` names the output
_INPUT_ARGS = ("model", "config", "factuals", "eval", "robustness", "attribution", "grids", "models", "tuned",
               "consistency", "claims", "best", "baseline", "ct", "bl", "csv", "inputs", "reuse", "published",
               "report", "benchmarks", "fresh", "committed")
#: files a command writes next to ``--out`` (sidecars, the grid run's epoch log)
_OUT_COMPANIONS = ("", ".json", ".epochs.csv")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_out_is_not_an_input(args: argparse.Namespace) -> None:
    """Refuse, before anything is written, an ``--out`` (or a file written beside it: ``OUT.json``,
    ``OUT.epochs.csv``) that is one of the command's input files or an input's sidecar: it would overwrite the input
    (``evaluate --model CT=m.pt --out m.pt``, ``train --config c.yaml --out c.yaml``, ``generate --factuals x.csv
    --out x.csv``)."""
    from ..errors import UserInputError

    out = getattr(args, "out", None)
    if not isinstance(out, (str, list)) or not out:
        return
    outs = [Path(f"{o}{suffix}") for o in ([out] if isinstance(out, str) else out) for suffix in _OUT_COMPANIONS]
    for name in _INPUT_ARGS:
        given = getattr(args, name, None)
        for value in [given] if isinstance(given, str) else (given or []):
            if not isinstance(value, str) or not value:
                continue
            path = Path(value.split("=", 1)[1] if "=" in value and not Path(value).exists() else value)
            if path.is_dir():
                continue
            for o in outs:
                if any(_same_file(o, Path(f"{path}{suffix}")) for suffix in ("", ".json")):
                    raise UserInputError(f"--out {o}: this is the input --{name.replace('_', '-')} {value} (or its "
                                         ".json sidecar); writing it would overwrite the input. Give another --out "
                                         "path")
