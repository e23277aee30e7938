"""CTG with the count block (AC ... DP: counts over the recording) instead of the per-second rates (AC.1 ... DP.1).

UCI CTG.xls has both blocks; ``ctbench.data.consistency_datasets._read_ctg`` takes the rates and the paper does not
say which it used. ``use(features)`` makes ``ctbench.data.load_dataset("cardiotocography")`` build the table from the
chosen block by the same recipe (same split, scaling, domain), so the other scripts here can compare the two.
"""
from dataclasses import replace

import numpy as np
import pandas as pd

import ctbench.data as D
from ctbench.data import consistency_datasets as CD
from ctbench.data import files

COUNT_COLUMNS = ("AC", "FM", "UC", "DL", "DS", "DP")


def read_counts(raw_dir):
    """``_read_ctg`` with the first AC ... DP block (counts) kept."""
    path = files.raw_path("cardiotocography/CTG.xls", raw_dir)
    sheet = pd.read_excel(path, sheet_name="Data", header=1, engine="calamine")
    sheet = sheet[sheet["NSP"].notna()].reset_index(drop=True)
    frame = pd.DataFrame({c: sheet[c].astype(np.float64) for c in CD.CTG_FEATURES})
    nsp = sheet["NSP"].astype(int).to_numpy()
    return CD._Raw(frame, (nsp == 1).astype(np.int64))


_ORIGINAL = D.load_dataset


def use(features: str) -> None:
    """Route ``load_dataset("cardiotocography", ...)`` to the ``features`` block ("per_second": the loader's own)."""
    if features not in ("per_second", "counts"):
        raise ValueError(f"--features must be per_second or counts, got {features!r}")
    D.load_dataset = _ORIGINAL
    if features == "per_second":
        return
    spec = replace(CD.SPECS["cardiotocography"], read=read_counts)
    original = _ORIGINAL

    def load(name, seed=42, n_val=0, **kw):
        if name != "cardiotocography" or {k: v for k, v in kw.items() if (k, v) != ("scaling", "loader")}:
            return original(name, seed=seed, n_val=n_val, **kw)
        ds = CD._build(spec, seed=seed, raw_dir=None, n_val=n_val)
        ds.meta["ctg_rate_columns"] = "counts"
        return ds
    D.load_dataset = load


def option_arg(argv: list[str], flag: str, default: str) -> tuple[list[str], str]:
    """Split ``flag X`` off argv (the scripts' own small options); ``default`` when absent."""
    if flag in argv:
        i = argv.index(flag)
        return argv[:i] + argv[i + 2:], argv[i + 1]
    return argv, default


def features_arg(argv: list[str]) -> tuple[list[str], str]:
    """Split ``--features X`` off argv; default per_second."""
    return option_arg(argv, "--features", "per_second")


def factuals_arg(argv: list[str]) -> tuple[list[str], int | None]:
    """Split ``--factuals K`` off argv: a seeded K of the validation split, as the study draws ``n_factuals``;
    None (all) when absent."""
    argv, k = option_arg(argv, "--factuals", "")
    return argv, int(k) if k else None


def pickle_path(ds: str, n, features: str, scaling: str = "loader", order: str = "reshuffled") -> str:
    """/tmp/bg/<dataset>_<n>[_<features>][_<scaling>][_<order>].pkl (the defaults add nothing)."""
    tail = "".join(f"_{v}" for v, default in ((features, "per_second"), (scaling, "loader"), (order, "reshuffled"))
                   if v != default)
    return f"/tmp/bg/{ds}_{n}{tail}.pkl"


def load_population(ds: str, n, features: str, scaling: str, k: int | None, order: str = "reshuffled"):
    """The population ``train.py`` pickled and the searches' inputs as the study draws them: (data, cons, base,
    retr, architecture, factual rows, factuals x, targets); one torch thread."""
    import pickle

    import torch

    from ctbench.experiments.consistency import ARCHITECTURES, _factual_rows, _targets

    P = pickle.load(open(pickle_path(ds, n, features, scaling, order), "rb"))
    data, cons, base, retr = P["data"], P["cons"], P["base"], P["retr"]
    torch.set_num_threads(1)
    rows = _factual_rows(len(data.y_test), k, 0)
    x = torch.as_tensor(data.X_test[rows], dtype=torch.float32)
    return data, cons, base, retr, ARCHITECTURES[ds], rows, x, _targets(base, x, data.n_classes, 0)
