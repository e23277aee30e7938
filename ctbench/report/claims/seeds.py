"""How robust is each claim to retraining (issue 24, item 5): every claim judged once per training seed.

The paper's ± covers redrawn individuals for one trained pair of models; a second training seed can move a Table-1
cell by more than that. So the report's tables that rest on per-seed inputs (Tables 1-3, the appendix's CI and
unconstrained-cost tables, performance, robustness and training time) are rebuilt from one training seed's files at
a time (:func:`seed_reports`), and every claim is judged on each of them with the same rule and claims file as the
pooled verdict (:func:`seed_verdicts`). A claim *holds* under a seed when that seed's verdict is ``reproduced``
against the claim's first version; its ``seed_share`` is the share of the seeds that judged it (verdict reproduced,
partly or not reproduced) under which it holds. Claims whose table cannot be split by seed (grid searches, tuning,
Proposition 3.1, the consistency study, whose invalidation rates are themselves over retrained models), and seeds
that lack an item a claim needs, are not counted.

The seeds are whatever the input files hold: the ``--eval`` files that make the pooled tables, plus any
``--retrain-eval`` files (more training seeds, used here only, so the paper's tables stay on the profile's seeds).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .cell_seeds import cell_row
from .schema import load_claims
from .seed_gaps import NOT_JUDGED, mark_gaps, write_coverage
from .shares import (
    HANGS,
    JUDGED,
    NEVER,
    ROBUST,
    ROBUST_SHARE,
    SEED_COLUMNS,
    SHARED_TIME,
    robustness_label,
    seed_shares,
    with_seed_shares,
)

#: the per-seed tables (those whose inputs carry a training seed); other files are not split
SEED_FILES = ("table1.csv", "table3.csv", "appendix_ci.csv", "appendix_cost_unconstrained.csv", "performance.csv",
              "robustness.csv", "table2.csv", "training_time.csv")
#: the experiments the per-seed tables are made of (what a seed lacks of others is counted among these only)
SEED_EXPERIMENTS = ("single", "mutability")
_NAME_SEED = re.compile(r"_s(\d+)\.")


def file_seed(path: str | Path) -> int | None:
    """The training seed of one input file: its sidecar's models' seed (one for all), else ``_s<k>.`` in its name,
    else None (a file that pools several seeds)."""
    side = Path(f"{path}.json")
    if side.is_file():
        try:
            meta = json.loads(side.read_text())
        except (OSError, json.JSONDecodeError):
            meta = {}
        models = meta.get("models") if isinstance(meta, dict) else None
        seeds = {m.get("seed") for m in (models or {}).values() if isinstance(m, dict)} - {None}
        if len(seeds) == 1:
            return int(next(iter(seeds)))
        if len(seeds) > 1:
            return None
    m = _NAME_SEED.search(Path(path).name)
    return int(m.group(1)) if m else None


def _by_seed(paths: Iterable[str | Path]) -> tuple[dict[int, list[Path]], list[Path]]:
    """(seed → its files, files of no single seed)."""
    known: dict[int, list[Path]] = {}
    unknown: list[Path] = []
    for p in dict.fromkeys(map(Path, paths)):
        s = file_seed(p)
        (unknown if s is None else known.setdefault(s, [])).append(p)
    return known, unknown


def check_seed_inputs(paths: list[str | Path]) -> None:
    """Refuse two evaluation files of one (dataset, experiment, training seed): a seed given both as ``--eval`` and
    as ``--retrain-eval`` would count its rows twice."""
    from ...errors import BadFileError

    seen: dict[tuple, Path] = {}
    for p in dict.fromkeys(map(Path, paths)):
        side = Path(f"{p}.json")
        seed = file_seed(p)
        if seed is None or not side.is_file():
            continue
        meta = json.loads(side.read_text())
        key = (meta.get("dataset"), meta.get("experiment"), seed)
        if key in seen:
            raise BadFileError(f"evaluation files {seen[key]} and {p} are both of dataset {key[0]}, experiment "
                               f"{key[1]}, training seed {seed}: give each seed once (--eval or --retrain-eval)")
        seen[key] = p


def release_memory() -> None:
    """Hand Arrow's freed memory back to the system: its pool keeps what the report's earlier passes over the
    evaluation files freed (1.9 GB of the paper's set), and the per-seed tables would be read on top of it."""
    import gc

    gc.collect()
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except (ImportError, AttributeError):  # an older pyarrow: the memory stays pooled, nothing is wrong
        pass


def _write(df: pd.DataFrame | None, folder: Path, name: str) -> None:
    if df is not None and not df.empty:
        df.to_csv(folder / name, index=False)


def _evaluation_seed_tables(files: list[Path], seed: int, folder: Path, settings) -> None:
    """Tables 1 and 3, the appendix's CI and unconstrained-cost tables and the performance table of one seed."""
    from ..tables import paper_tables
    from ..tables.eval_frames import read_report_evaluations
    from ..tables.paper_tables import EVAL_KEYS, cost_table_unconstrained, performance_table, table1, table3

    # read_evaluations' frame (one Arrow pass, files of other experiments skipped), the text columns compact
    evals = read_report_evaluations(files, (*EVAL_KEYS, "ip", "ip_star", "cost"), experiments=SEED_EXPERIMENTS,
                                    compact=paper_tables.COMPACT)
    if not evals.empty and "seed" in evals:
        evals = evals[pd.to_numeric(evals["seed"], errors="coerce") == seed].reset_index(drop=True)
    if not evals.empty:
        t1 = table1(evals, settings)
        _write(t1, folder, "table1.csv")
        if not t1.empty:
            _write(t1[t1["dataset"] != "Avg."][["dataset", "metric", "ct_mean_abs", "bl_mean_abs", "lb", "ub"]],
                   folder, "appendix_ci.csv")
        _write(table3(evals), folder, "table3.csv")
        _write(cost_table_unconstrained(evals), folder, "appendix_cost_unconstrained.csv")
    del evals
    sidecars = []
    for p in files:
        side = Path(f"{p}.json")
        if side.is_file() and file_seed(p) == seed:
            sidecars.append(json.loads(side.read_text()))
    _write(performance_table(sidecars), folder, "performance.csv")


def seed_reports(root: str | Path, *, evaluations: Iterable[str | Path] = (),
                 retrain: Iterable[str | Path] = (), robustness: Iterable[str | Path] = (),
                 attribution: Iterable[str | Path] = (), training_time: pd.DataFrame | None = None,
                 settings=None) -> dict[int, Path]:
    """One folder per training seed under ``root`` with the :data:`SEED_FILES` that seed's inputs support.

    ``evaluations`` and ``retrain``: evaluation files (a file that pools seeds is read for every seed and filtered
    by its ``seed`` column; the same file in both counts once); ``robustness`` and ``attribution``: their outputs,
    one seed per file (a file of no single seed is left out: its rows carry no seed); ``training_time``: the
    report's ``training_time.csv`` frame (rows carry their seed)."""
    from ..tables.paper_tables import read_frames, table2

    root = Path(root)
    check_seed_inputs([*evaluations, *retrain])
    evals, pooled = _by_seed([*evaluations, *retrain])
    if pooled:
        from ...evaluation.files import read_evaluations

        found = read_evaluations(pooled, ("seed", "dataset", "experiment", "model"))
        for s in pd.to_numeric(found.get("seed", pd.Series(dtype=float)), errors="coerce").dropna().unique():
            evals.setdefault(int(s), [])
    retrain_files = set(map(Path, retrain))
    rob, _ = _by_seed(robustness)
    att, _ = _by_seed(attribution)
    seeds = set(evals) | set(rob) | set(att)
    if training_time is not None and not training_time.empty and "seed" in training_time:
        seeds |= {int(s) for s in pd.to_numeric(training_time["seed"], errors="coerce").dropna().unique()}
    out: dict[int, Path] = {}
    for seed in sorted(seeds):
        release_memory()
        folder = root / f"seed_{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        if seed in evals or pooled:
            _evaluation_seed_tables([*evals.get(seed, []), *pooled], seed, folder, settings)
            mine = (found[pd.to_numeric(found["seed"], errors="coerce") == seed]
                    if pooled and "seed" in found else None)
            write_coverage(folder, evals.get(seed, []), retrain_files, mine, SEED_EXPERIMENTS)
        if rob.get(seed):
            _write(read_frames(rob[seed], "robustness file", ("dataset", "model")), folder, "robustness.csv")
        if att.get(seed):
            _write(table2(read_frames(att[seed], "attribution file", ("dataset", "model"))), folder, "table2.csv")
        if training_time is not None and not training_time.empty and "seed" in training_time:
            _write(split_times(training_time)[pd.to_numeric(training_time["seed"], errors="coerce") == seed],
                   folder, "training_time.csv")
        out[seed] = folder
    return out


def split_times(training_time: pd.DataFrame) -> pd.DataFrame:
    """``training_time`` with ``train_seconds`` blanked for every (dataset, objective, experiment, model) whose
    seeds all read the same time (:data:`SHARED_TIME`); ``grad_evals`` is counted per model and stays."""
    from .rules import SAME_RTOL

    out = training_time.copy()
    if "train_seconds" not in out:
        return out
    keys = [c for c in ("dataset", "objective", "experiment", "model") if c in out]
    for _, g in out.groupby(keys, sort=False, dropna=False):
        t = pd.to_numeric(g["train_seconds"], errors="coerce").to_numpy(dtype=float)
        if len(t) > 1 and np.isfinite(t).all() and np.allclose(t, t[0], rtol=SAME_RTOL, atol=0.0):
            out.loc[g.index, "train_seconds"] = np.nan
    return out


def judge_seeds(claims_yaml: str | Path, folders: dict[int, Path],
                cells: list[dict[str, Any]] | None = None) -> pd.DataFrame:
    """Every claim judged on every seed's folder, with the pooled verdict's rule: one row per (claim, seed) whose
    file that seed has (``claim, seed, verdict, ours, note, file``); a claim the seed lacks the inputs of is
    :data:`~.seed_gaps.NOT_JUDGED` with the reason. ``cells``: when given, gets one row per Table-1 cell claim and
    seed (:func:`.cell_seeds.cell_row`: the seed's value and its verdict against July and the final version)."""
    from . import evaluate_claim

    claims = load_claims(claims_yaml)
    rows = []
    for seed, folder in sorted(folders.items()):
        cache: dict = {}
        for c in claims:
            if c.file not in SEED_FILES or not (Path(folder) / c.file).exists():
                continue
            r = evaluate_claim(c, folder, cache)
            note, verdict, ours = r["note"], r["verdict"], r["ours"]
            # a time claim judged on none, or on only some, of its items (the others' seeds share one time, e.g. all
            # datasets but one trained as populations) is not the claim on this seed
            if c.file == "training_time.csv" and (verdict not in JUDGED or r.get("missing")):
                times = pd.read_csv(Path(folder) / c.file)
                if "train_seconds" in times and times["train_seconds"].isna().any():
                    # ran, but its seeds were not timed apart; no value either, as on every other not-judged row
                    note, verdict, ours = SHARED_TIME, NOT_JUDGED, ""
            rows.append({"claim": c.id, "seed": int(seed), "verdict": verdict, "ours": ours,
                         "note": note, "file": c.file, "missing": r.get("missing", [])})
            cell = cell_row(c, seed, cache.get((c.file, False)), r) if cells is not None else None
            if cell is not None:
                cells.append(cell)
    long = pd.DataFrame(rows, columns=["claim", "seed", "verdict", "ours", "note", "file", "missing"])
    return mark_gaps(long, {c.id: c for c in claims}, folders, cells).drop(columns="missing")


def seed_verdicts(claims_yaml: str | Path, cells: list[dict[str, Any]] | None = None, **inputs: Any) -> pd.DataFrame:
    """:func:`seed_reports` into a temporary folder, then :func:`judge_seeds` (the per-seed tables are not kept:
    they are the pooled tables' inputs cut by seed; ``cells`` gets the Table-1 cells per seed)."""
    with tempfile.TemporaryDirectory(prefix="ctbench_seeds_") as tmp:
        return judge_seeds(claims_yaml, seed_reports(tmp, **inputs), cells)


__all__ = ["HANGS", "JUDGED", "NEVER", "NOT_JUDGED", "ROBUST", "ROBUST_SHARE", "SEED_COLUMNS", "SEED_FILES",
           "SHARED_TIME",
           "check_seed_inputs", "file_seed", "judge_seeds", "robustness_label", "seed_reports", "seed_shares",
           "seed_verdicts", "split_times", "with_seed_shares"]
