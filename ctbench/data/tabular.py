"""Real tabular datasets (reference §6.2): Adult, California housing, credit default, GMSC; German credit and HELOC.

Pipeline of the four CT datasets (TaijaData ``pre_pre_process``/``pre_process``, called with ``n = N`` and
``train_test_split = 0.8``, ``shuffle = false``):

1. one table of ``N`` rows in a fixed order (Adult: ``adult.data`` in file order; CH, Cred, GMSC: the class-balanced
   table TaijaData built once by an unseeded random undersample, see below);
2. train(+validation) = the first ``round(0.8·N)`` rows, test = the rest;
3. MLJ ``Standardizer(count=true)``: every numeric column (continuous and integer) is z-scored with the mean and the
   Bessel-corrected standard deviation of the *training rows only*; then (Adult, Cred) ``ContinuousEncoder``: every
   categorical column is replaced, in place, by one 0/1 column per level (no level dropped), named
   ``feature__level``;
4. validation = ``n_val`` rows of train(+val) drawn per class (:func:`stratified_val_split`, ``floor`` per class) with
   ``np.random.default_rng([seed, 1])``; the remaining training rows keep their order;
5. domain box = :func:`ctbench.constraints.infer_domain` on train+validation rows with ``fidelity.domain_n_sigma``.

**Row source.** The reference's undersampling draw (``MLUtils.undersample(shuffle=true)``, unseeded) cannot be
replayed. When the TaijaData tables ``taijadata_processed/{cal_housing,credit_default,gmsc}.csv`` are in the data
directory they are read directly: they are the reference's rows in the reference's order (every one of their rows
is a row of the raw file, checked by the tests) and ``meta["source"] = "taijadata_processed"``. Otherwise the table
is rebuilt from the raw file with the same recipe and a seeded undersample (``default_rng([seed, 2])``: keep all rows
of the minority class and as many randomly chosen rows of the majority class, then shuffle all rows) and
``meta["source"] = "raw"``; sizes and encoding are the same, the rows and their order are not. ``source="raw"`` or
``source="processed"`` forces one of the two. Adult needs no undersampling and is always built from ``adult.data``.

**Adult.** ``adult.data`` only (32,561 rows; ``adult.test`` is not used). As in CounterfactualExplanations.jl's
``dev/artifacts/tabular.qmd``, every categorical value is label-encoded by its position in a fixed list and ``?``
(missing) is kept as a level of its own. The one-hot columns follow MLJ's level order: numeric order of the codes,
except in the three columns that contain ``?`` (workclass, occupation, country) which CSV.jl reads as strings, so
their codes sort as strings ("0" < "1" < "10" < … < "?"). Columns are named with the original labels
(``workclass__Private``). ``fidelity.adult_substring_groups`` (reference) builds the categorical groups the way
TaijaData does, by substring match of each variable name in the column names, which puts the standardised
``education_num`` into the education group (reference §11.12); ``False`` gives each one-hot block as its group.

**Paper test sizes.** With ``fidelity.test_sizes == "paper"`` the test split is the *first* ``round(0.2·n_train)``
test rows, ``n_train`` being the value in the paper's configs (25,049, 15,504, 9,617, 12,371; reference §6.2), which
gives the paper's "No. Test" column: Adult 5,010, CH 3,101, Cred 1,923, GMSC 2,474. The scaler, the training rows
and everything else are unchanged.

**German credit and HELOC** (the consistency study, Black et al. 2022, whose preprocessed files are not public):
German = UCI ``german.data`` (1,000 rows; 7 numeric attributes z-scored, 13 categorical attributes one-hot with the
levels that occur, ``attribute__Axx``; target 1 = good, 0 = bad); HELOC = FICO ``heloc_dataset.csv`` without the
588 rows whose 23 features are all −9 (no bureau record), all 23 features z-scored with the special codes −7/−8/−9
kept as values (as the CARLA copy does); target 1 = ``Good``. Both files are in no meaningful order, so their rows
are permuted with ``default_rng([seed, 3])`` before the 80/20 split; the scaler is fit on training rows only and no
class balancing is done. Default ``n_val``: German 100, HELOC 1,000. ``test_sizes`` does not apply to them.
German's default ``scaling`` is ``"standard_all"`` (:mod:`.scaling_switch`): every column, one-hot ones included,
z-scored on top, as App. B.1 says and Table 4's costs need; ``scaling="loader"`` gives the table described here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..fidelity import Fidelity, resolve_fidelity
from . import files
from .base import Dataset, stratified_val_split
from .registry import register
from .scaling_switch import check_scaling, standardize_all
from .tabular_encoding import RawTable, encode_table
from .tabular_raw import (
    ADULT_CATS,
    UNDERSAMPLE_STREAM,
    read_adult,
    read_ch_processed,
    read_ch_raw,
    read_cred_processed,
    read_cred_raw,
    read_german,
    read_gmsc_processed,
    read_gmsc_raw,
    read_heloc,
)

#: Bump when the output of any loader here changes (part of every cache key).
CODE_VERSION = "tabular-1"
#: Second entropy words of the RNGs ``default_rng([seed, stream])``.
VAL_SPLIT_STREAM = 1
SHUFFLE_STREAM = 3  # UNDERSAMPLE_STREAM = 2 lives with the readers (.tabular_raw)

TRAIN_SHARE = 0.8


# -- the shared pipeline (readers: .tabular_raw; encoding: .tabular_encoding) ------------------------------------

def _fidelity(fidelity: Any) -> Fidelity:
    return resolve_fidelity(fidelity)


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class _Spec:
    name: str
    raw_files: tuple[str, ...]
    read_raw: Callable[[Any, int], RawTable]  # (raw_dir, seed) -> table
    processed_file: str | None = None
    read_processed: Callable[[Any], RawTable] | None = None
    protected: tuple[str, ...] = ()
    cats_substring: tuple[str, ...] | None = None  # Adult: TaijaData's substring groups
    shuffle: bool = False  # German/HELOC: permute rows before the split
    ct_dataset: bool = True  # test_sizes applies
    paper_n_train: int | None = None  # ``n_train`` of the paper's configs (its "No. Test" = round(0.2·n_train))
    n_val: int = 1000
    description: str = ""


def _build(spec: _Spec, *, fid: Fidelity, seed: int, raw_dir: Any, n_val: int, source: str,
           scaling: str = "loader") -> Dataset:
    if source == "taijadata_processed":
        table = spec.read_processed(raw_dir)
        used = [spec.processed_file]
    else:
        table = spec.read_raw(raw_dir, seed)
        used = list(spec.raw_files)
    n = len(table.y)
    if spec.shuffle:
        perm = np.random.default_rng([seed, SHUFFLE_STREAM]).permutation(n)
        table = RawTable(table.frame.iloc[perm].reset_index(drop=True), table.y[perm], table.levels, table.labels)
    n_tv = int(round(TRAIN_SHARE * n))
    enc = encode_table(table, n_tv)
    y = table.y.astype(np.int64)
    X, switch = enc.X, {}
    if scaling == "standard_all":  # data switch (scaling_switch.py): every column z-scored on top
        X, switch["standardised_all"] = standardize_all(enc.X, n_tv)
        switch["scaling_switch"] = scaling
    X_tv, y_tv = X[:n_tv], y[:n_tv]
    X_te, y_te = X[n_tv:], y[n_tv:]
    n_test_full = len(y_te)
    if not 0 <= n_val < n_tv:
        raise ValueError(f"dataset {spec.name!r}: n_val={n_val} must lie in [0, {n_tv})")
    if spec.ct_dataset and fid.test_sizes == "paper":
        n_test = int(round((1 - TRAIN_SHARE) * spec.paper_n_train))
        X_te, y_te = X_te[:n_test], y_te[:n_test]

    tr, va = stratified_val_split(y_tv, n_val, np.random.default_rng([seed, VAL_SPLIT_STREAM]))
    X_train, X_val = X_tv[tr], X_tv[va]

    names = enc.names
    if spec.cats_substring is not None and fid.adult_substring_groups:
        groups = [[i for i, nm in enumerate(names) if cat in nm] for cat in spec.cats_substring]
    else:
        groups = list(enc.groups.values())
    protected = [names.index(p) for p in spec.protected]

    meta = {
        "source": source, "files": {f: files.file_info(f).sha256 for f in used},
        "n_rows": n, "n_trainval": n_tv, "n_train": len(tr), "n_val": len(va), "n_val_requested": n_val,
        "n_test": len(y_te), "n_test_full": n_test_full,
        "seed": seed, "val_split_rng": f"default_rng([{seed}, {VAL_SPLIT_STREAM}])",
        "fidelity": fid.mode, "domain_n_sigma": fid.domain_n_sigma, "test_sizes": fid.test_sizes,
        "class_counts_trainval": np.bincount(y_tv, minlength=2).tolist(),
        "standardised": {"columns": [names[i] for i in enc.numeric], "mean": enc.mean, "std": enc.std,
                         "fit_rows": f"first {n_tv} rows (train+validation)"},
        "code_version": CODE_VERSION, **switch,
    }
    if source == "raw" and spec.processed_file is not None:
        meta["undersample_rng"] = f"default_rng([{seed}, {UNDERSAMPLE_STREAM}])"
    if spec.shuffle:
        meta["shuffle_rng"] = f"default_rng([{seed}, {SHUFFLE_STREAM}])"
    if spec.cats_substring is not None:
        meta["adult_substring_groups"] = fid.adult_substring_groups

    # torch (through constraints) only once a dataset is built: reading the registry (the report's labels) loads none
    from ..constraints import infer_domain

    return Dataset(
        name=spec.name,
        X_train=X_train, y_train=y_tv[tr], X_val=X_val, y_val=y_tv[va], X_test=X_te, y_test=y_te,
        feature_names=names, n_classes=2,
        domain=infer_domain(np.vstack([X_train, X_val]), n_sigma=fid.domain_n_sigma),
        protected=protected, categorical_groups=groups, meta=meta,
    )


def resolve_source(spec: _Spec, source: str, raw_dir: Any) -> str:
    if source not in ("auto", "processed", "raw"):
        raise ValueError(f"dataset {spec.name!r}: source must be 'auto', 'processed' or 'raw', got {source!r}")
    if spec.processed_file is None:
        if source == "processed":
            raise ValueError(f"dataset {spec.name!r} has no processed table; use source='raw' or 'auto'")
        return "raw"
    if source == "processed" or (source == "auto" and files.is_present(spec.processed_file, raw_dir)):
        return "taijadata_processed"
    return "raw"


def _make_loader(spec: _Spec) -> Callable[..., Dataset]:
    def loader(*, fidelity: Any = "reference", seed: int = 42, raw_dir: str | os.PathLike | None = None,
               cache_dir: str | os.PathLike | None | bool = None, **params: Any) -> Dataset:
        known = {"n_val": spec.n_val, "source": "auto", "scaling": None}
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise ValueError(f"dataset {spec.name!r}: unknown parameter(s) {unknown}; known: {sorted(known)}")
        p = {**known, **params}
        fid = _fidelity(fidelity)
        seed = _check_int("seed", seed, 0)
        n_val = _check_int("n_val", p["n_val"], 0)
        source = resolve_source(spec, p["source"], raw_dir)
        scaling = check_scaling(spec.name, p["scaling"])
        used = [spec.processed_file] if source == "taijadata_processed" else list(spec.raw_files)
        fid_key = {"mode": fid.mode, "domain_n_sigma": fid.domain_n_sigma}
        if spec.ct_dataset:
            fid_key["test_sizes"] = fid.test_sizes
        if spec.cats_substring is not None:
            fid_key["adult_substring_groups"] = fid.adult_substring_groups
        key_spec = {
            "dataset": spec.name, "code": CODE_VERSION, "seed": seed, "n_val": n_val, "source": source,
            "files": {f: files.file_info(f).sha256 for f in used}, "fidelity": fid_key,
        }
        if scaling != "loader":  # the loaders' own recipe keeps the key (and cache entry) it always had
            key_spec["scaling"] = scaling
        return files.cached(spec.name, key_spec,
                            lambda: _build(spec, fid=fid, seed=seed, raw_dir=raw_dir, n_val=n_val, source=source,
                                           scaling=scaling),
                            cache_dir)

    loader.__name__ = f"load_{spec.name}"
    loader.__doc__ = (f"Load {spec.name!r} ({spec.description}). Params: n_val (default {spec.n_val}), source "
                      "('auto' | 'processed' | 'raw'), scaling ('loader'; 'standard_all', German credit's default: "
                      "scaling_switch.py). See the module docstring for the pipeline.")
    return loader


# -- registry ----------------------------------------------------------------------------------------------------

SPECS: dict[str, _Spec] = {s.name: s for s in [
    _Spec("adult", ("adult/adult.data",), read_adult, protected=("age",), cats_substring=ADULT_CATS,
          paper_n_train=25049,
          description="UCI Adult, adult.data only, 26,049/6,512 rows, 108 features, not balanced"),
    _Spec("california_housing", ("california_housing/cal_housing.data",), read_ch_raw,
          "taijadata_processed/cal_housing.csv", read_ch_processed, protected=("HouseAge",),
          paper_n_train=15504,
          description="California housing, value ≥ median, balanced, 16,504/4,126 rows, 8 features"),
    _Spec("credit_default", ("credit_default/UCI_Credit_Card.csv",), read_cred_raw,
          "taijadata_processed/credit_default.csv", read_cred_processed, protected=("AGE",),
          paper_n_train=9617,
          description="UCI credit default (1 = no default), balanced, 10,618/2,654 rows, 33 features"),
    _Spec("gmsc", ("give_me_some_credit/cs-training.csv.gz",), read_gmsc_raw,
          "taijadata_processed/gmsc.csv", read_gmsc_processed, protected=("age",),
          paper_n_train=12371,
          description="Give Me Some Credit (1 = no delinquency), balanced, 13,371/3,343 rows, 10 features"),
    _Spec("german_credit", ("german_credit/german.data",), read_german, protected=("age",), shuffle=True,
          ct_dataset=False, n_val=100, description="Statlog German credit (1 = good), 800/200 rows, one-hot"),
    _Spec("heloc", ("heloc/heloc_dataset.csv",), read_heloc, shuffle=True, ct_dataset=False,
          description="FICO HELOC (1 = Good) without all −9 rows, 7,897/1,974 rows, 23 features"),
]}

_ALIASES = {"california_housing": ("CH",), "credit_default": ("Cred",), "gmsc": ("GMSC",)}

LOADERS: dict[str, Callable[..., Dataset]] = {
    name: register(name, family="tabular", description=spec.description, aliases=_ALIASES.get(name, ()))(
        _make_loader(spec))
    for name, spec in SPECS.items()
}
load_adult = LOADERS["adult"]
load_california_housing = LOADERS["california_housing"]
load_credit_default = LOADERS["credit_default"]
load_gmsc = LOADERS["gmsc"]
load_german_credit = LOADERS["german_credit"]
load_heloc = LOADERS["heloc"]
