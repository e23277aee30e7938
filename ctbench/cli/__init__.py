"""The ``ctbench`` command line: the commands the workflow rules and people call."""

# Modules: train_cmds (train, generate), data_cmds (data ...), eval_cmds (evaluate, robustness, attribution),
# grid_cmds (grid ..., tune select), figure_cmds (figure1, mnist-figures), study_cmds (fidelity-effect(s-merge),
# consistency, prop31, bench), report_cmds (report, appendix, compare, book, gallery). The only argparse in ctbench:
# the experiments (ctbench.experiments) and the report take plain arguments.

from __future__ import annotations

import argparse
import sys

from . import data_cmds, eval_cmds, figure_cmds, grid_cmds, report_cmds, study_cmds, train_cmds


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ctbench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    train_cmds.add_cli(sub)
    data_cmds.add_cli(sub)
    eval_cmds.add_cli(sub)
    grid_cmds.add_cli(sub)
    figure_cmds.add_cli(sub)
    study_cmds.add_cli(sub)
    report_cmds.add_cli(sub)
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
        from ..report.book.build import BookBuildError
        from ..training import TrainingFailedError

        if isinstance(err, (TrainingFailedError, BookBuildError)):
            print(f"ctbench: error: {err}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
