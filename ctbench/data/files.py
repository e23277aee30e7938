"""Raw data files: where they live, their checksums, where to get them, and the processed-split cache.

Every real-data loader reads its inputs through :func:`raw_path`, which checks the file's sha256 (once per process)
and stops with a message naming the file, the expected checksum and where to obtain it. :func:`fetch` downloads a
file from its pinned URL, verifies it and moves it into place atomically; the ``ctbench data fetch`` command wraps it.

The table :data:`FILES` (:mod:`.catalogue`, re-exported here) is taken from ``shared/data/MANIFEST.md``.
``download_url`` is a URL that serves the very bytes (or, for ``.gz`` files, the very content) listed here — mostly
``raw.githubusercontent.com`` at the pinned commits the manifest names; ``source_url`` is the canonical public home
of the data set. A ``.gz`` file is also accepted when its *decompressed* content has the listed ``content_sha256``
(gzip wrappers differ between compressors).

Data directory: ``CTBENCH_DATA`` if set, else the ``raw_dir`` passed in (e.g. ``data.raw_dir`` of the config), else
``data/raw`` relative to the working directory. Processed splits are cached under ``cache_dir`` (``CTBENCH_CACHE``
or ``data/processed``) as ``<name>/<key>.npz`` plus ``<name>/<key>.meta.json``; the key hashes everything the split
depends on, so a change of parameters, fidelity switches, raw files or loader code gives a new key.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tempfile
import urllib.error
import urllib.request
import warnings
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..io import atomic_write, jsonable
from .base import Dataset
from .catalogue import FILES, RawFile

ENV_DATA = "CTBENCH_DATA"
ENV_CACHE = "CTBENCH_CACHE"
FETCH_HINT = "ctbench data fetch"


# -- locations ---------------------------------------------------------------------------------------------------

def data_dir(raw_dir: str | os.PathLike | None = None) -> Path:
    """The raw-data directory: ``$CTBENCH_DATA`` if set, else ``raw_dir``, else ``data/raw`` under the cwd
    (the table in ``data/README.md``, checked by ``tests/test_data_dirs.py``)."""
    env = os.environ.get(ENV_DATA)
    if env:
        return Path(env).expanduser()
    if raw_dir is not None:
        return Path(raw_dir).expanduser()
    return Path.cwd() / "data" / "raw"


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """The processed-split cache: ``cache_dir``, else ``$CTBENCH_CACHE``, else ``data/processed`` under the cwd."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get(ENV_CACHE)
    return Path(env).expanduser() if env else Path.cwd() / "data" / "processed"


def file_info(name: str) -> RawFile:
    """Table entry for ``name`` (a path relative to the data directory, e.g. ``adult/adult.data``)."""
    try:
        return FILES[name]
    except KeyError:
        raise KeyError(f"unknown data file {name!r}; known files: {sorted(FILES)}") from None


def _where(info: RawFile) -> str:
    how = f"`{FETCH_HINT} {info.path}` (downloads {info.download_url})" if info.download_url else "by hand"
    note = f"; note: {info.note}" if info.note else ""
    return f"Obtain it from {info.source_url} or run {how}{note}. Licence: {info.licence}."


# -- checksums (each file hashed once per process) ---------------------------------------------------------------

_HASHED: dict[tuple, dict[str, str | None]] = {}


def _sha256_stream(fh, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    while block := fh.read(chunk):
        h.update(block)
    return h.hexdigest()


def _memo(path: Path) -> dict[str, str | None]:
    st = path.stat()
    return _HASHED.setdefault((str(path.resolve()), st.st_ino, st.st_size, st.st_mtime_ns), {})


def _file_sha(path: Path) -> str:
    memo = _memo(path)
    if "file" not in memo:
        with open(path, "rb") as fh:
            memo["file"] = _sha256_stream(fh)
    return memo["file"]


def _content_sha(path: Path) -> str | None:
    """sha256 of a gzip file's decompressed content (None if not gzip), memoised like the file hash."""
    memo = _memo(path)
    if "content" not in memo:
        try:
            with gzip.open(path, "rb") as fh:
                memo["content"] = _sha256_stream(fh)
        except (OSError, EOFError):
            memo["content"] = None
    return memo["content"]


def _matches(info: RawFile, path: Path) -> tuple[bool, str]:
    """(whether ``path`` is the file ``info`` describes, its sha256). The gzip content is hashed only when the
    file's own checksum differs (another gzip wrapper of the same content)."""
    sha = _file_sha(path)
    if sha == info.sha256:
        return True, sha
    if info.content_sha256 is not None and path.name.endswith(".gz"):
        return _content_sha(path) == info.content_sha256, sha
    return False, sha


def verify(path: str | os.PathLike, name: str) -> Path:
    """Check ``path`` against the table entry ``name``; raise ``ValueError`` (naming both checksums) if it differs."""
    info, path = file_info(name), Path(path)
    ok, file_sha = _matches(info, path)
    if not ok:
        extra = f" (or gzip content sha256 {info.content_sha256})" if info.content_sha256 else ""
        raise ValueError(
            f"data file {info.path} at {path} has sha256 {file_sha}, expected {info.sha256}{extra}: the file is "
            f"altered or corrupt. Delete it and fetch it again. {_where(info)}"
        )
    return path


def raw_path(name: str, raw_dir: str | os.PathLike | None = None) -> Path:
    """Verified path of data file ``name``; ``FileNotFoundError`` if missing, ``ValueError`` on a checksum mismatch."""
    info = file_info(name)
    path = data_dir(raw_dir) / info.path
    if not path.is_file():
        raise FileNotFoundError(
            f"data file {info.path} not found at {path} (data directory from ${ENV_DATA}, the configured raw_dir, "
            f"or ./data/raw). Expected sha256 {info.sha256}. {_where(info)}"
        )
    return verify(path, name)


def is_present(name: str, raw_dir: str | os.PathLike | None = None) -> bool:
    """Whether data file ``name`` exists in the data directory (not verified)."""
    return (data_dir(raw_dir) / file_info(name).path).is_file()


def status(raw_dir: str | os.PathLike | None = None, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """One row per table entry: ``ok``, ``missing`` or ``mismatch`` (for a ``ctbench data status`` command)."""
    rows = []
    for name in names or FILES:
        info = file_info(name)
        path = data_dir(raw_dir) / info.path
        if not path.is_file():
            state = "missing"
        else:
            state = "ok" if _matches(info, path)[0] else "mismatch"
        rows.append({"file": name, "path": str(path), "status": state, "sha256": info.sha256,
                     "licence": info.licence, "source": info.source_url})
    return rows


# -- download ----------------------------------------------------------------------------------------------------

def fetch(name: str, raw_dir: str | os.PathLike | None = None, url: str | None = None, *, force: bool = False,
          timeout: float = 60.0) -> Path:
    """Download data file ``name`` into the data directory, verify it, and move it into place atomically.

    ``url`` overrides the table's ``download_url`` (e.g. a mirror or a ``file://`` URL). A file that is already
    present and verified is kept unless ``force``. The download lands in a temporary file next to the target and is
    renamed only after its checksum (or, for ``.gz``, its content checksum) matches; on any failure nothing is left
    behind and the error names the file, the URL and the reason.
    """
    info = file_info(name)
    target = data_dir(raw_dir) / info.path
    if target.is_file() and not force:
        try:
            return verify(target, name)
        except ValueError:
            pass  # altered copy: replace it
    url = url or info.download_url
    if not url:
        raise ValueError(f"data file {info.path}: no download URL is known. {_where(info)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            payload = resp.read()
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise RuntimeError(f"fetch {info.path}: download from {url} failed: {e}. {_where(info)}") from e

    data = _accept(info, payload, url)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return verify(target, name)


def _accept(info: RawFile, payload: bytes, url: str) -> bytes:
    """The bytes to store for a download, or ``ValueError`` if it is not the expected file."""
    sha = hashlib.sha256(payload).hexdigest()
    if sha == info.sha256:
        return payload
    content = payload
    if info.archive_member is not None:
        try:
            with zipfile.ZipFile(io.BytesIO(payload)) as zf:
                content = zf.read(info.archive_member)
        except (zipfile.BadZipFile, KeyError) as e:
            raise ValueError(f"fetch {info.path}: {url} is not a zip archive holding {info.archive_member}: {e}") from e
    if info.content_sha256 is not None:
        if payload[:2] == b"\x1f\x8b" and info.archive_member is None:
            try:
                if hashlib.sha256(gzip.decompress(payload)).hexdigest() == info.content_sha256:
                    return payload  # same content in another gzip wrapper
            except (OSError, EOFError):
                pass
        elif hashlib.sha256(content).hexdigest() == info.content_sha256:
            return gzip.compress(content, compresslevel=9, mtime=0)
    raise ValueError(
        f"fetch {info.path}: the download from {url} has sha256 {sha}, expected {info.sha256}"
        + (f" (or content sha256 {info.content_sha256})" if info.content_sha256 else "")
        + "; it was rejected and nothing was written."
    )


def fetch_all(names: Iterable[str] | None = None, raw_dir: str | os.PathLike | None = None,
              **kwargs: Any) -> dict[str, str]:
    """Fetch several files (default: all); returns ``{name: "ok" | error message}`` instead of stopping early."""
    out = {}
    for name in names or FILES:
        try:
            fetch(name, raw_dir, **kwargs)
            out[name] = "ok"
        except (RuntimeError, ValueError, KeyError) as e:
            out[name] = str(e)
    return out


# -- processed-split cache ---------------------------------------------------------------------------------------

_ARRAYS = ("X_train", "y_train", "X_val", "y_val", "X_test", "y_test")


def cache_key(spec: dict[str, Any]) -> str:
    """Short stable hash of a JSON-serialisable description of everything a split depends on."""
    blob = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def cache_paths(name: str, key: str, cache_dir: str | os.PathLike | None = None) -> tuple[Path, Path]:
    base = cache_root(cache_dir) / name
    return base / f"{key}.npz", base / f"{key}.meta.json"


def save_cached(ds: Dataset, key: str, spec: dict[str, Any], cache_dir: str | os.PathLike | None = None) -> None:
    """Write ``ds`` as ``<name>/<key>.npz`` + ``<name>/<key>.meta.json``, each atomically (arrays first)."""
    npz, meta = cache_paths(ds.name, key, cache_dir)
    arrays = {k: getattr(ds, k) for k in _ARRAYS}
    atomic_write(npz, lambda fh: np.savez(fh, **arrays))
    doc = {
        "key": key, "spec": spec, "name": ds.name, "feature_names": ds.feature_names, "n_classes": ds.n_classes,
        "domain": [list(map(float, ds.domain[0])), list(map(float, ds.domain[1]))] if ds.domain else None,
        "protected": ds.protected, "categorical_groups": ds.categorical_groups, "meta": ds.meta,
    }
    text = json.dumps(doc, indent=1, sort_keys=True, default=jsonable) + "\n"
    atomic_write(meta, lambda fh: fh.write(text.encode()))


def load_cached(name: str, key: str, cache_dir: str | os.PathLike | None = None) -> Dataset | None:
    """The cached split for ``key``, or ``None`` if absent, unreadable or written for another key."""
    npz, meta = cache_paths(name, key, cache_dir)
    if not (npz.is_file() and meta.is_file()):
        return None
    try:
        doc = json.loads(meta.read_text())
        if doc.get("key") != key:
            return None
        with np.load(npz, allow_pickle=False) as z:
            arrays = {k: z[k] for k in _ARRAYS}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None
    dom = doc["domain"]
    return Dataset(
        name=doc["name"], **arrays, feature_names=list(doc["feature_names"]), n_classes=int(doc["n_classes"]),
        domain=(list(dom[0]), list(dom[1])) if dom else None, protected=list(doc["protected"]),
        categorical_groups=[list(g) for g in doc["categorical_groups"]], meta=dict(doc["meta"]),
    )


def cached(name: str, spec: dict[str, Any], build: Callable[[], Dataset],
           cache_dir: str | os.PathLike | None | bool = None) -> Dataset:
    """Return the cached split for ``spec`` or build, store and return it. ``cache_dir=False`` disables caching."""
    key = cache_key(spec)
    if cache_dir is False:
        ds = build()
        ds.meta.update(cache_key=key, cache="off")
        return ds
    cache_dir = None if cache_dir is True else cache_dir
    ds = load_cached(name, key, cache_dir)
    if ds is not None:
        ds.meta["cache"] = "hit"
        return ds
    ds = build()
    ds.meta["cache_key"] = key
    try:
        save_cached(ds, key, spec, cache_dir)
        ds.meta["cache"] = "built"
    except OSError as e:  # a read-only or full cache must not stop a run
        warnings.warn(f"could not cache dataset {name!r} under {cache_root(cache_dir)}: {e}", stacklevel=2)
        ds.meta["cache"] = "unwritable"
    return ds
