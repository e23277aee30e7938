"""What one report is made of: the files of this run only, and inputs of one code version.

* :func:`sweep` — ``ctbench report`` owns its report folder. After writing, every file of the folder that it did not
  write in this run (:func:`ctbench.io.recording_writes`) and that is not a file of another stage this run enables
  (:data:`STAGE_FILES`; the workflow names them with ``--stages``) is moved aside to ``<report>.stale/``, so the book,
  the gallery and the claims ledger never read a file an earlier run left behind (a stage switched off since then:
  its figure is not shown, its claims get "not yet run"). The report's ``index.json`` lists this run's files.
* :func:`code_versions` / :func:`check_versions` — the code version (``git_commit`` of each input's sidecar) of every
  input; a set of more than one version is refused unless ``allow_mixed`` (then marked ``mixed``), and a publishing
  report also refuses inputs made with uncommitted changes.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from ..errors import MixedInputsError
from ..io import is_dirty

#: stages other than ``ctbench report`` that write into the report folder → their files there (relative patterns)
STAGE_FILES: dict[str, tuple[str, ...]] = {
    "figure1": ("figure1.*",),
    "mnist_figures": ("mnist_*",),
    "prop31": ("prop31/*",),
    "fidelity_study": ("fidelity_effects.*",),
}
#: a file without a recorded code version (a hand-made input) does not count towards mixing
UNRECORDED = "unrecorded"


def stage_of(rel: str) -> str | None:
    """The other stage (:data:`STAGE_FILES`) whose file ``rel`` (relative to the report folder) is, else None."""
    return next((s for s, pats in STAGE_FILES.items() if any(fnmatch(rel, p) for p in pats)), None)


def stale_name(out: Path) -> Path:
    """Where the stale files of report folder ``out`` go: ``<out>.stale/`` beside it."""
    return out.with_name(out.name + ".stale")


def sweep(out: str | Path, written: set[Path], stages: list[str] | None) -> tuple[list[str], list[str]]:
    """Move aside every file of ``out`` this run did not make; returns (this run's files, moved files), relative.

    ``written``: resolved paths written by this report. ``stages``: the other stages this run enables (their files
    stay); None when unknown (a report run by hand): then every other stage's file stays."""
    out = Path(out)
    unknown = sorted(set(stages or ()) - set(STAGE_FILES))
    if unknown:
        raise ValueError(f"report --stages: unknown stage(s) {unknown}; known: {sorted(STAGE_FILES)}")
    kept, moved = [], []
    for p in sorted(q for q in out.rglob("*") if q.is_file()):
        rel = p.relative_to(out).as_posix()
        if any(part.startswith(".") for part in Path(rel).parts):
            continue  # a writer's temporary file (io.atomic_write), or a stage's hidden bookkeeping: not a result
        stage = stage_of(rel)
        if p.resolve() in written or (stage is not None and (stages is None or stage in stages)):
            kept.append(rel)
            continue
        target = stale_name(out) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(p), target)
        moved.append(rel)
    for d in sorted((q for q in out.rglob("*") if q.is_dir()), key=lambda q: len(q.parts), reverse=True):
        if not any(d.iterdir()):
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


def summary(versions: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    """For ``provenance.json``: per kind the number of files per version, the versions over all inputs with their
    counts, and ``mixed`` (more than one recorded version)."""
    total: Counter[str] = Counter()
    for kind in versions.values():
        for v, files in kind.items():
            total[v] += len(files)
    recorded = sorted(v for v in total if v != UNRECORDED)
    return {"input_code_versions": {k: {v: len(fs) for v, fs in sorted(kv.items())} for k, kv in versions.items()},
            "code_versions": dict(sorted(total.items())), "mixed": len(recorded) > 1,
            "dirty_inputs": sum(n for v, n in total.items() if is_dirty(v))}


def _listing(versions: dict[str, dict[str, list[str]]], keep) -> str:
    lines = []
    for kind, kv in versions.items():
        for v, files in sorted(kv.items()):
            if keep(v):
                shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
                lines.append(f"  {kind}: {v} ({len(files)} file(s): {shown})")
    return "\n".join(lines)


def check_versions(versions: dict[str, dict[str, list[str]]], *, allow_mixed: bool = False,
                   publish: bool = False) -> dict[str, Any]:
    """:func:`summary` of the inputs, or :class:`~ctbench.errors.MixedInputsError` (exit code 2) naming the files and
    versions when they carry more than one code version (unless ``allow_mixed``) or, with ``publish``, uncommitted
    changes."""
    s = summary(versions)
    if s["mixed"] and not allow_mixed:
        n = len([v for v in s["code_versions"] if v != UNRECORDED])
        raise MixedInputsError(
            f"report: the inputs were made by {n} code versions; a result set is made by one "
            f"(rerun the stale stages, or pass --allow-mixed to build it marked mixed):\n"
            + _listing(versions, lambda v: v != UNRECORDED))
    if publish and s["dirty_inputs"]:
        raise MixedInputsError(
            "report --publish: inputs made with uncommitted changes (commit, then rerun them):\n"
            + _listing(versions, is_dirty))
    return s
