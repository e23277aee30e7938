"""Data switch ``scaling`` of the consistency study's datasets: the preparation the published numbers were made on.

A loader parameter (the workflow's ``data_params``, e.g. ``{german_credit: {scaling: loader}}``). Each dataset's
default (:data:`DEFAULTS`) is the preparation the published numbers were made on, as measured in
benchmarks/black2022_causes/README.md ("German and Taiwanese Credit: the scaling", "CTG: the authors' own
preprocessing"): with it Table 4's costs (German, Taiwanese) and Table 2's success rates (CTG) are reproduced, with
the loaders' own recipe they are not. ``"loader"`` keeps each loader's own recipe (App. B.1's text where it differs:
min-max for Taiwanese Credit and CTG per column, German's one-hot columns left 0/1), its cache key and metadata as
they were up to 2026-11-27; every other dataset's default.

- ``standard_all`` (German Credit, Taiwanese Credit ``credit_default_b22``): sklearn's StandardScaler on the encoded
  table, one-hot columns included: per column the train+validation rows' mean and population SD (ddof 0), constant
  columns only shifted. App. B.1 of Black et al. (2022) says so for German Credit ("one-hot encode ... standardize
  the data ... using SKLearn Standard scaler"; our loader z-scores only the 7 numeric attributes); for Taiwanese
  Credit App. B.1 says [0, 1] (our loader's), but the paper's costs only fit z-scored data.
- ``datalib`` (CTG ``cardiotocography``): the authors' code (zifanw/consistency ``utils.load_dataset('CTG')``,
  datalib-dev 0.0.2): ``Normalize`` subtracts the table's one overall minimum and divides by the one overall maximum
  (all rows, all 21 columns, float32), then ``Split(tr=4, te=1, seed=0)``: ``np.random.seed(0)`` permutation of the
  rows (CTG.xls order), train the first floor(4n/5) = 1,700, test the next floor(n/5) = 425 (one row in neither), the
  loader's ``seed`` not used. Labels stay ours (1 = normal; the authors' 1 = suspect or pathologic: the same split
  of the classes).
"""

from __future__ import annotations

import numpy as np

SCALINGS = ("loader", "standard_all", "datalib")
#: the datasets each value applies to
DATASETS = {"standard_all": ("german_credit", "credit_default_b22"), "datalib": ("cardiotocography",)}
#: the default where it is not ``"loader"``: what produced the published numbers (module docstring)
DEFAULTS = {"german_credit": "standard_all", "credit_default_b22": "standard_all", "cardiotocography": "datalib"}


def check_scaling(dataset: str, scaling: object) -> str:
    """``scaling`` if it is allowed for ``dataset`` (``None``: the dataset's default); a clear error otherwise."""
    if scaling is None:
        return DEFAULTS.get(dataset, "loader")
    if scaling not in SCALINGS:
        raise ValueError(f"dataset {dataset!r}: scaling must be one of {list(SCALINGS)}, got {scaling!r}")
    if scaling != "loader" and dataset not in DATASETS[scaling]:
        raise ValueError(f"dataset {dataset!r}: scaling={scaling!r} applies only to {list(DATASETS[scaling])}")
    return str(scaling)


def standardize_all(X: np.ndarray, n_fit: int) -> tuple[np.ndarray, dict]:
    """``X`` with every column z-scored on its first ``n_fit`` rows (mean, ddof-0 SD), and the statistics."""
    fit = np.asarray(X[:n_fit], dtype=np.float64)
    mean, sd = fit.mean(0), fit.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    out = ((np.asarray(X, dtype=np.float64) - mean) / sd).astype(X.dtype)
    return out, {"mean": mean.tolist(), "std": sd.tolist(), "ddof": 0,
                 "fit_rows": f"first {n_fit} rows (train+validation)", "columns": "all"}


def datalib_normalize(X: np.ndarray) -> tuple[np.ndarray, dict]:
    """datalib's ``Normalize``: float32, minus the overall minimum, over the overall maximum (all rows, all columns)."""
    x = np.asarray(X, dtype=np.float32).copy()
    lo = x.min()
    x -= lo
    hi = x.max()
    x /= hi if hi != 0 else 1.0
    return x, {"min": float(lo), "max_after_shift": float(hi), "rows": "all", "columns": "all (one scalar range)"}


def datalib_split(n: int) -> tuple[np.ndarray, np.ndarray]:
    """datalib's ``Split(tr=4, te=1, seed=0)``: (train rows, test rows) of a table of ``n`` rows."""
    order = np.random.RandomState(0).permutation(n)  # = np.random.seed(0); np.random.permutation(n)
    n_tr, n_te = int(np.floor(4 / 5 * n)), int(np.floor(1 / 5 * n))
    return order[:n_tr], order[n_tr:n_tr + n_te]
