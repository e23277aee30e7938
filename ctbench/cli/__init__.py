"""The ``ctbench`` command line: the commands the workflow rules and people call."""

# Modules: train_cmds (train, generate), data_cmds (data ...), eval_cmds (evaluate, robustness, attribution),
# grid_cmds (grid ..., tune select), figure_cmds (figure1, mnist-figures), study_cmds (fidelity-effect(s-merge),
# consistency, prop31), bench_cmds (bench), report_cmds (report, appendix, compare, book, gallery,
# stage-times), report_figure_cmds (report-figures). The only argparse in ctbench:
# the experiments (ctbench.experiments) and the report take plain arguments.

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..runtime import single_malloc_arena

single_malloc_arena()  # before numpy's import starts threads: a search's worker threads share the main arena

from . import (  # noqa: E402
    bench_cmds,
    check_cmds,
    data_cmds,
    eval_cmds,
    figure_cmds,
    grid_cmds,
    report_cmds,
    report_figure_cmds,
    study_cmds,
    train_cmds,
)
from .out_check import check_out_is_not_an_input  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ctbench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    train_cmds.add_cli(sub)
    data_cmds.add_cli(sub)
    eval_cmds.add_cli(sub)
    grid_cmds.add_cli(sub)
    figure_cmds.add_cli(sub)
    study_cmds.add_cli(sub)
    bench_cmds.add_cli(sub)
    report_cmds.add_cli(sub)
    report_figure_cmds.add_cli(sub)
    check_cmds.add_cli(sub)
    return p


#: a folder where a failing command leaves a record of its own (the workflow sets it to ``<results>/logs/failed``):
#: Snakemake deletes a job's log before it runs the job, so a second clone running the same job into the same
#: results folder would erase the first one's reason for failing; the record's name is unique to the process
FAILURE_LOGS = "CTBENCH_FAILURE_LOGS"


def _record_failure(argv: list[str], rc: int, message: str) -> None:
    folder = os.environ.get(FAILURE_LOGS)
    if not folder:
        return
    import socket
    import tempfile
    import time

    try:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        name = next((a for a in argv if not a.startswith("-")), "ctbench")
        Path(folder).mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f"{stamp}_{socket.gethostname()}_{os.getpid()}_{name}_", suffix=".log",
                                   dir=folder)  # a name no other process (or call) can take
        os.close(fd)
        Path(tmp).write_text(f"exit code: {rc}\ncommand: ctbench {' '.join(argv)}\nworking directory: {os.getcwd()}\n"
                        f"host: {socket.gethostname()}, pid {os.getpid()}, {stamp} UTC\n\n{message}\n")
    except OSError:  # a record must never hide the error itself
        pass


def main(argv: list[str] | None = None) -> int:
    """:func:`run` (below); a failure also leaves a record of its own under ``$CTBENCH_FAILURE_LOGS``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not os.environ.get(FAILURE_LOGS):
        return run(argv)
    import io

    kept, stderr = io.StringIO(), sys.stderr

    class _Tee(io.TextIOBase):  # what the command says on stderr goes to the log and into the record
        def write(self, text: str) -> int:
            kept.write(text)
            return stderr.write(text)

        def flush(self) -> None:
            stderr.flush()

    sys.stderr = _Tee()
    try:
        rc = run(argv)
    except BaseException:
        import traceback

        _record_failure(argv, 1, kept.getvalue()[-20000:] + traceback.format_exc())
        raise
    finally:
        sys.stderr = stderr
    if rc:
        _record_failure(argv, rc, kept.getvalue()[-20000:])
    return rc


def run(argv: list[str] | None = None) -> int:
    """Run one command. A bad setting, argument or file (``ctbench.errors.UserInputError`` and the ``ValueError`` /
    ``OSError`` of a bad value or path) is one line ``ctbench: error: ...`` and exit code 2, as argparse's own usage
    errors; a training run that failed (diverged, did not learn) or a failed book build is exit code 1."""
    args = build_parser().parse_args(argv)
    try:
        check_out_is_not_an_input(args)
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
