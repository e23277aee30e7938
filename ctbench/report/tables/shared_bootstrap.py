"""Table 1's bootstrap over individuals for several metrics of one dataset from one set of draws (issue 21).

The report bootstraps IP (``single``) and cost (``mutability``) of every dataset with the dataset's own seed
(:func:`ctbench.report.tables.paper_tables.dataset_seed`). A replicate's draws depend only on the seed and on the
strata (their sizes and order), not on the values, so where the two frames have the same strata (the paper's
evaluations do: same runs, λ values and individuals, every metric finite) the draws of one serve both: half the
random numbers and index arithmetic, the same numbers bit for bit as :func:`ctbench.evaluation.aggregate.
bootstrap_reduction` called once per frame (tested). Frames with other strata get their own draws, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...evaluation import aggregate as agg


@dataclass
class _Layout:
    """One frame's rows sorted by stratum, with what the draws and the statistics need."""

    J: int
    n_lam: int
    n_runs: int
    cell: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    vals: np.ndarray
    w: np.ndarray
    dataset: object

    def same_draws(self, other: _Layout) -> bool:
        return (self.J, self.n_lam) == (other.J, other.n_lam) and np.array_equal(self.starts, other.starts) \
            and np.array_equal(self.sizes, other.sizes) and np.array_equal(self.cell, other.cell)


def _layout(df: pd.DataFrame, metric: str, kind: str | None, ct: str, bl: str) -> _Layout | None:
    """The steps of ``bootstrap_reduction`` before its draws, for a frame of one dataset (None: not one dataset)."""
    cols = agg.COLS
    d = agg._prepare(df, metric, kind, False, cols)
    d = d[d[cols.objective].isin([ct, bl])]
    groups = list(d.groupby(cols.dataset, sort=False))
    if len(groups) != 1:
        return None
    ds, g = groups[0]
    run_code, runs = pd.factorize(g[cols.run], sort=True)
    lam_code, lams = pd.factorize(g[cols.lam], sort=True)
    J, n_lam = 2 * len(runs), len(lams)
    j = run_code * 2 + (g[cols.objective] == bl).to_numpy().astype(int)
    cell = j * n_lam + lam_code
    order = np.argsort(cell, kind="stable")
    cell = cell[order]
    vals = g["_y"].to_numpy(float)[order]
    w = g[cols.valid].astype(bool).to_numpy(float)[order]
    n = len(vals)
    starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    sizes = np.diff(np.r_[starts, n])
    return _Layout(J, n_lam, len(runs), cell, starts, sizes, vals, w, ds)


def _shared_sums(rng: np.random.Generator, pairs: Sequence[tuple[np.ndarray, np.ndarray]], cell: np.ndarray,
                 starts: np.ndarray, sizes: np.ndarray, n_boot: int, n_cell: int, max_bytes: int):
    """``aggregate._replicate_sums`` (λ-stratified: the cells are the strata) for several (v·w, w) pairs of the same
    strata from one stream of draws: yields, per block of replicates, a list of (sums, counts) per pair. Each pair's
    arrays are bit for bit those of ``_replicate_sums`` on that pair alone (the same draws, gathers and sums)."""
    n = len(cell)
    block = max(1, min(agg._BLOCK, int(max_bytes // 48)))
    size_f = np.repeat(sizes, sizes).astype(np.float64)
    row_start = np.repeat(starts, sizes).astype(np.int64)
    ws = [np.ascontiguousarray(w, dtype=np.float64) for _, w in pairs]
    vws = [vw for vw, _ in pairs]
    if n <= block:
        per = max(1, block // max(n, 1))
        done = 0
        while done < n_boot:
            b = min(per, n_boot - done)
            k = (rng.random((b, n)) * size_f).astype(np.int64)
            k += row_start
            flat = (cell + np.arange(b)[:, None] * n_cell).ravel()
            yield [(np.bincount(flat, weights=vw[k].ravel(), minlength=b * n_cell).reshape(b, n_cell),
                    np.bincount(flat, weights=w[k].ravel(), minlength=b * n_cell).reshape(b, n_cell))
                   for vw, w in zip(vws, ws, strict=True)]
            done += b
        return
    cuts = [0]
    for st, e in zip(starts, starts + sizes, strict=True):
        if e - cuts[-1] > block and st > cuts[-1]:
            cuts.append(int(st))
    cuts.append(n)
    segs = []
    for p0, p1 in zip(cuts[:-1], cuts[1:], strict=True):
        c0, c1 = int(cell[p0:p1].min()), int(cell[p0:p1].max()) + 1
        first = (starts >= p0) & (starts < p1)
        size = int(sizes[first][0])
        square = bool((sizes[first] == size).all()) and c1 - c0 == int(first.sum()) >= 2
        segs.append((p0, p1, c0, c1, size if square else 0, starts[first][None, :], cell[p0:p1] - c0))
    wbs = [w.astype(bool) for w in ws]
    m_max = max(p1 - p0 for p0, p1, *_ in segs)
    ubuf, gbuf = np.empty(m_max), np.empty(m_max)
    kbuf, hbuf = np.empty(m_max, np.int64), np.empty(m_max, bool)
    per = max(1, min(64, n_boot))
    done = 0
    while done < n_boot:
        b = min(per, n_boot - done)
        out = [(np.zeros((b, n_cell)), np.zeros((b, n_cell))) for _ in pairs]
        for r in range(b):
            for p0, p1, c0, c1, size, seg_starts, local in segs:
                u, k = ubuf[:p1 - p0], kbuf[:p1 - p0]
                rng.random(out=u)
                if size:
                    shape = (size, c1 - c0)
                    k2 = k.reshape(shape)
                    g, h = gbuf[:p1 - p0].reshape(shape), hbuf[:p1 - p0].reshape(shape)
                    # the product cast to int64 on the way out: the old multiply-then-copyto's truncation, one pass
                    np.multiply(u.reshape(c1 - c0, size).T, float(size), out=k2, casting="unsafe")
                    k2 += seg_starts
                    for (s, c), vw, wb in zip(out, vws, wbs, strict=True):
                        np.take(vw, k2, out=g, mode="wrap")
                        np.take(wb, k2, out=h, mode="wrap")
                        s[r, c0:c1] = np.add.reduce(g, axis=0, initial=0.0)
                        c[r, c0:c1] = np.count_nonzero(h, axis=0)
                else:
                    np.multiply(u, size_f[p0:p1], out=k, casting="unsafe")
                    k += row_start[p0:p1]
                    for (s, c), vw, w in zip(out, vws, ws, strict=True):
                        s[r, c0:c1] = np.bincount(local, weights=vw[k], minlength=c1 - c0)
                        c[r, c0:c1] = np.bincount(local, weights=w[k], minlength=c1 - c0)
        yield out
        done += b


def _rows(lay: _Layout, label: str, reps: dict[str, list[np.ndarray]], n_boot: int, level: float) -> pd.DataFrame:
    """The one-row frame of ``bootstrap_reduction`` from the point estimate and the replicates' statistics."""
    qs = [(1 - level) / 2, (1 + level) / 2]
    n = len(lay.vals)
    idx0 = np.arange(n)[None, :]
    point = agg._stats(agg._run_level(lay.vals[idx0], lay.w[idx0], lay.cell[idx0], lay.J, lay.n_lam)
                       .reshape(1, -1, 2))
    row = {"dataset": lay.dataset, "metric": label}
    for k in point:
        r = np.concatenate(reps[k])
        lo, hi = np.nanquantile(r, qs) if np.isfinite(r).any() else (np.nan, np.nan)
        row.update({k: float(point[k][0]), f"{k}_lb": lo, f"{k}_ub": hi})
        if k == "mean_delta":
            row["delta_se"] = float(np.nanstd(r, ddof=1))
    row["significant"] = bool(row["mean_delta_lb"] > 0 or row["mean_delta_ub"] < 0)
    row.update(n_rows=n, n_runs=lay.n_runs, n_boot=n_boot, level=level)
    return pd.DataFrame([row])


def shared_bootstraps(jobs: Sequence[tuple[pd.DataFrame, str, str | None, str]], *, n_boot: int = 1000,
                      seed: int = 2025, level: float = 0.99, ct: str = "full", bl: str = "vanilla",
                      max_bytes: int = 64 * 2**20) -> list[pd.DataFrame]:
    """``[bootstrap_reduction(df, metric, kind=kind, label=label, n_boot=, seed=, level=, ct=, bl=) for (df, metric,
    kind, label) in jobs]`` (λ-stratified), each frame holding one dataset's rows: the same frames, bit for bit, with
    the draws made once for every group of frames that have the same strata."""
    if n_boot < 1:
        raise ValueError(f"shared_bootstraps: n_boot must be at least 1, got {n_boot}")
    pending = Bootstraps(n_boot=n_boot, level=level, ct=ct, bl=bl, max_bytes=max_bytes)
    for i, (df, metric, kind, label) in enumerate(jobs):
        pending.add(i, df, metric, kind, label, seed)
    done = pending.run()
    return [done[i] for i in range(len(jobs))]


#: how a replicate is drawn: ``"rows"`` every row of a stratum (``bootstrap_reduction``'s draws, bit for bit),
#: ``"cells"`` each stratum's valid count and valid sum (:mod:`.cell_bootstrap`: the same estimator up to a
#: central-limit step, two random numbers per stratum instead of one per row)
DRAWS = ("cells", "rows")


class Bootstraps:
    """Bootstraps collected one frame at a time (:meth:`add`: the frame can be freed after it) and run together
    (:meth:`run`). ``draws="rows"``: frames of one seed with the same strata share their draws; ``draws="cells"``
    (the report's default since issue 21): each frame draws its strata's counts and sums from its own seed."""

    def __init__(self, *, n_boot: int = 1000, level: float = 0.99, ct: str = "full", bl: str = "vanilla",
                 max_bytes: int = 64 * 2**20, draws: str = "rows"):
        if draws not in DRAWS:
            raise ValueError(f"Bootstraps: draws must be one of {DRAWS}, got {draws!r}")
        self.n_boot, self.level, self.ct, self.bl, self.max_bytes = n_boot, level, ct, bl, max_bytes
        self.draws = draws
        self.done: dict = {}
        self.order: list = []  # the keys, as added
        self.groups: list[tuple[int, _Layout, list[tuple[object, _Layout, str]]]] = []

    def add(self, key, df: pd.DataFrame, metric: str, kind: str | None, label: str, seed: int) -> None:
        """``bootstrap_reduction(df, metric, kind=kind, label=label, seed=seed, …)`` to be made under ``key``."""
        self.order.append(key)
        lay = _layout(df, metric, kind, self.ct, self.bl)
        if lay is None:  # no rows, or several datasets in one frame: the general function, now
            self.done[key] = agg.bootstrap_reduction(df, metric, kind=kind, label=label, ct=self.ct, bl=self.bl,
                                                     n_boot=self.n_boot, level=self.level, seed=seed,
                                                     max_bytes=self.max_bytes)
            return
        home = None if self.draws == "cells" else \
            next((m for s, first, m in self.groups if s == seed and first.same_draws(lay)), None)
        if home is None:
            self.groups.append((seed, lay, [(key, lay, label)]))
        else:
            home.append((key, lay, label))

    def run(self) -> dict:
        """key → the one-row frame of each added bootstrap."""
        for seed, first, members in self.groups:
            rng = np.random.default_rng(seed)
            reps = [{k: [] for k in ("mean_delta", "reduction_pct", "reduction_rom_pct")} for _ in members]
            n_cell = first.J * first.n_lam
            if self.draws == "cells":  # one member per group
                from .cell_bootstrap import cell_moments, cell_sums

                moments = cell_moments(first.cell, first.vals, first.w, first.starts, first.sizes)
                blocks = ([one] for one in cell_sums(rng, moments, self.n_boot, n_cell, self.max_bytes))
            else:
                pairs = [(lay.vals * lay.w, lay.w) for _, lay, _ in members]
                blocks = _shared_sums(rng, pairs, first.cell, first.starts, first.sizes, self.n_boot, n_cell,
                                      self.max_bytes)
            for sums in blocks:
                for rep, (s_sum, c_sum) in zip(reps, sums, strict=True):
                    b = len(s_sum)
                    shape = (b, first.J, first.n_lam)
                    st = agg._stats(agg._cell_means_to_runs(s_sum.reshape(shape), c_sum.reshape(shape))
                                    .reshape(b, -1, 2))
                    for k in rep:
                        rep[k].append(st[k])
            for (key, lay, label), rep in zip(members, reps, strict=True):
                self.done[key] = _rows(lay, label, rep, self.n_boot, self.level)
        self.groups = []
        return self.done
