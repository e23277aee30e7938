"""German and Taiwanese Credit, and CTG, under other scalings than the loaders' (App. B.1, the authors' code).

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

CTG (``cardiotocography``), the authors' code path (zifanw/consistency ``code/utils.py``: ``datalib.CustomData("ctg",
ctg.values[:, 0:21], ..., processors=["normalize"], split=Split(tr=4, te=1, seed=0))``, datalib-dev 0.0.2):
datalib's ``Normalize`` subtracts the table's single overall minimum and divides by the single overall maximum
(``x -= x.min(); x /= x.max()`` over all rows and all 21 columns, float32), not per feature:

- ``global_minmax``: that scalar min-max (statistics of all 2,126 rows, as datalib) on the loader's rows and split;
- ``global_minmax_split``: also datalib's split, ``np.random.seed(0); order = np.random.permutation(2126)``, train =
  ``order[:1700]``, test = ``order[1700:2125]`` (floor(4/5·n), floor(1/5·n): one row in neither, as the paper's
  1,700 / 425), on the rows in CTG.xls order (the authors read a CSV of the 2,126 records whose order we assume is
  the sheet's).
"""
from dataclasses import replace

import numpy as np
from ctg_features import option_arg

import ctbench.data as D
from ctbench.data import consistency_datasets as CD

SCALINGS = ("loader", "zscore_all", "zscore", "global_minmax", "global_minmax_split")
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


def _ctg_global(ds, split: bool):
    """CTG as datalib's Normalize (one scalar min-max over the whole table) builds it; ``split``: datalib's split."""
    raw = CD._read_ctg(None)
    X_all = raw.frame.to_numpy().astype(np.float32)
    X_all -= X_all.min()
    X_all /= X_all.max()
    if split:
        np.random.seed(0)  # datalib.splitters.Split(tr=4, te=1, seed=0)
        order = np.random.permutation(len(X_all))
        tr, te = order[:1700], order[1700:2125]
        ds = replace(ds, X_train=X_all[tr], y_train=raw.y[tr], X_val=X_all[:0], y_val=raw.y[:0],
                     X_test=X_all[te], y_test=raw.y[te])
    else:  # the loader's rows: undo its per-feature min-max (meta["scaler"]), then the scalar one
        sc = ds.meta["scaler"]
        shift, scale = np.array(sc["shift"]), np.array(sc["scale"])
        g_min = raw.frame.to_numpy().astype(np.float32).min()
        g_max = (raw.frame.to_numpy().astype(np.float32) - g_min).max()
        for part in ("X_train", "X_val", "X_test"):
            x = getattr(ds, part).astype(np.float64) * scale + shift
            setattr(ds, part, ((x - g_min) / g_max).astype(np.float32))
    tv = np.vstack([ds.X_train, ds.X_val])
    ds.domain = (tv.min(0).astype(np.float64).tolist(), tv.max(0).astype(np.float64).tolist())
    return ds


def load(name, scaling, **kw):
    """``name`` under ``scaling`` (see the module docstring)."""
    if scaling not in SCALINGS:
        raise ValueError(f"--scaling must be one of {SCALINGS}, got {scaling!r}")
    if scaling.startswith("global_minmax"):
        if name != "cardiotocography":
            raise ValueError(f"--scaling {scaling}: CTG (cardiotocography) only")
        ds = _ctg_global(_ORIGINAL(name, scaling="loader", **kw), split=scaling.endswith("_split"))
    elif scaling == "zscore":
        if name != "credit_default_b22" or kw.get("n_val", 0):
            raise ValueError("--scaling zscore: Taiwanese Credit (credit_default_b22) only, n_val 0")
        ds = CD._build(replace(CD.SPECS[name], scaling="zscore"), seed=kw.get("seed", 42), raw_dir=None, n_val=0)
    else:
        ds = _ORIGINAL(name, scaling="loader", **kw)
        if scaling == "zscore_all":
            ds = _zscore_all(ds)
    ds.meta["benchmark_scaling"] = scaling
    return ds


def use(scaling: str) -> None:
    """Route ``ctbench.data.load_dataset`` for German/Taiwanese Credit and CTG to ``scaling`` ("loader": unchanged)."""
    if scaling not in SCALINGS:
        raise ValueError(f"--scaling must be one of {SCALINGS}, got {scaling!r}")
    inner = D.load_dataset  # ctg_features.use may have routed CTG already
    if scaling == "loader":  # the loaders' own recipe, asked for by name (it is no longer these datasets' default)
        def own(name, **kw):
            if name in ("german_credit", "credit_default_b22", "cardiotocography"):
                kw.setdefault("scaling", "loader")
            return inner(name, **kw)
        D.load_dataset = own
        return

    def patched(name, **kw):
        if name not in ("german_credit", "credit_default_b22", "cardiotocography"):
            return inner(name, **kw)
        return load(name, scaling, **kw)
    D.load_dataset = patched


def scaling_arg(argv: list[str]) -> tuple[list[str], str]:
    """Split ``--scaling X`` off argv; default loader."""
    return option_arg(argv, "--scaling", "loader")
