"""A workflow job's own CPU record: ``python -m ctbench.cpu_record RECORD COMMAND...`` runs the command and writes
what the kernel counted for it (issue 21).

Snakemake's ``benchmark:`` samples psutil's ``cpu_percent`` (every 0.5 s, then every 30 s) and loses a process's
first interval and everything after the last sample: about 20% of the jobs' CPU is missing from its records
(benchmarks/README.md, "The records under-count"). Here the command runs as a child and ``os.wait4`` returns the
kernel's exact account of it, its own children (a book's ``sphinx-build``) included: user and system seconds and the
largest resident set. The record is JSON beside the job's Snakemake record (``X.tsv`` → ``X.cpu.json``);
``ctbench stage-times`` prefers it. Not counted: this wrapper's own start (a Python without numpy, ≈ 0.03 CPU-s).
No ``ctbench`` command imports this module, so wrapping a rule's command changes no code fingerprint.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: the suffix that replaces ``.tsv`` of the Snakemake record
SUFFIX = ".cpu.json"
#: the record's fields
FIELDS = ("user_seconds", "system_seconds", "cpu_seconds", "wall_seconds", "max_rss_mb", "exit_code")


def record_path(benchmark: str | Path) -> Path:
    """The own record beside a Snakemake benchmark record ``<stage>/<job>.tsv``."""
    p = Path(benchmark)
    return p.with_name(p.name.removesuffix(".tsv") + SUFFIX)


def run(record: str | Path, command: list[str]) -> int:
    """Run ``command`` (no shell), write its record, return its exit code (128 + signal when a signal ended it). A
    record left by an earlier run of the job is removed first, so a record is always this run's."""
    record = Path(record)
    record.unlink(missing_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(command)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the child (same group); wait for it
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    finally:
        signal.signal(signal.SIGINT, previous)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    code = 128 - code if code < 0 else code
    values = {"user_seconds": ru.ru_utime, "system_seconds": ru.ru_stime, "cpu_seconds": ru.ru_utime + ru.ru_stime,
              "wall_seconds": wall, "max_rss_mb": ru.ru_maxrss / 1024, "exit_code": code}
    record.parent.mkdir(parents=True, exist_ok=True)
    tmp = record.with_name(f".{record.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in values.items()}) + "\n")
    os.replace(tmp, record)
    return code


def read(record: str | Path) -> dict[str, float] | None:
    """The fields of a record, or None where there is none, it is unreadable or the command failed."""
    try:
        data = json.loads(Path(record).read_text())
        values = {k: float(data[k]) for k in FIELDS}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return values if values["exit_code"] == 0 else None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[1:2] == ["--"]:
        argv = [argv[0], *argv[2:]]
    if len(argv) < 2:
        print("usage: python -m ctbench.cpu_record RECORD COMMAND [ARGS...]", file=sys.stderr)
        return 2
    try:
        return run(argv[0], argv[1:])
    except FileNotFoundError as err:
        print(f"ctbench.cpu_record: error: {err}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
