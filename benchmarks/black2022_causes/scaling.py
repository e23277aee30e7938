"""German and Taiwanese Credit under other scalings than the loaders' (App. B.1 vs ctbench), for train/variants.py.

The loaders: German Credit (``german_credit``) z-scores its 7 numeric attributes and keeps the 54 one-hot columns
0/1; Taiwanese Credit (``credit_default_b22``) min-max scales its 20 numeric attributes to [0, 1] and keeps SEX and
the 11 one-hot columns 0/1. App. B.1 of 003: German "one-hot encode the data to get 61 features, and standardize
the data to zero mean and unit variance using SKLearn Standard scaler" (read literally: every one of the 61
columns); Taiwanese "one-hot encode the data to get 32 features and normalize the data to be between zero and one".
The scalings here (``--scaling``):

- ``loader``: the loader's own table (the committed run);
- ``zscore_all``: every column, one-hot ones included, z-scored as sklearn's StandardScaler does (population SD,
  ddof 0) with the statistics of the train+validation rows, after the loader's own scaling (an affine map per
  column, so the result does not depend on it);
- ``zscore`` (Taiwanese only): the 20 numeric columns z-scored (ddof 1, as the loader z-scores German) instead of
  min-max scaled, one-hot columns 0/1 (German's recipe applied to Taiwanese).

Rows, split, row order and factual subset stay the loader's; the search box (the clamp) is the min and max of the
training rows as in the study.
"""
from dataclasses import replace

import numpy as np

import ctbench.data as D
from ctbench.data import consistency_datasets as CD

SCALINGS = ("loader", "zscore_all", "zscore")
_ORIGINAL = D.load_dataset


def _zscore_all(ds):
    """Every column z-scored with the train+validation rows' mean and population SD (sklearn StandardScaler)."""
    fit = np.vstack([ds.X_train, ds.X_val]).astype(np.float64)
    mu, sd = fit.mean(0), fit.std(0)
    sd = np.where(sd > 0, sd, 1.0)  # sklearn leaves constant columns unscaled
    for part in ("X_train", "X_val", "X_test"):
        setattr(ds, part, ((getattr(ds, part) - mu) / sd).astype(np.float32))
    tv = np.vstack([ds.X_train, ds.X_val])
    ds.domain = (tv.min(0).astype(np.float64).tolist(), tv.max(0).astype(np.float64).tolist())
    return ds


def load(name, scaling, **kw):
    """``name`` under ``scaling`` (see the module docstring)."""
    if scaling not in SCALINGS:
        raise ValueError(f"--scaling must be one of {SCALINGS}, got {scaling!r}")
    if scaling == "zscore":
        if name != "credit_default_b22" or kw.get("n_val", 0):
            raise ValueError("--scaling zscore: Taiwanese Credit (credit_default_b22) only, n_val 0")
        ds = CD._build(replace(CD.SPECS[name], scaling="zscore"), seed=kw.get("seed", 42), raw_dir=None, n_val=0)
    else:
        ds = _ORIGINAL(name, **kw)
        if scaling == "zscore_all":
            ds = _zscore_all(ds)
    ds.meta["benchmark_scaling"] = scaling
    return ds


def use(scaling: str) -> None:
    """Route ``ctbench.data.load_dataset`` for German/Taiwanese Credit to ``scaling`` ("loader": unchanged)."""
    if scaling not in SCALINGS:
        raise ValueError(f"--scaling must be one of {SCALINGS}, got {scaling!r}")
    if scaling == "loader":
        return
    inner = D.load_dataset  # ctg_features.use may have routed CTG already

    def patched(name, **kw):
        if name not in ("german_credit", "credit_default_b22"):
            return inner(name, **kw)
        return load(name, scaling, **kw)
    D.load_dataset = patched


def scaling_arg(argv: list[str]) -> tuple[list[str], str]:
    """Split ``--scaling X`` off argv; default loader."""
    if "--scaling" in argv:
        i = argv.index("--scaling")
        return argv[:i] + argv[i + 2:], argv[i + 1]
    return argv, "loader"
