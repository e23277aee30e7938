"""Raw-file table, checksum verification, download (against a loopback HTTP server) and the split cache.

Nothing here needs the real data or the internet: test files are registered in ``files.FILES`` for the duration of
a test, and downloads come from an ``http.server`` on 127.0.0.1 started and stopped by the test.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from ctbench.data import files
from ctbench.data.base import Dataset

CONTENT = b"col_a,col_b\n1,2\n3,4\n"
SHA = hashlib.sha256(CONTENT).hexdigest()


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv(files.ENV_DATA, raising=False)
    monkeypatch.delenv(files.ENV_CACHE, raising=False)


@pytest.fixture
def entry(monkeypatch):
    """Register a small test file ``test/table.csv`` (and a gz and a zip-sourced variant)."""
    monkeypatch.setitem(files.FILES, "test/table.csv", files.RawFile(
        "test/table.csv", SHA, "https://example.org/table", "test licence", "http://unused.invalid/table.csv"))
    gz = gzip.compress(CONTENT, mtime=0)
    monkeypatch.setitem(files.FILES, "test/table.csv.gz", files.RawFile(
        "test/table.csv.gz", hashlib.sha256(gz).hexdigest(), "https://example.org/table", "test licence", None,
        content_sha256=SHA))
    monkeypatch.setitem(files.FILES, "test/zipped.csv.gz", files.RawFile(
        "test/zipped.csv.gz", "0" * 64, "https://example.org/table", "test licence", None,
        content_sha256=SHA, archive_member="table.csv"))
    return files.FILES["test/table.csv"]


def _put(root, rel, data: bytes):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# -- table ---------------------------------------------------------------------------------------------------------

def test_table_lists_every_manifest_file_with_checksum_source_and_licence():
    for name, info in files.FILES.items():
        assert info.path == name
        assert re.fullmatch(r"[0-9a-f]{64}", info.sha256), name
        assert info.source_url.startswith("http") and info.licence
        if info.content_sha256 is not None:
            assert name.endswith(".gz") and re.fullmatch(r"[0-9a-f]{64}", info.content_sha256)
    needed = {"adult/adult.data", "california_housing/cal_housing.data", "credit_default/UCI_Credit_Card.csv",
              "give_me_some_credit/cs-training.csv.gz", "german_credit/german.data", "heloc/heloc_dataset.csv",
              "taijadata_processed/cal_housing.csv", "taijadata_processed/credit_default.csv",
              "taijadata_processed/gmsc.csv", "mnist/train-images-idx3-ubyte.gz",
              "mnist/train-labels-idx1-ubyte.gz", "mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz"}
    assert needed <= set(files.FILES)
    # spot checks against shared/data/MANIFEST.md
    assert files.FILES["adult/adult.data"].sha256.startswith("5b00264637dbfec3")
    assert files.FILES["taijadata_processed/gmsc.csv"].sha256.startswith("e00a2463dcceb90a")
    assert files.FILES["mnist/train-images-idx3-ubyte.gz"].content_sha256.startswith("ba891046e6505d7a")


def test_unknown_file_name_is_a_clear_error():
    with pytest.raises(KeyError, match="unknown data file"):
        files.raw_path("nope/nothing.csv")


# -- locations -----------------------------------------------------------------------------------------------------

def test_data_dir_order_env_then_argument_then_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert files.data_dir() == tmp_path / "data" / "raw"
    assert files.data_dir(tmp_path / "mine") == tmp_path / "mine"
    monkeypatch.setenv(files.ENV_DATA, str(tmp_path / "env"))
    assert files.data_dir(tmp_path / "mine") == tmp_path / "env"
    assert files.data_dir() == tmp_path / "env"


def test_cache_root_order_argument_then_env_then_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert files.cache_root() == tmp_path / "data" / "processed"
    monkeypatch.setenv(files.ENV_CACHE, str(tmp_path / "env"))
    assert files.cache_root() == tmp_path / "env"
    assert files.cache_root(tmp_path / "mine") == tmp_path / "mine"


# -- verification --------------------------------------------------------------------------------------------------

def test_missing_file_names_file_checksum_and_how_to_get_it(tmp_path, entry):
    with pytest.raises(FileNotFoundError) as err:
        files.raw_path("test/table.csv", tmp_path)
    msg = str(err.value)
    assert "test/table.csv" in msg and SHA in msg and "https://example.org/table" in msg
    assert "ctbench data fetch" in msg and "test licence" in msg


def test_checksum_mismatch_names_both_checksums(tmp_path, entry):
    _put(tmp_path, "test/table.csv", CONTENT + b"5,6\n")
    with pytest.raises(ValueError) as err:
        files.raw_path("test/table.csv", tmp_path)
    msg = str(err.value)
    assert SHA in msg and hashlib.sha256(CONTENT + b"5,6\n").hexdigest() in msg
    assert "test/table.csv" in msg and "ctbench data fetch" in msg


def test_verified_path_and_each_file_hashed_once(tmp_path, entry, monkeypatch):
    path = _put(tmp_path, "test/table.csv", CONTENT)
    calls = []
    real = files._sha256_stream
    monkeypatch.setattr(files, "_sha256_stream", lambda fh, *a: calls.append(1) or real(fh, *a))
    assert files.raw_path("test/table.csv", tmp_path) == path
    assert files.raw_path("test/table.csv", tmp_path) == path
    assert len(calls) == 1
    # a rewritten file (new size/mtime) is hashed again, and the change is caught
    path.write_bytes(CONTENT.replace(b"4", b"9") + b"\n")
    with pytest.raises(ValueError):
        files.raw_path("test/table.csv", tmp_path)
    assert len(calls) == 2


def test_gz_file_with_other_wrapper_is_accepted_by_content(tmp_path, entry):
    other = gzip.compress(CONTENT, compresslevel=1, mtime=12345)  # different bytes, same content
    assert hashlib.sha256(other).hexdigest() != files.FILES["test/table.csv.gz"].sha256
    _put(tmp_path, "test/table.csv.gz", other)
    assert files.raw_path("test/table.csv.gz", tmp_path).is_file()
    _put(tmp_path, "test/table.csv.gz", gzip.compress(CONTENT + b"x", mtime=0))
    with pytest.raises(ValueError, match="content sha256"):
        files.raw_path("test/table.csv.gz", tmp_path)


def test_status_reports_ok_missing_and_mismatch(tmp_path, entry):
    _put(tmp_path, "test/table.csv", CONTENT)
    _put(tmp_path, "test/table.csv.gz", b"not gzip")
    rows = {r["file"]: r["status"] for r in files.status(tmp_path, ["test/table.csv", "test/table.csv.gz",
                                                                    "test/zipped.csv.gz"])}
    assert rows == {"test/table.csv": "ok", "test/table.csv.gz": "mismatch", "test/zipped.csv.gz": "missing"}


# -- download against a loopback server ----------------------------------------------------------------------------

@pytest.fixture
def server():
    """Threaded HTTP server on 127.0.0.1 serving ``routes`` (path -> bytes); yields (base_url, routes, hits)."""
    routes: dict[str, bytes] = {}
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            body = routes.get(self.path)
            if body is None:
                self.send_error(404, "Not Found")
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", routes, hits
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _leftovers(folder):
    return [p.name for p in folder.iterdir() if p.name.startswith(".")] if folder.exists() else []


def test_fetch_downloads_verifies_and_places_file(tmp_path, entry, server):
    base, routes, hits = server
    routes["/table.csv"] = CONTENT
    path = files.fetch("test/table.csv", tmp_path, url=f"{base}/table.csv")
    assert path == tmp_path / "test" / "table.csv" and path.read_bytes() == CONTENT
    assert files.raw_path("test/table.csv", tmp_path) == path
    assert _leftovers(path.parent) == []
    # already present and verified: no second download
    files.fetch("test/table.csv", tmp_path, url=f"{base}/table.csv")
    assert hits == ["/table.csv"]
    files.fetch("test/table.csv", tmp_path, url=f"{base}/table.csv", force=True)
    assert hits == ["/table.csv", "/table.csv"]


def test_fetch_rejects_corrupted_download_and_leaves_nothing(tmp_path, entry, server):
    base, routes, _ = server
    routes["/table.csv"] = CONTENT[:-3] + b"99\n"
    with pytest.raises(ValueError, match="rejected") as err:
        files.fetch("test/table.csv", tmp_path, url=f"{base}/table.csv")
    assert SHA in str(err.value) and f"{base}/table.csv" in str(err.value)
    folder = tmp_path / "test"
    assert not (folder / "table.csv").exists() and _leftovers(folder) == []


def test_fetch_replaces_an_altered_copy(tmp_path, entry, server):
    base, routes, _ = server
    _put(tmp_path, "test/table.csv", b"tampered")
    routes["/t"] = CONTENT
    assert files.fetch("test/table.csv", tmp_path, url=f"{base}/t").read_bytes() == CONTENT


def test_fetch_http_error_is_clear(tmp_path, entry, server):
    base, _, _ = server
    with pytest.raises(RuntimeError, match=r"download from .*/missing.csv failed: HTTP Error 404"):
        files.fetch("test/table.csv", tmp_path, url=f"{base}/missing.csv")
    assert not (tmp_path / "test" / "table.csv").exists()


def test_fetch_without_url_says_how_to_obtain(tmp_path, entry):
    with pytest.raises(ValueError, match="no download URL") as err:
        files.fetch("test/table.csv.gz", tmp_path)
    assert "https://example.org/table" in str(err.value)


def test_fetch_gz_accepts_other_wrapper_and_gzips_plain_or_zipped_content(tmp_path, entry, server):
    base, routes, _ = server
    routes["/other.gz"] = gzip.compress(CONTENT, compresslevel=1, mtime=7)
    p = files.fetch("test/table.csv.gz", tmp_path, url=f"{base}/other.gz")
    assert gzip.decompress(p.read_bytes()) == CONTENT
    routes["/plain.csv"] = CONTENT
    p = files.fetch("test/table.csv.gz", tmp_path / "b", url=f"{base}/plain.csv")
    assert gzip.decompress(p.read_bytes()) == CONTENT
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("table.csv", CONTENT)
    routes["/archive.zip"] = buf.getvalue()
    p = files.fetch("test/zipped.csv.gz", tmp_path, url=f"{base}/archive.zip")
    assert gzip.decompress(p.read_bytes()) == CONTENT
    routes["/bad.zip"] = b"PK not really"
    with pytest.raises(ValueError, match="not a zip archive"):
        files.fetch("test/zipped.csv.gz", tmp_path / "c", url=f"{base}/bad.zip")


def test_fetch_all_collects_errors(tmp_path, entry, server):
    base, routes, _ = server
    routes["/table.csv"] = CONTENT
    out = files.fetch_all(["test/table.csv", "test/table.csv.gz", "nope/x"], tmp_path, url=f"{base}/table.csv")
    assert out["test/table.csv"] == "ok" and out["test/table.csv.gz"] == "ok"
    assert "unknown data file" in out["nope/x"]
    assert (tmp_path / "test" / "table.csv.gz").is_file()  # plain content was gzipped


# -- split cache ---------------------------------------------------------------------------------------------------

def _toy(seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(20, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    return Dataset("toy", X[:10], y[:10], X[10:15], y[10:15], X[15:], y[15:], ["a", "b", "c"], 2,
                   domain=([-1.5, -2.0, 0.1], [1.0, 2.25, 3.0]), protected=[0], categorical_groups=[[1, 2]],
                   meta={"source": "raw", "nested": {"x": [1, 2]}})


def test_cache_hit_identical_and_changed_spec_rebuilds(tmp_path):
    calls = []

    def build(seed=0):
        calls.append(seed)
        return _toy(seed)

    spec = {"dataset": "toy", "n_val": 5, "files": {"x": "ab"}, "code": "v1"}
    a = files.cached("toy", spec, build, tmp_path)
    b = files.cached("toy", spec, build, tmp_path)
    assert calls == [0] and a.meta["cache"] == "built" and b.meta["cache"] == "hit"
    for k in ("X_train", "y_train", "X_val", "y_val", "X_test", "y_test"):
        x, z = getattr(a, k), getattr(b, k)
        assert x.dtype == z.dtype and x.shape == z.shape and x.tobytes() == z.tobytes()
    assert b.domain == a.domain and b.feature_names == a.feature_names and b.protected == a.protected
    assert b.categorical_groups == a.categorical_groups and b.meta["nested"] == {"x": [1, 2]}
    key = files.cache_key(spec)
    assert b.meta["cache_key"] == key
    assert sorted(p.name for p in (tmp_path / "toy").iterdir()) == [f"{key}.meta.json", f"{key}.npz"]
    for change in ({"n_val": 6}, {"files": {"x": "ac"}}, {"code": "v2"}):
        files.cached("toy", {**spec, **change}, lambda: build(1), tmp_path)
    assert calls == [0, 1, 1, 1]
    assert len(list((tmp_path / "toy").glob("*.npz"))) == 4


def test_cache_rebuilds_unreadable_entry_and_can_be_disabled(tmp_path):
    calls = []
    spec = {"dataset": "toy"}
    files.cached("toy", spec, lambda: calls.append(1) or _toy(), tmp_path)
    npz, _ = files.cache_paths("toy", files.cache_key(spec), tmp_path)
    npz.write_bytes(b"garbage")
    assert files.cached("toy", spec, lambda: calls.append(1) or _toy(), tmp_path).meta["cache"] == "built"
    assert len(calls) == 2 and not [p for p in (tmp_path / "toy").iterdir() if p.name.startswith(".")]


def test_cache_disabled_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ds = files.cached("toy", {"dataset": "toy"}, _toy, False)
    assert ds.meta["cache"] == "off" and list(tmp_path.iterdir()) == []
