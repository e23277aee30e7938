"""Why a claim is not judged on a training seed: that seed's evaluations lack a dataset or an experiment that other
seeds have. The retrain stage may train fewer than the main run (the paper profile's ``retrain`` block: no MNIST;
a block without the mutability experiment has no Table 1 Cost column), so on its seeds the nine-dataset averages
(and then the Cost cells) cannot be formed. Such a seed is ``not judged`` with that reason, never ``not yet run``: the
experiment ran, on other seeds; and it does not count towards the seed share (as ``not yet run`` did not)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..common import dataset_label
from .schema import NOT_YET_RUN, Claim
from .shares import NOT_JUDGED

#: what one seed folder's evaluation inputs cover (written by :func:`write_coverage`)
COVERAGE = "inputs.json"
#: the key columns of a per-seed table's rows (those present in the file)
KEYS = ("dataset", "metric")


def write_coverage(folder: Path, files: Iterable[Path], retrain: set[Path], pooled: pd.DataFrame | None = None,
                   experiments: tuple[str, ...] = ("single", "mutability")) -> None:
    """``folder/inputs.json``: the (dataset label, experiment) pairs of the seed's evaluation ``files`` (their
    sidecars) and of its rows of ``pooled`` (files of several seeds), of the ``experiments`` the per-seed tables are
    made of (an ablation evaluation is no input of theirs), and whether every file came from ``--retrain-eval``."""
    files = list(files)
    pairs = set()
    for p in files:
        side = Path(f"{p}.json")
        meta = json.loads(side.read_text()) if side.is_file() else {}
        if meta.get("dataset") and meta.get("experiment"):
            pairs.add((dataset_label(str(meta["dataset"])), str(meta["experiment"])))
    if pooled is not None and {"dataset", "experiment"} <= set(pooled.columns):
        pairs |= {(dataset_label(str(d)), str(e)) for d, e in pooled[["dataset", "experiment"]].drop_duplicates()
                  .itertuples(index=False)}
    is_retrain = bool(files) and all(Path(p) in retrain for p in files)
    pairs = {(d, e) for d, e in pairs if e in experiments}
    (folder / COVERAGE).write_text(json.dumps({"pairs": sorted(pairs), "retrain": is_retrain}))


def _coverage(folder: Path) -> tuple[set[tuple[str, str]], bool] | None:
    p = Path(folder) / COVERAGE
    if not p.is_file():
        return None
    meta = json.loads(p.read_text())
    return {tuple(x) for x in meta["pairs"]}, bool(meta["retrain"])


def _read(folder: Path, name: str) -> pd.DataFrame | None:
    p = Path(folder) / name
    if not p.is_file() or p.stat().st_size == 0:
        return None
    df = pd.read_csv(p)
    if "dataset" in df:
        df["dataset"] = df["dataset"].map(lambda d: dataset_label(str(d)))
    return df


def _claim_rows(claim: Claim, df: pd.DataFrame) -> pd.DataFrame:
    """The rows of a per-seed table the claim reads (its ``select``, ``over`` and cell; unknown columns ignored)."""
    filters = [claim.spec.get("select"), claim.spec.get("over")]
    if claim.rule == "cell":
        filters.append({"dataset": claim.spec["dataset"], "metric": claim.spec["metric"]})
    mask = pd.Series(True, index=df.index)
    for f in filters:
        for col, val in (f or {}).items():
            if col in df:
                mask &= df[col].astype(str).isin([str(v) for v in (val if isinstance(val, list) else [val])])
    return df[mask]


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def gap_reason(claim: Claim, seed: int, folders: dict[int, Path], cache: dict | None = None) -> str:
    """Why ``claim`` has no value on ``seed``: the rows it reads that other seeds' tables hold and this seed's does
    not, each put down to a dataset the seed has no model of or an experiment it did not evaluate; '' when the seed's
    inputs lack nothing the claim needs (then its ``not yet run`` stands). ``cache``: a dict kept across calls on the
    same folders, so that each folder's coverage and tables are read once (the frames are not modified here)."""
    cache = {} if cache is None else cache

    def coverage(folder):
        key = ("coverage", str(folder))
        if key not in cache:
            cache[key] = _coverage(folder)
        return cache[key]

    def read(folder, name):
        key = ("table", str(folder), name)
        if key not in cache:
            cache[key] = _read(folder, name)
        return cache[key]

    own = coverage(folders[seed])
    if own is None:
        return ""
    pairs, retrain = own
    union = set().union(*(c[0] for c in (coverage(f) for f in folders.values()) if c is not None))
    if not union - pairs:
        return ""
    mine = read(folders[seed], claim.file)
    keys: set[tuple] = set()
    for s, folder in folders.items():
        other = read(folder, claim.file) if s != seed else None
        if other is None or "dataset" not in other:
            continue
        cols = [k for k in KEYS if k in other]
        have = set() if mine is None else set(map(tuple, mine[cols].astype(str).itertuples(index=False)))
        rows = _claim_rows(claim, other)
        rows = rows[rows["dataset"] != "Avg."]  # a pooled row: its datasets' rows say what is missing
        keys |= set(map(tuple, rows[cols].astype(str).itertuples(index=False))) - have
    datasets = {d for d, _ in pairs}
    no_model = [d for d in dict.fromkeys(k[0] for k in sorted(keys)) if d not in datasets]
    no_exp: dict[str, list[str]] = {}
    for d in dict.fromkeys(k[0] for k in sorted(keys)):
        if d in datasets:
            for e in sorted({e for dd, e in union if dd == d} - {e for dd, e in pairs if dd == d}):
                no_exp.setdefault(e, []).append(d)
    if not no_model and not no_exp:
        return ""
    what = ([f"no {_join(no_model)} model"] if no_model else []) + [
        f"no {e} evaluation of {_join(ds)}" for e, ds in no_exp.items()]
    if retrain:
        ran = sorted({e for _, e in pairs})
        why = ([f"skips {_join(no_model)}"] if no_model else []) + (
            [f"runs only the {_join(ran)} experiment{'s' if len(ran) > 1 else ''}"] if no_exp else [])
        cause = f"the retrain stage {_join(why)}"
    else:
        cause = "not among this seed's evaluation files"
    return f"{_join(what)} ({cause})"


def mark_gaps(long: pd.DataFrame, claims: dict[str, Claim], folders: dict[int, Path],
              cells: list[dict] | None = None) -> pd.DataFrame:
    """``long`` (:func:`.seeds.judge_seeds`) with each row whose seed lacks the claim's inputs relabelled
    :data:`NOT_JUDGED`, its note the reason (:func:`gap_reason`): a ``not yet run`` row, and a row judged on the items
    present with some missing (its ``missing`` column, when ``long`` has one): a claim over nine datasets judged on a
    seed without MNIST's model is not the claim. The reason also goes to the ``note`` of that claim's and seed's row
    of ``cells`` (:func:`.cell_seeds.cell_row`)."""
    out = long.copy()
    by_key = {(c["claim"], c["seed"]): c for c in cells or []}
    partial = out["missing"].map(bool) if "missing" in out else pd.Series(False, index=out.index)
    cache: dict = {}  # each folder's coverage and tables read once, not once per claim and seed
    for i in out.index[(out["verdict"] == NOT_YET_RUN) | partial]:
        cid, seed = out.at[i, "claim"], int(out.at[i, "seed"])
        reason = gap_reason(claims[cid], seed, folders, cache)
        if reason:
            out.at[i, "verdict"] = NOT_JUDGED
            out.at[i, "note"] = f"{NOT_JUDGED}: {reason}"
            if (cid, seed) in by_key:
                by_key[(cid, seed)]["note"] = reason
    return out


__all__ = ["COVERAGE", "NOT_JUDGED", "gap_reason", "mark_gaps", "write_coverage"]
