"""Datasets of the consistency study (Black et al., ICLR 2022, App. B.1) prepared as that paper describes.

The authors' preprocessed files are not public (their code downloads a private archive), so each table is rebuilt
from the raw files of ``shared/data`` (checksummed through :mod:`.files`) by the recipe of App. B.1:

- ``cardiotocography`` (``CTG``): UCI ``CTG.xls``, sheet ``Data``, the 2,126 records; the 21 features LB … Tendency
  (the per-second columns AC.1 … DP.1 named AC … DP); label 1 = normal (NSP = 1), 0 = suspect or pathologic;
  min-max scaled to [0, 1]; test = 425 rows (the paper: 1,700 train / 425 validation; 2,126 − 425 = 1,701 here).
- ``epileptic_seizure`` (``Seizure``): the UCI Epileptic Seizure Recognition table rebuilt from the Bonn EEG
  recordings as the MANIFEST describes (chunk k = 1..23 of 178 samples of each of the 500 recordings; 11,500 × 178);
  label 1 = seizure (set S), 0 = sets Z, O, N, F; z-scored; test = 3,550 rows (the paper: 7,950 / 3,550).
- ``heloc_b22``: FICO HELOC with all 10,459 rows (the paper keeps the 588 rows without a bureau record); the two
  categorical features MaxDelq2PublicRecLast12M and MaxDelqEver one-hot (levels that occur, special codes included)
  → 39 features (the paper: "40"; which further column they one-hot encoded is not stated); label 1 = ``Good``;
  min-max scaled; test = 2,615 rows (the paper: 7,844 / 2,615).
- ``credit_default_b22`` (``taiwanese_credit``): the UCI credit default file, all 30,000 rows, not balanced; SEX as
  one 0/1 column, EDUCATION and MARRIAGE one-hot, the 20 other attributes numeric → 32 features (as the paper);
  label 1 = no default; min-max scaled; 7,500 training rows (the paper), all other rows are the test split.

German credit needs no variant: ``german_credit`` already has the paper's 61 features and its 700/200 split (with the
default ``n_val = 100``). Warfarin has no offline copy and no loader. Data switch ``scaling`` (:mod:`.scaling_switch`):
``"standard_all"`` (German credit, ``credit_default_b22``) z-scores every encoded column, one-hot ones included;
``"datalib"`` (CTG) is the authors' table (one min-max for the whole table) and split (1,700 / 425); these are the
defaults of those three datasets (what the published numbers were made on); ``"loader"`` gives the recipes above
(HELOC's and Seizure's only recipe).

Common pipeline: rows permuted with ``default_rng([seed, 3])``; test = the last ``n_test`` permuted rows; scaling
statistics (min/max or mean/sd) from the train+validation rows only; validation = ``n_val`` rows of train+validation
drawn per class with ``default_rng([seed, 1])`` (default 0: the paper trains on every non-test row; its "validation
split", where counterfactuals are computed, is ctbench's test split); ``domain`` = per-feature min and max of the
train+validation rows (the authors' ``get_data_range``, the clamp of every search).
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from . import files
from .base import Dataset, stratified_val_split
from .registry import register
from .scaling_switch import DEFAULTS, check_scaling, datalib_normalize, datalib_split, standardize_all

CODE_VERSION = "consistency-1"
VAL_SPLIT_STREAM = 1
SHUFFLE_STREAM = 3


@dataclass
class _Raw:
    frame: pd.DataFrame          # numeric columns and categorical columns (values = levels)
    y: np.ndarray
    categorical: tuple[str, ...] = ()
    binary: tuple[str, ...] = ()  # 0/1 columns kept as one column (a group of one)


@dataclass(frozen=True)
class _Spec:
    name: str
    raw_files: tuple[str, ...]
    read: Callable[[Any], _Raw]
    scaling: str                 # "minmax" | "zscore"
    n_test: int | None = None    # test = the last n_test permuted rows ...
    n_train: int | None = None   # ... or every row after the first n_train + n_val
    description: str = ""


# -- readers -----------------------------------------------------------------------------------------------------

CTG_FEATURES = ["LB", "AC", "FM", "UC", "DL", "DS", "DP", "ASTV", "MSTV", "ALTV", "MLTV", "Width", "Min", "Max",
                "Nmax", "Nzeros", "Mode", "Mean", "Median", "Variance", "Tendency"]


def _read_ctg(raw_dir: Any) -> _Raw:
    path = files.raw_path("cardiotocography/CTG.xls", raw_dir)
    try:
        sheet = pd.read_excel(path, sheet_name="Data", header=1, engine="calamine")
    except ImportError as e:
        raise ImportError("cardiotocography: reading CTG.xls needs python-calamine (pip install python-calamine)") \
            from e
    sheet = sheet[sheet["NSP"].notna()].reset_index(drop=True)
    per_second = {c: f"{c}.1" for c in ("AC", "FM", "UC", "DL", "DS", "DP")}  # the second AC..DP block
    frame = pd.DataFrame({c: sheet[per_second.get(c, c)].astype(np.float64) for c in CTG_FEATURES})
    nsp = sheet["NSP"].astype(int).to_numpy()
    if not set(nsp) <= {1, 2, 3}:
        raise ValueError(f"cardiotocography: unexpected NSP values {sorted(set(nsp))}")
    return _Raw(frame, (nsp == 1).astype(np.int64))


SEIZURE_SETS = {"Z": 5, "O": 4, "N": 3, "F": 2, "S": 1}  # Bonn set -> UCI label y
SEIZURE_CHUNK, SEIZURE_CHUNKS = 178, 23
_MEMBER = re.compile(r"(?:^|/)([ZONFS])(\d{3})\.txt$", re.IGNORECASE)


def seizure_table(raw_dir: Any) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The UCI table rebuilt from the Bonn recordings: (X 11,500 × 178, UCI label y 1..5, row ids "X{k}.{file}").
    Row order: sets Z, O, N, F, S, files in number order, chunks k = 1..23."""
    path = files.raw_path("epileptic_seizure/bonn_eeg_sets_ZONFS.zip", raw_dir)
    recordings: dict[tuple[str, int], np.ndarray] = {}
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            m = _MEMBER.search(name)
            if m is None or "__MACOSX" in name:
                continue
            key = (m.group(1).upper(), int(m.group(2)))
            if key in recordings:
                raise ValueError(f"epileptic_seizure: recording {key} occurs twice in {path.name}")
            recordings[key] = np.loadtxt(io.BytesIO(zf.read(name)), dtype=np.float64)
    for s in SEIZURE_SETS:
        found = sorted(n for (t, n) in recordings if t == s)
        if found != list(range(1, 101)):
            raise ValueError(f"epileptic_seizure: set {s} has {len(found)} recordings, expected 100 (001..100)")
    X, y, ids = [], [], []
    for s, label in SEIZURE_SETS.items():
        for n in range(1, 101):
            rec = recordings[(s, n)]
            if rec.shape != (4097,):
                raise ValueError(f"epileptic_seizure: recording {s}{n:03d} has {rec.shape} samples, expected 4097")
            X.append(rec[:SEIZURE_CHUNK * SEIZURE_CHUNKS].reshape(SEIZURE_CHUNKS, SEIZURE_CHUNK))
            y += [label] * SEIZURE_CHUNKS
            ids += [f"X{k}.{s}{n:03d}" for k in range(1, SEIZURE_CHUNKS + 1)]
    return np.concatenate(X), np.asarray(y, dtype=np.int64), ids


def _read_seizure(raw_dir: Any) -> _Raw:
    X, y, _ = seizure_table(raw_dir)
    frame = pd.DataFrame(X, columns=[f"X{i}" for i in range(1, SEIZURE_CHUNK + 1)])
    return _Raw(frame, (y == 1).astype(np.int64))


HELOC_CATEGORICAL = ("MaxDelq2PublicRecLast12M", "MaxDelqEver")


def _read_heloc(raw_dir: Any) -> _Raw:
    df = pd.read_csv(files.raw_path("heloc/heloc_dataset.csv", raw_dir))
    y = (df.pop("RiskPerformance").astype(str) == "Good").to_numpy().astype(np.int64)
    return _Raw(df, y, categorical=HELOC_CATEGORICAL)


def _read_taiwan(raw_dir: Any) -> _Raw:
    df = pd.read_csv(files.raw_path("credit_default/UCI_Credit_Card.csv", raw_dir)).drop(columns=["ID"])
    y = 1 - df.pop("default.payment.next.month").to_numpy().astype(np.int64)  # 1 = no default
    df["SEX"] = (df["SEX"] == 2).astype(np.float64)  # 1 = female (UCI code 2)
    return _Raw(df, y, categorical=("EDUCATION", "MARRIAGE"), binary=("SEX",))


# -- the pipeline ------------------------------------------------------------------------------------------------

def _encode(raw: _Raw) -> tuple[np.ndarray, list[str], list[list[int]], list[int]]:
    """One-hot the categorical columns in place (levels that occur, sorted); (X, names, groups, numeric columns)."""
    cols, names, groups, numeric = [], [], [], []
    for col in raw.frame.columns:
        v = raw.frame[col].to_numpy()
        if col in raw.categorical:
            levels = sorted(set(v.tolist()))
            groups.append(list(range(len(names), len(names) + len(levels))))
            cols += [(v == lev).astype(np.float64) for lev in levels]
            names += [f"{col}__{lev}" for lev in levels]
        else:
            if col in raw.binary:
                groups.append([len(names)])
            else:
                numeric.append(len(names))
            cols.append(v.astype(np.float64))
            names.append(str(col))
    return np.column_stack(cols), names, groups, numeric


def _build(spec: _Spec, *, seed: int, raw_dir: Any, n_val: int, scaling: str = "loader") -> Dataset:
    raw = spec.read(raw_dir)
    X, names, groups, numeric = _encode(raw)
    n = len(raw.y)
    if scaling == "datalib":  # data switch (scaling_switch.py): the authors' table and split
        return _build_datalib(spec, raw.y, X, names, groups, seed=seed, n_val=n_val)
    perm = np.random.default_rng([seed, SHUFFLE_STREAM]).permutation(n)
    X, y = X[perm], raw.y[perm].astype(np.int64)
    n_tv = n - spec.n_test if spec.n_test is not None else spec.n_train + n_val
    if not 0 < n_tv < n or not 0 <= n_val < n_tv:
        raise ValueError(f"dataset {spec.name!r}: n_val={n_val} leaves no training rows ({n} rows in all)")
    fit = X[:n_tv, numeric]
    if spec.scaling == "minmax":
        shift, scale = fit.min(0), fit.max(0) - fit.min(0)
    else:
        shift, scale = fit.mean(0), fit.std(0, ddof=1)
    scale = np.where(scale > 0, scale, 1.0)  # constant columns are only shifted
    X[:, numeric] = (X[:, numeric] - shift) / scale
    switch: dict[str, Any] = {}
    if scaling == "standard_all":  # data switch (scaling_switch.py): every column z-scored on top
        X, switch["standardised_all"] = standardize_all(X, n_tv)
        switch["scaling_switch"] = scaling
    X = X.astype(np.float32)
    X_tv, y_tv, X_te, y_te = X[:n_tv], y[:n_tv], X[n_tv:], y[n_tv:]
    tr, va = stratified_val_split(y_tv, n_val, np.random.default_rng([seed, VAL_SPLIT_STREAM]))
    domain = (X_tv.min(0).astype(np.float64).tolist(), X_tv.max(0).astype(np.float64).tolist())
    meta = {
        "source": "raw", "files": {f: files.file_info(f).sha256 for f in spec.raw_files},
        "recipe": "Black et al. (2022), App. B.1", "scaling": spec.scaling, "n_rows": n, "n_trainval": n_tv,
        "n_train": len(tr), "n_val": len(va), "n_test": len(y_te), "seed": seed,
        "shuffle_rng": f"default_rng([{seed}, {SHUFFLE_STREAM}])",
        "val_split_rng": f"default_rng([{seed}, {VAL_SPLIT_STREAM}])",
        "class_counts_trainval": np.bincount(y_tv, minlength=2).tolist(),
        "scaler": {"columns": [names[i] for i in numeric], "shift": shift.tolist(), "scale": scale.tolist(),
                   "fit_rows": f"first {n_tv} permuted rows (train+validation)"},
        "domain": "min/max of train+validation rows", "code_version": CODE_VERSION, **switch,
    }
    return Dataset(name=spec.name, X_train=X_tv[tr], y_train=y_tv[tr], X_val=X_tv[va], y_val=y_tv[va],
                   X_test=X_te, y_test=y_te, feature_names=names, n_classes=2, domain=domain, protected=[],
                   categorical_groups=groups, meta=meta)


def _build_datalib(spec: _Spec, y_raw: np.ndarray, X: np.ndarray, names: list[str], groups: list[list[int]], *,
                   seed: int, n_val: int) -> Dataset:
    """The rows in file order scaled and split as datalib does (:func:`.scaling_switch.datalib_normalize`,
    :func:`.scaling_switch.datalib_split`); validation rows, if asked for, drawn as the default path draws them."""
    X, norm = datalib_normalize(X)
    tr_rows, te_rows = datalib_split(len(y_raw))
    y = y_raw.astype(np.int64)
    X_tv, y_tv, X_te, y_te = X[tr_rows], y[tr_rows], X[te_rows], y[te_rows]
    if not 0 <= n_val < len(y_tv):
        raise ValueError(f"dataset {spec.name!r}: n_val={n_val} leaves no training rows ({len(y_tv)} in all)")
    tr, va = stratified_val_split(y_tv, n_val, np.random.default_rng([seed, VAL_SPLIT_STREAM]))
    domain = (X_tv.min(0).astype(np.float64).tolist(), X_tv.max(0).astype(np.float64).tolist())
    meta = {
        "source": "raw", "files": {f: files.file_info(f).sha256 for f in spec.raw_files},
        "recipe": "Black et al. (2022): the authors' code (utils.load_dataset, datalib-dev 0.0.2)",
        "scaling": "datalib Normalize: one min-max for all rows and columns", "scaling_switch": "datalib",
        "datalib_normalize": norm, "split": "datalib Split(tr=4, te=1, seed=0): RandomState(0).permutation, file order",
        "n_rows": len(y), "n_trainval": len(y_tv), "n_train": len(tr), "n_val": len(va), "n_test": len(y_te),
        "n_unused": len(y) - len(y_tv) - len(y_te), "seed": seed,
        "val_split_rng": f"default_rng([{seed}, {VAL_SPLIT_STREAM}])",
        "class_counts_trainval": np.bincount(y_tv, minlength=2).tolist(),
        "domain": "min/max of train+validation rows", "code_version": CODE_VERSION,
    }
    return Dataset(name=spec.name, X_train=X_tv[tr], y_train=y_tv[tr], X_val=X_tv[va], y_val=y_tv[va],
                   X_test=X_te, y_test=y_te, feature_names=names, n_classes=2, domain=domain, protected=[],
                   categorical_groups=groups, meta=meta)


def _make_loader(spec: _Spec) -> Callable[..., Dataset]:
    def loader(*, fidelity: Any = "reference", seed: int = 42, raw_dir: str | os.PathLike | None = None,
               cache_dir: str | os.PathLike | None | bool = None, n_val: int = 0, scaling: str | None = None,
               **params: Any) -> Dataset:
        if params:
            raise ValueError(f"dataset {spec.name!r}: unknown parameter(s) {sorted(params)}; known: "
                             "['n_val', 'scaling']")
        scaling = check_scaling(spec.name, scaling)
        for key, value in (("seed", seed), ("n_val", n_val)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
                raise ValueError(f"dataset {spec.name!r}: {key} must be an integer >= 0, got {value!r}")
        key_spec = {"dataset": spec.name, "code": CODE_VERSION, "seed": int(seed), "n_val": int(n_val),
                    "files": {f: files.file_info(f).sha256 for f in spec.raw_files}}
        if scaling != "loader":  # the loaders' own recipe keeps the key (and cache entry) it always had
            key_spec["scaling"] = scaling
        return files.cached(spec.name, key_spec, lambda: _build(spec, seed=int(seed), raw_dir=raw_dir,
                                                                n_val=int(n_val), scaling=scaling), cache_dir)

    loader.__name__ = f"load_{spec.name}"
    loader.__doc__ = (f"Load {spec.name!r} ({spec.description}). Params: n_val (default 0), scaling (default "
                      f"{DEFAULTS.get(spec.name, 'loader')!r}; see scaling_switch.py). The fidelity mode "
                      "does not apply (one recipe, the paper's). See the module docstring.")
    return loader


SPECS: dict[str, _Spec] = {s.name: s for s in [
    _Spec("cardiotocography", ("cardiotocography/CTG.xls",), _read_ctg, "minmax", n_test=425,
          description="UCI CTG, normal vs suspect/pathologic, 1,701/425 rows, 21 features in [0, 1]"),
    _Spec("epileptic_seizure", ("epileptic_seizure/bonn_eeg_sets_ZONFS.zip",), _read_seizure, "zscore",
          n_test=3550, description="UCI Epileptic Seizure (Bonn EEG), seizure vs not, 7,950/3,550 rows, 178 features"),
    _Spec("heloc_b22", ("heloc/heloc_dataset.csv",), _read_heloc, "minmax", n_test=2615,
          description="FICO HELOC as Black et al. 2022, all rows, 7,844/2,615, 39 features in [0, 1]"),
    _Spec("credit_default_b22", ("credit_default/UCI_Credit_Card.csv",), _read_taiwan, "minmax", n_train=7500,
          description="UCI credit default as Black et al. 2022, 7,500/22,500 rows, 32 features in [0, 1]"),
]}
_ALIASES = {"cardiotocography": ("CTG",), "epileptic_seizure": ("Seizure",),
            "credit_default_b22": ("taiwanese_credit",)}

LOADERS: dict[str, Callable[..., Dataset]] = {
    name: register(name, family="tabular", description=spec.description, aliases=_ALIASES.get(name, ()))(
        _make_loader(spec))
    for name, spec in SPECS.items()
}
