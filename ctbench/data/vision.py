"""MNIST (reference §6.3): class-balanced resample with replacement, pixels in [−1, 1], full 10k test set.

Reference mode (TaijaData ``load_mnist(11_000)`` + CTExperiments): ``n_per_class = 1100`` indices per class are
drawn *with replacement* from the 60,000 training images (``default_rng(seed)``, classes in order 0..9), all
indices are sorted (so duplicates sit next to each other and rows are in original index order), and
``n_val = 1000`` rows go to validation per class (:func:`stratified_val_split` with ``default_rng([seed, 1])``).
Pixels are ``2·(x/255) − 1`` (float32), flattened row-major to 784 features (``pixel_r{row}_c{col}``). The
reference flattened column-major over MLDatasets' (x, y) layout, which is the same order as row-major over
``[row, col]``, so the protected features — the top and bottom five pixel rows, 1-based 1–140 and 645–784 in the
reference — are flat indices 0–139 and 644–783 here. Domain: the fixed box [−1, 1] for every pixel.

Test: the full 10,000-image test set (reference). With ``fidelity.test_sizes == "paper"`` the test split is the
first ``round(0.2·n_train)`` = 2,000 test images (the paper's "No. Test").
Julia's ``Xoshiro(42)`` stream cannot be replayed, so the drawn indices differ from the reference's; the recipe and
sizes are the same.
"""

from __future__ import annotations

import gzip
import os
from typing import Any

import numpy as np

from ..fidelity import Fidelity, resolve_fidelity
from . import files
from .base import Dataset, stratified_val_split
from .registry import register

CODE_VERSION = "vision-1"
VAL_SPLIT_STREAM = 1

MNIST_FILES = {
    "train_images": "mnist/train-images-idx3-ubyte.gz",
    "train_labels": "mnist/train-labels-idx1-ubyte.gz",
    "test_images": "mnist/t10k-images-idx3-ubyte.gz",
    "test_labels": "mnist/t10k-labels-idx1-ubyte.gz",
}
#: Top five and bottom five pixel rows of the 28×28 image, row-major flat indices (reference §2.3).
MNIST_PROTECTED = list(range(0, 5 * 28)) + list(range(23 * 28, 28 * 28))


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Decode a (gzip-compressed) IDX file of unsigned bytes: magic 2049 labels ``(n,)``, 2051 images ``(n, r, c)``."""
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    magic = int.from_bytes(raw[:4], "big")
    if magic == 2049:
        n = int.from_bytes(raw[4:8], "big")
        shape, offset = (n,), 8
    elif magic == 2051:
        n, r, c = (int.from_bytes(raw[i:i + 4], "big") for i in (4, 8, 12))
        shape, offset = (n, r, c), 16
    else:
        raise ValueError(f"{path}: not an IDX ubyte file (magic {magic})")
    data = np.frombuffer(raw, dtype=np.uint8, offset=offset)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: expected {int(np.prod(shape))} values after the header, found {data.size}")
    return data.reshape(shape)


def _scale(images: np.ndarray) -> np.ndarray:
    """uint8 (n, 28, 28) → float32 (n, 784) in [−1, 1], row-major."""
    x = images.reshape(len(images), -1).astype(np.float32)
    return x * np.float32(2.0 / 255.0) - np.float32(1.0)


def resample_indices(labels: np.ndarray, n_per_class: int, rng: np.random.Generator,
                     replace: bool = True) -> np.ndarray:
    """``n_per_class`` indices per class (classes in sorted order), drawn from ``rng``, all sorted."""
    idx = [rng.choice(np.flatnonzero(labels == c), size=n_per_class, replace=replace) for c in np.unique(labels)]
    return np.sort(np.concatenate(idx))


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"dataset 'mnist': {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _build(*, fid: Fidelity, seed: int, raw_dir: Any, n_per_class: int, n_val: int, replace: bool) -> Dataset:
    paths = {k: files.raw_path(v, raw_dir) for k, v in MNIST_FILES.items()}
    train_labels = read_idx(paths["train_labels"]).astype(np.int64)
    idx = resample_indices(train_labels, n_per_class, np.random.default_rng(seed), replace)
    train_images = read_idx(paths["train_images"])
    X_tv, y_tv = _scale(train_images[idx]), train_labels[idx]
    del train_images
    if not 0 <= n_val < len(y_tv):
        raise ValueError(f"dataset 'mnist': n_val={n_val} must lie in [0, {len(y_tv)})")
    tr, va = stratified_val_split(y_tv, n_val, np.random.default_rng([seed, VAL_SPLIT_STREAM]))

    X_test = _scale(read_idx(paths["test_images"]))
    y_test = read_idx(paths["test_labels"]).astype(np.int64)
    n_test_full = len(y_test)
    if fid.test_sizes == "paper":
        n_test = int(round(0.2 * len(tr)))
        X_test, y_test = X_test[:n_test], y_test[:n_test]

    meta = {
        "source": "raw", "files": {v: files.file_info(v).sha256 for v in MNIST_FILES.values()},
        "n_per_class": n_per_class, "replace": replace, "resample_rng": f"default_rng({seed})",
        "n_duplicates": int(len(idx) - len(np.unique(idx))),
        "n_train": len(tr), "n_val": len(va), "n_val_requested": n_val, "n_test": len(y_test),
        "n_test_full": n_test_full, "seed": seed, "val_split_rng": f"default_rng([{seed}, {VAL_SPLIT_STREAM}])",
        "fidelity": fid.mode, "test_sizes": fid.test_sizes, "pixel_range": [-1.0, 1.0],
        "layout": "row-major 28x28", "code_version": CODE_VERSION,
    }
    d = X_tv.shape[1]
    return Dataset(
        name="mnist",
        X_train=X_tv[tr], y_train=y_tv[tr], X_val=X_tv[va], y_val=y_tv[va], X_test=X_test, y_test=y_test,
        feature_names=[f"pixel_r{r:02d}_c{c:02d}" for r in range(28) for c in range(28)],
        n_classes=10,
        domain=([-1.0] * d, [1.0] * d),
        protected=list(MNIST_PROTECTED),
        categorical_groups=[],
        meta=meta,
    )


@register("mnist", family="vision", aliases=("MNIST",),
          description="MNIST, 1,100 per class resampled with replacement (11k), full 10k test, pixels in [−1, 1]")
def load_mnist(*, fidelity: Any = "reference", seed: int = 42, raw_dir: str | os.PathLike | None = None,
               cache_dir: str | os.PathLike | None | bool = None, **params: Any) -> Dataset:
    """Load MNIST (reference §6.3). Params: ``n_per_class`` (1100), ``n_val`` (1000), ``replace`` (True)."""
    known = {"n_per_class": 1100, "n_val": 1000, "replace": True}
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValueError(f"dataset 'mnist': unknown parameter(s) {unknown}; known: {sorted(known)}")
    p = {**known, **params}
    fid = resolve_fidelity(fidelity)
    seed = _check_int("seed", seed, 0)
    n_per_class = _check_int("n_per_class", p["n_per_class"], 1)
    n_val = _check_int("n_val", p["n_val"], 0)
    if not isinstance(p["replace"], bool):
        raise ValueError(f"dataset 'mnist': replace must be a bool, got {p['replace']!r}")
    key_spec = {
        "dataset": "mnist", "code": CODE_VERSION, "seed": seed, "n_per_class": n_per_class, "n_val": n_val,
        "replace": p["replace"], "files": {v: files.file_info(v).sha256 for v in MNIST_FILES.values()},
        "fidelity": {"mode": fid.mode, "test_sizes": fid.test_sizes},
    }
    return files.cached("mnist", key_spec,
                        lambda: _build(fid=fid, seed=seed, raw_dir=raw_dir, n_per_class=n_per_class, n_val=n_val,
                                       replace=p["replace"]),
                        cache_dir)
