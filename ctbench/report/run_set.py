"""What one report is made of: the files of this run only, and inputs of one code version.

* :func:`sweep` — ``ctbench report`` owns its report folder. After writing, every file of the folder that it did not
  write in this run (:func:`ctbench.io.recording_writes`) and that is not a file of another stage this run enables
  (:data:`STAGE_FILES`; the workflow names them with ``--stages``) is moved aside to ``<report>.stale/``, so the book,
  the gallery and the claims ledger never read a file an earlier run left behind (a stage switched off since then:
  its figure is not shown, its claims get "not yet run"). The report's ``index.json`` lists this run's files.
* :func:`code_versions` / :func:`check_versions` — the code version (``git_commit`` of each input's sidecar) of every
  input. A set of more than one version is refused unless ``allow_mixed`` (then marked ``mixed``), except when every
  input was made by the code this tree has for the input's stage (:func:`current_code`: the stage's code fingerprint,
  :mod:`ctbench.code_version`, at the input's commit equals the tree's): then Snakemake rightly kept it, and it is
  what this tree would make. A publishing report also refuses inputs made with uncommitted changes.
"""

from __future__ import annotations

import atexit
import io
import json
import shutil
import subprocess
import tarfile
import tempfile
from collections import Counter
from fnmatch import fnmatch
from functools import cache
from pathlib import Path
from typing import Any

from ..code_version import ROOT, fingerprint_of
from ..errors import MixedInputsError
from ..io import is_dirty

#: stages other than ``ctbench report`` that write into the report folder → their files there (relative patterns)
STAGE_FILES: dict[str, tuple[str, ...]] = {
    "figure1": ("figure1.*",),
    "black_figure1": ("black_figure1.*",),
    "black_figure2": ("black_figure2.*", "black_figure2_*.csv"),
    "mnist_figures": ("mnist_*",),
    "prop31": ("prop31/*",),
    "fidelity_study": ("fidelity_effects.*",),
    # the figures that need none of the report's tables (ctbench.report.figures.report_figures); `ctbench report`
    # draws them itself unless --no-figures, and then owns them (``sweep(..., own=...)``)
    "report_figures": ("grids/*", "tuning/*", "robustness.png", "robustness.pdf", "report_figures.json"),
}
#: a file without a recorded code version (a hand-made input) does not count towards mixing
UNRECORDED = "unrecorded"
#: the command module (``ctbench.cli.<module>``) that writes each kind of report input: the module whose fingerprint
#: is the ``code=`` param of the rule that makes it (workflow/rules/*.smk)
STAGE_OF_KIND: dict[str, str] = {
    "evaluations": "eval_cmds", "robustness": "eval_cmds", "attribution": "eval_cmds", "retrain": "eval_cmds",
    "lenet": "eval_cmds", "models": "train_cmds", "grids": "grid_cmds", "tuning": "grid_cmds",
    "consistency": "study_cmds"}


def stage_of(rel: str, own: tuple[str, ...] = ()) -> str | None:
    """The other stage (:data:`STAGE_FILES`, but those in ``own``) whose file ``rel`` (relative to the report folder)
    is, else None."""
    return next((s for s, pats in STAGE_FILES.items() if s not in own and any(fnmatch(rel, p) for p in pats)),
                None)


def stale_name(out: Path) -> Path:
    """Where the stale files of report folder ``out`` go: ``<out>.stale/`` beside it."""
    return out.with_name(out.name + ".stale")


def sweep(out: str | Path, written: set[Path], stages: list[str] | None,
          own: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """Move aside every file of ``out`` this run did not make; returns (this run's files, moved files), relative.

    ``written``: resolved paths written by this report. ``stages``: the other stages this run enables (their files
    stay); None when unknown (a report run by hand): then every other stage's file stays. ``own``: stages of
    :data:`STAGE_FILES` whose files this run writes itself (``report_figures`` when the report draws the figures):
    theirs stay only if written now."""
    out = Path(out)
    unknown = sorted(set(stages or ()) - set(STAGE_FILES))
    if unknown:
        raise ValueError(f"report --stages: unknown stage(s) {unknown}; known: {sorted(STAGE_FILES)}")
    return _move_aside(out, lambda rel, p: p.resolve() in written or (
        (stage := stage_of(rel, own)) is not None and (stages is None or stage in stages)))


def sweep_stage(out: str | Path, stage: str, written: set[Path]) -> list[str]:
    """Move aside the files of ``stage`` (:data:`STAGE_FILES`) in report folder ``out`` that this run of the stage
    did not write (``written``: resolved paths), e.g. the figures of a grid no longer run; returns them, relative.
    The report's own files and the other stages' are left alone."""
    out = Path(out)
    patterns = STAGE_FILES[stage]
    return _move_aside(out, lambda rel, p: p.resolve() in written or not any(fnmatch(rel, q) for q in patterns))[1]


def _move_aside(out: Path, keep) -> tuple[list[str], list[str]]:
    """Move every file of ``out`` for which ``keep(relative path, path)`` is false to ``<out>.stale/``, then remove
    the folders that left empty (only those: another job may be writing into a folder it has just made); returns
    (kept, moved), relative. Hidden files (a writer's temporary file, :func:`ctbench.io.atomic_write`, or a stage's
    bookkeeping) are neither."""
    kept, moved = [], []
    for p in sorted(q for q in out.rglob("*") if q.is_file()):
        rel = p.relative_to(out).as_posix()
        if any(part.startswith(".") for part in Path(rel).parts):
            continue
        if keep(rel, p):
            kept.append(rel)
            continue
        target = stale_name(out) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(p), target)
        moved.append(rel)
    emptied = {d for rel in moved for d in (out / rel).parents if d != out and out in d.parents}
    for d in sorted(emptied, key=lambda q: len(q.parts), reverse=True):
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    return kept, moved


def _version(sidecar: Path) -> str:
    try:
        meta = json.loads(sidecar.read_text())
    except (OSError, json.JSONDecodeError):
        return UNRECORDED
    if not isinstance(meta, dict):
        return UNRECORDED
    prov = meta.get("provenance") if isinstance(meta.get("provenance"), dict) else {}
    return str(prov.get("git_commit") or meta.get("git_commit") or UNRECORDED)


def code_versions(inputs: dict[str, list[str | Path]]) -> dict[str, dict[str, list[str]]]:
    """``{kind: {code version: [files]}}`` from each input's ``<file>.json`` sidecar (``<model>.pt.json``)."""
    out: dict[str, dict[str, list[str]]] = {}
    for kind, files in inputs.items():
        for f in files:
            out.setdefault(kind, {}).setdefault(_version(Path(f"{f}.json")), []).append(str(f))
    return out


@cache
def _source_at(commit: str, repo: str) -> Path | None:
    """The ``ctbench`` package folder as of ``commit`` of the git repository ``repo`` (extracted once per commit into
    a temporary folder that lives as long as the process), or None where git cannot give it (no repository, a commit
    this clone lacks, a version with uncommitted changes)."""
    if is_dirty(commit) or not commit.isalnum():
        return None
    try:
        tar = subprocess.run(["git", "-C", repo, "archive", "--format=tar", commit, "ctbench"], capture_output=True,
                             check=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    dest = Path(tempfile.mkdtemp(prefix=f"ctbench-{commit[:7]}-"))
    _EXTRACTED.append(dest)
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(dest, filter="data")
    return dest / "ctbench"


_EXTRACTED: list[Path] = []


def _cleanup() -> None:
    for d in _EXTRACTED:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_cleanup)


def stage_fingerprint(commit: str, module: str, repo: str | Path) -> str | None:
    """The code fingerprint of ``ctbench.cli.<module>`` at ``commit`` (None when unknown)."""
    root = _source_at(commit, str(repo))
    if root is None:
        return None
    try:
        return fingerprint_of((f"ctbench.cli.{module}",), root)
    except ValueError:  # the command module did not exist then
        return None


def _repo_of(root: Path) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True,
                              text=True, check=True, timeout=30).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def current_code(versions: dict[str, dict[str, list[str]]], root: Path | None = None) -> dict[str, dict[str, Any]]:
    """Per input kind: its stage (:data:`STAGE_OF_KIND`), the stage's code fingerprint in the tree at ``root`` (the
    ``ctbench`` folder; default: the one running), and how many recorded inputs were made by that same code
    (``current``: the stage's fingerprint at the input's commit equals the tree's) or by other or unknown code."""
    root = Path(root) if root is not None else ROOT
    repo = _repo_of(root)
    out: dict[str, dict[str, Any]] = {}
    for kind, kv in versions.items():
        module = STAGE_OF_KIND.get(kind)
        now = fingerprint_of((f"ctbench.cli.{module}",), root) if module else None
        counts = {"current": 0, "other": 0}
        for v, files in kv.items():
            if v == UNRECORDED:
                continue
            same = now is not None and repo is not None and stage_fingerprint(v, module, repo) == now
            counts["current" if same else "other"] += len(files)
        out[kind] = {"stage": module, "code": now, **counts}
    return out


def summary(versions: dict[str, dict[str, list[str]]], root: Path | None = None) -> dict[str, Any]:
    """For ``provenance.json``: per kind the number of files per version, the versions over all inputs with their
    counts, the stage code of each kind (:func:`current_code`; with several versions only), and ``mixed``: more
    than one recorded version, unless every recorded input was made by the code this tree has for its stage."""
    total: Counter[str] = Counter()
    for kind in versions.values():
        for v, files in kind.items():
            total[v] += len(files)
    recorded = sorted(v for v in total if v != UNRECORDED)
    out = {"input_code_versions": {k: {v: len(fs) for v, fs in sorted(kv.items())} for k, kv in versions.items()},
           "code_versions": dict(sorted(total.items())), "mixed": len(recorded) > 1,
           "dirty_inputs": sum(n for v, n in total.items() if is_dirty(v))}
    if len(recorded) > 1:
        stage_code = current_code(versions, root)
        out["stage_code"] = stage_code
        out["mixed"] = any(k["other"] for k in stage_code.values())
    return out


def _listing(versions: dict[str, dict[str, list[str]]], keep) -> str:
    lines = []
    for kind, kv in versions.items():
        for v, files in sorted(kv.items()):
            if keep(v):
                shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
                lines.append(f"  {kind}: {v} ({len(files)} file(s): {shown})")
    return "\n".join(lines)


def check_versions(versions: dict[str, dict[str, list[str]]], *, allow_mixed: bool = False,
                   publish: bool = False, root: Path | None = None) -> dict[str, Any]:
    """:func:`summary` of the inputs, or :class:`~ctbench.errors.MixedInputsError` (exit code 2) naming the files and
    versions when they carry more than one code version (unless ``allow_mixed``) or, with ``publish``, uncommitted
    changes."""
    s = summary(versions, root)
    if s["mixed"] and not allow_mixed:
        n = len([v for v in s["code_versions"] if v != UNRECORDED])
        stale = ", ".join(f"{k} ({c['other']} of {c['current'] + c['other']}, stage {c['stage']})"
                          for k, c in s.get("stage_code", {}).items() if c["other"])
        raise MixedInputsError(
            f"report: the inputs were made by {n} code versions, and the code of their stage differs from this "
            f"tree's for: {stale}; a result set is made by one code "
            f"(rerun the stale stages, or pass --allow-mixed to build it marked mixed):\n"
            + _listing(versions, lambda v: v != UNRECORDED))
    if publish and s["dirty_inputs"]:
        raise MixedInputsError(
            "report --publish: inputs made with uncommitted changes (commit, then rerun them):\n"
            + _listing(versions, is_dirty))
    return s
