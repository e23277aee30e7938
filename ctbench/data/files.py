"""Raw data files: where they live, their checksums, where to get them, and the processed-split cache.

Every real-data loader reads its inputs through :func:`raw_path`, which checks the file's sha256 (once per process)
and stops with a message naming the file, the expected checksum and where to obtain it. :func:`fetch` downloads a
file from its pinned URL, verifies it and moves it into place atomically; the ``ctbench data fetch`` command wraps it.

The table :data:`FILES` is taken from ``shared/data/MANIFEST.md``. ``download_url`` is a URL that serves the very
bytes (or, for ``.gz`` files, the very content) listed here — mostly ``raw.githubusercontent.com`` at the pinned
commits the manifest names; ``source_url`` is the canonical public home of the data set. A ``.gz`` file is also
accepted when its *decompressed* content has the listed ``content_sha256`` (gzip wrappers differ between compressors).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..io import _atomic_write, _jsonable
from .base import Dataset

_GH = "https://raw.githubusercontent.com"
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
_CEJL = f"{_GH}/JuliaTrustworthyAI/CounterfactualExplanations.jl"

ENV_DATA = "CTBENCH_DATA"
ENV_CACHE = "CTBENCH_CACHE"
FETCH_HINT = "ctbench data fetch"


@dataclass(frozen=True)
class RawFile:
    """One file of the data directory (``path`` is relative to it)."""

    path: str
    sha256: str
    source_url: str
    licence: str
    #: URL serving these bytes (or this content, for .gz); ``None``: obtain by hand (see ``note``).
    download_url: str | None = None
    #: sha256 of the decompressed content (``.gz`` files only).
    content_sha256: str | None = None
    #: the download is a zip archive; this member is extracted (and gzipped when ``path`` ends in ``.gz``).
    archive_member: str | None = None
    note: str = ""


_CC_BY = "CC BY 4.0 (UCI Machine Learning Repository)"

FILES: dict[str, RawFile] = {f.path: f for f in [
    # -- Adult (UCI id 2) -----------------------------------------------------------------------------------------
    RawFile("adult/adult.data", "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
            "https://archive.ics.uci.edu/dataset/2/adult", _CC_BY, f"{_UCI}/adult/adult.data",
            note="Becker & Kohavi (1996); md5 5d7c39d7b8804f071cdd1f2a7c460872 = UCI's"),
    RawFile("adult/adult.test", "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
            "https://archive.ics.uci.edu/dataset/2/adult", _CC_BY, f"{_UCI}/adult/adult.test",
            note="not used by the reference (Adult uses adult.data only)"),
    RawFile("adult/adult.names", "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
            "https://archive.ics.uci.edu/dataset/2/adult", _CC_BY, f"{_UCI}/adult/adult.names"),
    # -- California housing (Pace & Barry 1997) ------------------------------------------------------------------
    RawFile("california_housing/cal_housing.data",
            "a2b44dcc7e1c9091b43c4f458b25cbd1f7e8068d08edd26bc4703108d3fa6214",
            "https://www.dcc.fc.up.pt/~ltorgo/Regression/cal_housing.html",
            "no explicit licence (StatLib); derived from public-domain US Census data; cite Pace & Barry (1997)",
            f"{_GH}/we-b/datasets_for_ai/85985fbd60d1a2d8d098a55acb544cfac7818216/cal_housing.data",
            note="= cal_housing.tgz member CaliforniaHousing/cal_housing.data (what scikit-learn downloads)"),
    RawFile("california_housing/cal_housing.domain",
            "49875a8323c6149941a1b7467942df111d255c3693dea491549a2eb94f5e32fd",
            "https://www.dcc.fc.up.pt/~ltorgo/Regression/cal_housing.html",
            "no explicit licence (StatLib); cite Pace & Barry (1997)",
            f"{_GH}/RouNNdeL/uma-projekt/183153ca6f584dbf4146eae9b62d9f75ecf60d45/cal_housing.domain"),
    # -- Default of credit card clients (UCI id 350), Kaggle CSV form --------------------------------------------
    RawFile("credit_default/UCI_Credit_Card.csv",
            "a0f0ab49d6326671d6cd83be5c88dcf18007025fe9a53ecd699119c871176ca1",
            "https://archive.ics.uci.edu/dataset/350/default+of+credit+card+clients", _CC_BY,
            f"{_CEJL}/318bca3f93d4b7ee7d604a30a63433c72ba38bbc/dev/artifacts/upload/data/tabular/raw/"
            "UCI_Credit_Card.csv",
            note="Kaggle CSV conversion of the UCI .xls, as used by CounterfactualExplanations.jl"),
    # -- Give Me Some Credit (Kaggle 2011) -----------------------------------------------------------------------
    RawFile("give_me_some_credit/cs-training.csv.gz",
            "b2d5b080b10ca9d559fa799b1ff5530fe20f5c90576c13a34c8bde981b7c6582",
            "https://www.kaggle.com/c/GiveMeSomeCredit",
            "Kaggle competition rules (not an open licence): keep internal, do not redistribute",
            f"{_GH}/SureshThyagara1/CYO---Kaggle-Give-Me-Some-Credit/a83342095669125411d252e2c07cc10cb44e75c9/"
            "Data/cs-training.csv.zip",
            content_sha256="1bd46da486a5708c58c7b01a034fae2a13b327f6f7b62ea7ba4fe3b5824b24ac",
            archive_member="cs-training.csv",
            note="Kaggle's cs-training.csv, gzipped; or download it from Kaggle and run `gzip -9 -n cs-training.csv`"),
    # -- MNIST (LeCun et al. 1998) -------------------------------------------------------------------------------
    RawFile("mnist/train-images-idx3-ubyte.gz", "0b367032e93c5d0cea0925647cfdb18614af8ee15f83e6f2fc2ad904a6835971",
            "http://yann.lecun.com/exdb/mnist/",
            "no explicit licence; commonly listed as CC BY-SA 3.0; cite LeCun, Cortes & Burges (1998)",
            "https://ossci-datasets.s3.amazonaws.com/mnist/train-images-idx3-ubyte.gz",
            content_sha256="ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
            note="official IDX content (uncompressed md5 6bbc9ace898e44ae57da46a324031adb); any gzip wrapper"),
    RawFile("mnist/train-labels-idx1-ubyte.gz", "ec02e7948609e5754d47881c09b8afdd8dfa60600b9e5388c8c54a67069ec772",
            "http://yann.lecun.com/exdb/mnist/",
            "no explicit licence; commonly listed as CC BY-SA 3.0; cite LeCun, Cortes & Burges (1998)",
            f"{_GH}/kelas/mnist/283b387221ab46655e600cfcc25d843bb14292b9/train-labels-idx1-ubyte.gz",
            content_sha256="65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
    RawFile("mnist/t10k-images-idx3-ubyte.gz", "167310007f03058885c7e95e6c0b19c20de5c7fd3031f4cbdadc9014a523d80b",
            "http://yann.lecun.com/exdb/mnist/",
            "no explicit licence; commonly listed as CC BY-SA 3.0; cite LeCun, Cortes & Burges (1998)",
            f"{_GH}/kelas/mnist/283b387221ab46655e600cfcc25d843bb14292b9/t10k-images-idx3-ubyte.gz",
            content_sha256="0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
    RawFile("mnist/t10k-labels-idx1-ubyte.gz", "fc607395669ec21321ea83e4b82c0544b7e8e63ff5b34337c06bc0a17cc0da3c",
            "http://yann.lecun.com/exdb/mnist/",
            "no explicit licence; commonly listed as CC BY-SA 3.0; cite LeCun, Cortes & Burges (1998)",
            f"{_GH}/kelas/mnist/283b387221ab46655e600cfcc25d843bb14292b9/t10k-labels-idx1-ubyte.gz",
            content_sha256="ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
    # -- Statlog German credit (UCI id 144) ----------------------------------------------------------------------
    RawFile("german_credit/german.data", "b21f3d81db8071257d5ff1deaeba1fd4303b62712e6fcc9715c7a86202cb5871",
            "https://archive.ics.uci.edu/dataset/144/statlog+german+credit+data", _CC_BY,
            f"{_GH}/lfvvercosa/base_german/79e3c5d7dbed57ca5b2b92cba72c1d9350c6370a/german.data"),
    RawFile("german_credit/german.data-numeric", "2752b044394958ab6dd193a0b56ca0f0b3a2d8bc7cb8c008e35a5e84bbec02f8",
            "https://archive.ics.uci.edu/dataset/144/statlog+german+credit+data", _CC_BY,
            f"{_GH}/lfvvercosa/base_german/79e3c5d7dbed57ca5b2b92cba72c1d9350c6370a/german.data-numeric"),
    RawFile("german_credit/german.doc", "69b92cb551111bc37098698288849c96f0fd87ce81a2e54451ff39aa1e53fe49",
            "https://archive.ics.uci.edu/dataset/144/statlog+german+credit+data", _CC_BY,
            f"{_GH}/lfvvercosa/base_german/79e3c5d7dbed57ca5b2b92cba72c1d9350c6370a/german.doc"),
    # -- FICO HELOC (2018) ---------------------------------------------------------------------------------------
    RawFile("heloc/heloc_dataset.csv", "e5a914f742ad7f8472c5417902ec06b321ebc5de1d68ec13f136d62c87a7fbf3",
            "https://community.fico.com/s/explainable-machine-learning-challenge",
            "FICO data licence agreement (not an open licence): keep internal, do not redistribute",
            f"{_GH}/explainX/explainx/a2b3d1c5e04032230d4dd4fddffa04408a5d3b31/aix360/data/heloc_data/"
            "heloc_dataset.csv",
            note="FICO's heloc_dataset_v1.csv (10,459 x 24)"),
    # -- optional (consistency study extensions) -----------------------------------------------------------------
    RawFile("cardiotocography/CTG.xls", "d6aa62e82625e59f9d5b05bc8fc52af9ea67bdf2a23f1faca8511d5618fcb421",
            "https://archive.ics.uci.edu/dataset/193/cardiotocography", _CC_BY,
            f"{_GH}/cyniphile/ctg/0d5e9715bfe661f08dca7353545a4eeeffafbacf/data/CTG.xls"),
    RawFile("epileptic_seizure/bonn_eeg_sets_ZONFS.zip",
            "4e580084d35961e849860631770ed4656e452b00e5ecf6ada1ce59ea6eabde13",
            "https://archive.ics.uci.edu/dataset/388/epileptic+seizure+recognition",
            "University of Bonn EEG database, free for research; cite Andrzejak et al. (2001)",
            f"{_GH}/saumitkunder/EEG-DATA-SYNTHESIS-USING-GANS/a0d217ac534634c08e3ecd77b2a15caa03bce222/Dataset/"
            "Eplieptic%20Seizure%20Detection%20Dataset.zip"),
    # -- derived: TaijaData / CounterfactualExplanations.jl processed tables (reference rows of CH, Cred, GMSC) ----
    RawFile("taijadata_processed/cal_housing.csv", "7777da56fae024f8a0cd2eb014c8f03b75a0eae591376828e38ff21156be4aef",
            "https://github.com/JuliaTrustworthyAI/TaijaData.jl",
            "as California housing (derived table)",
            f"{_CEJL}/318bca3f93d4b7ee7d604a30a63433c72ba38bbc/dev/artifacts/upload/data/tabular/cal_housing.csv",
            note="balanced by an unseeded undersample; the reference's row order"),
    RawFile("taijadata_processed/credit_default.csv",
            "9105fb70f002f4963426b16a229e35f5cd118d2613b9e90e72139e065c8c1380",
            "https://github.com/JuliaTrustworthyAI/TaijaData.jl", "as credit default: " + _CC_BY,
            f"{_CEJL}/318bca3f93d4b7ee7d604a30a63433c72ba38bbc/dev/artifacts/upload/data/tabular/credit_default.csv",
            note="balanced by an unseeded undersample; target flipped (1 = no default)"),
    RawFile("taijadata_processed/gmsc.csv", "e00a2463dcceb90a0ac6ea37044750f417ebe62f51380a9bc75d6e08fd43e0f4",
            "https://github.com/JuliaTrustworthyAI/TaijaData.jl", "as Give Me Some Credit (Kaggle rules)",
            f"{_CEJL}/318bca3f93d4b7ee7d604a30a63433c72ba38bbc/dev/artifacts/upload/data/tabular/gmsc.csv",
            note="NA rows dropped, balanced by an unseeded undersample; target flipped (1 = no delinquency)"),
    RawFile("taijadata_processed/german_credit.csv",
            "891856321f6ffafc20f1924d553b8b5bdb5e41ad46588742f7b1f2b4af9524da",
            "https://github.com/JuliaTrustworthyAI/TaijaData.jl", "as German credit: " + _CC_BY,
            f"{_CEJL}/27b2bbaeabdd3253203de9e7bab1f52a14d881b3/dev/artifacts/upload/data/tabular/german_credit.csv"),
    RawFile("taijadata_processed/raw/cal_housing.csv",
            "d77e47abf8adbf425f82dd80ebc02dc6a30dc6e9525fa1ee9076789647cba2bf",
            "https://github.com/JuliaTrustworthyAI/TaijaData.jl", "as California housing (derived table)",
            f"{_CEJL}/318bca3f93d4b7ee7d604a30a63433c72ba38bbc/dev/artifacts/upload/data/tabular/raw/cal_housing.csv",
            note="scikit-learn fetch_california_housing(as_frame=True) exported to CSV"),
]}


# -- locations ---------------------------------------------------------------------------------------------------

def data_dir(raw_dir: str | os.PathLike | None = None) -> Path:
    """The raw-data directory: ``$CTBENCH_DATA`` if set, else ``raw_dir``, else ``data/raw`` under the cwd."""
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
    _atomic_write(npz, lambda fh: np.savez(fh, **arrays))
    doc = {
        "key": key, "spec": spec, "name": ds.name, "feature_names": ds.feature_names, "n_classes": ds.n_classes,
        "domain": [list(map(float, ds.domain[0])), list(map(float, ds.domain[1]))] if ds.domain else None,
        "protected": ds.protected, "categorical_groups": ds.categorical_groups, "meta": ds.meta,
    }
    text = json.dumps(doc, indent=1, sort_keys=True, default=_jsonable) + "\n"
    _atomic_write(meta, lambda fh: fh.write(text.encode()))


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
