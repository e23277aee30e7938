"""Atomic writes and provenance: every output carries its config, code version and environment."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import platform
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import __version__


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()
#: the open :func:`recording_writes` sets (innermost last): every file written by :func:`atomic_write` is added
_RECORDERS: list[set[Path]] = []


@contextlib.contextmanager
def recording_writes():
    """Collect the resolved path of every file written through this module's writers inside the ``with`` block:
    ``ctbench report`` uses it to know which files of its folder it made in this run."""
    paths: set[Path] = set()
    _RECORDERS.append(paths)
    try:
        yield paths
    finally:
        _RECORDERS.remove(paths)


def atomic_write(path: str | Path, write) -> Path:
    """Write ``path`` through ``write(binary file)`` into a temporary file beside it, then rename it into place."""
    path = Path(path)
    for paths in _RECORDERS:
        paths.add(path.resolve())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600; give the file the permissions open() would
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        if err.errno == errno.ENOSPC:
            raise OSError(err.errno, f"no space left on the device of {path.parent} while writing {path.name}; "
                          "free space there (or point results: elsewhere) and run again") from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    return atomic_write(path, lambda fh: fh.write(data))


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode())


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=jsonable) + "\n")


def write_frame(df: Any, out: str | Path, meta: dict[str, Any]) -> Path:
    """A result table and its sidecar, the one writer of both: ``out`` as CSV (gzip level 1 with mtime 0 when it ends
    in ``.gz``, so the same frame gives the same bytes) and ``<out>.json`` with ``meta``, each atomically."""
    import gzip

    out = Path(out)
    text = df.to_csv(index=False)
    if out.suffix == ".gz":
        atomic_write_bytes(out, gzip.compress(text.encode(), compresslevel=1, mtime=0))
    else:
        atomic_write_text(out, text)
    atomic_write_json(out.with_name(out.name + ".json"), meta)
    return out


def atomic_torch_save(obj: Any, path: str | Path) -> Path:
    import torch

    return atomic_write(path, lambda fh: torch.save(obj, fh))


def save_figure(fig: Any, path: str | Path, dpi: int = 150) -> list[Path]:
    """Write a matplotlib ``Figure`` as ``<stem>.png`` and ``<stem>.pdf``, each rendered in memory and written
    atomically (Agg canvas: no pyplot, no global backend change). ``path`` may end in .png/.pdf or have no suffix."""
    import io as _io

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    path = Path(path)
    stem = path.with_suffix("") if path.suffix.lower() in (".png", ".pdf") else path
    FigureCanvasAgg(fig)
    out = []
    for ext in ("png", "pdf"):
        buf = _io.BytesIO()
        fig.savefig(buf, format=ext, dpi=dpi, bbox_inches="tight",
                    metadata={"CreationDate": None} if ext == "pdf" else None)
        out.append(atomic_write_bytes(stem.with_name(f"{stem.name}.{ext}"), buf.getvalue()))
    return out


def read_csv_file(path: str | Path, what: str = "CSV file", **read_csv_args):
    """``pd.read_csv`` of a ``.csv`` or ``.csv.gz`` file (``read_csv_args`` passed on); a missing, truncated or
    unparsable file raises :class:`~ctbench.errors.BadFileError` naming the file (never EOFError or a zlib
    error from deep inside)."""
    import zlib

    import pandas as pd

    from .errors import BadFileError

    p = Path(path)
    if not p.is_file():
        raise BadFileError(f"{what} {p} does not exist" if not p.exists() else f"{what} {p} is not a file")
    try:
        return pd.read_csv(p, **read_csv_args)
    except (EOFError, OSError, zlib.error, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        detail = str(err).splitlines()[0] if str(err) else "no detail"
        raise BadFileError(f"{what} {p} ({p.stat().st_size} bytes) cannot be read ({type(err).__name__}: {detail}): "
                           "it is truncated, empty or not a CSV file. Run the step that writes it again.") from None


def read_json_file(path: str | Path, what: str = "JSON file") -> Any:
    """``json.loads`` of a file; a missing, unreadable or malformed file raises
    :class:`~ctbench.errors.BadFileError` naming the file and the line (never a bare JSONDecodeError)."""
    from .errors import BadFileError

    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise BadFileError(f"{what} {p} cannot be read ({type(err).__name__}: {err})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise BadFileError(f"{what} {p} is not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}); it was "
                           "edited or truncated: run the step that writes it again") from None


#: the key of a sidecar's digests: ``{"file": sha256 of the result file, "self": sha256 of the sidecar without it}``
DIGEST_KEY = "digest"


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=jsonable).encode()


def with_digest(meta: dict[str, Any], data: bytes) -> dict[str, Any]:
    """``meta`` with the sha256 of the result file's bytes ``data`` and of ``meta`` itself (its canonical JSON)."""
    import hashlib

    body = {k: v for k, v in meta.items() if k != DIGEST_KEY}
    body[DIGEST_KEY] = {"file": hashlib.sha256(data).hexdigest()}
    body[DIGEST_KEY]["self"] = hashlib.sha256(_canonical(body)).hexdigest()
    return body


def check_digest(meta: dict[str, Any], sidecar: str | Path, result: str | Path | None = None) -> dict[str, Any]:
    """``meta`` (read from ``sidecar``) unchanged since it was written, and ``result`` (if given and present) the file
    it describes; a sidecar without a digest (written before digests) is accepted as it is."""
    import hashlib

    from .errors import BadFileError

    digest = meta.get(DIGEST_KEY) if isinstance(meta, dict) else None
    if not isinstance(digest, dict):
        return meta
    body = {k: v for k, v in meta.items() if k != DIGEST_KEY}
    body[DIGEST_KEY] = {"file": digest.get("file")}
    if hashlib.sha256(_canonical(body)).hexdigest() != digest.get("self"):
        raise BadFileError(f"sidecar {sidecar} was edited after it was written (its digest does not match its "
                           "contents): its settings cannot be trusted. Restore it or run the step that writes it "
                           "again")
    if result is not None and Path(result).is_file() and digest.get("file"):
        h = hashlib.sha256()
        with open(result, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        if h.hexdigest() != digest["file"]:
            raise BadFileError(f"{result} does not match its sidecar {sidecar} (the sha256 recorded there differs): "
                               "one of them was replaced or edited. Run the step that writes them again")
    return meta


def read_model_sidecar(path: str | Path) -> dict[str, Any]:
    """The ``.pt.json`` sidecar of a saved model (``path`` is the ``.pt`` or the ``.pt.json`` file), checked: valid
    JSON, unchanged since it was written, and describing the weights file beside it (the sha256 digests
    :meth:`TrainedModel.save` records); raises :class:`~ctbench.errors.BadFileError` naming the file."""
    p = Path(path)
    side = p if p.name.endswith(".json") else p.with_name(p.name + ".json")
    weights = side.with_name(side.name[: -len(".json")])
    from .errors import BadFileError

    meta = read_json_file(side, "model sidecar")
    if not isinstance(meta, dict):
        raise BadFileError(f"model sidecar {side} is not a JSON object: it is not a sidecar written by ctbench train")
    return check_digest(meta, side, weights)


def jsonable(o: Any):
    """``json.dumps(default=...)`` for arrays, tensors and paths."""
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


@lru_cache(maxsize=1)
def git_commit(root: str | Path | None = None) -> str | None:
    """The commit of the ctbench checkout (or of the git work tree ``root``), or None outside git. Uncommitted changes
    to tracked files are marked with a digest of the diff, ``<sha>+dirty.<8 hex>``, so two different uncommitted
    states are two code versions (cached per process: the code of a running process does not change)."""
    root = Path(root) if root is not None else Path(__file__).resolve().parent.parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        if not dirty:
            return rev
        diff = subprocess.run(["git", "diff", "HEAD", "--binary", "--no-color", "--no-ext-diff"], cwd=root,
                              capture_output=True, timeout=30, check=True).stdout
        return f"{rev}+dirty.{hashlib.sha256(diff).hexdigest()[:8]}"
    except (OSError, subprocess.SubprocessError):
        return None


def is_dirty(version: str | None) -> bool:
    """Whether a code version of :func:`git_commit` carries uncommitted changes (older results wrote ``+dirty``)."""
    return "+dirty" in str(version or "")


def machine() -> dict[str, Any]:
    """The machine a result was made on: CPU model and count, memory (Linux ``/proc``; None where unreadable)."""
    import os

    def _first(path: str, key: str) -> str | None:
        try:
            with open(path) as f:
                return next((line.split(":", 1)[1].strip() for line in f if line.startswith(key)), None)
        except OSError:
            return None

    mem = _first("/proc/meminfo", "MemTotal")
    return {"cpu": _first("/proc/cpuinfo", "model name") or platform.processor() or None, "cpus": os.cpu_count(),
            "memory_gib": round(int(mem.split()[0]) / 2**20, 1) if mem else None}


def _torch_version() -> str | None:
    """torch's version without importing torch (≈ 1.5 CPU-s): the installed distribution's, which is
    ``torch.__version__`` (local tag such as ``+cpu`` included)."""
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def provenance() -> dict[str, Any]:
    """Code version and environment, stored with every result.

    torch is not imported here (issue 21: the commands that use no torch — report, data, tune select — would pay
    ≈ 1.5 CPU-s for it): ``torch`` is the version of the loaded module, else of the installed distribution (the same
    string); ``torch_threads`` is ``torch.get_num_threads()`` where the command loaded torch, else None (it ran no
    torch code).
    """
    import sys

    import numpy

    torch = sys.modules.get("torch")
    return {
        "ctbench_version": __version__,
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "torch": torch.__version__ if torch is not None else _torch_version(),
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "torch_threads": torch.get_num_threads() if torch is not None else None,
    }
