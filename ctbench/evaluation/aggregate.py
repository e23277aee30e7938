"""Aggregation of per-counterfactual metrics into the paper's tables (reference/ct_reference.md §7.4, §7.5, §11.16).

Input everywhere: a tidy frame with one row per counterfactual and (names configurable through :class:`Columns`)
``dataset``, ``run``, ``lambda_energy`` (test-time λ_egy), ``objective`` (``"full"`` = CT, ``"vanilla"`` = BL, also
``"energy"``/``"adversarial"`` in the ablation), ``valid`` (label-flip validity, bool/0-1) and one column per metric
(``ip``, ``ip_star``, ``cost``, … as non-negative distances, see :mod:`ctbench.evaluation.metrics`). Output: tidy
frames; nothing is printed.

Functions:

* :func:`reduction_table` — Table I / appendix CI table recipe (paper's "bootstrap" = the evaluation runs).
* :func:`validity_table` — Table III.
* :func:`ablation_table` — Fig. 6 reductions.
* :func:`bootstrap_reduction` — a proper bootstrap over individuals (a second, statistically cleaner estimate).
* :func:`compare_published` — our Table I next to the published one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "AVG",
    "Columns",
    "ablation_table",
    "bootstrap_reduction",
    "compare_published",
    "paper_value",
    "per_run_means",
    "reduction_table",
    "validity_table",
]

#: label of the "average over datasets" row
AVG = "Avg."

#: how the authors' harness stores each metric (§7.3/§7.4): sign, and whether the value is clamped at 0 first
PAPER_CONVENTION: dict[str, tuple[float, bool]] = {
    "ip": (-1.0, False),  # plausibility = −IP
    "ip_star": (-1.0, True),  # −max(MMD², 0)
    "mmd": (-1.0, True),
    "cost": (1.0, False),  # distance
    "distance": (1.0, False),
}

#: our metric column → the metric name used in reference/published/table1_reductions.csv
PUBLISHED_METRIC_NAMES: dict[str, str] = {
    "ip": "IP", "ip_star": "IP*", "mmd": "IP*", "cost": "Cost", "distance": "Cost",
}


@dataclass(frozen=True)
class Columns:
    """Names of the design columns of a per-counterfactual frame."""

    dataset: str = "dataset"
    run: str = "run"
    lam: str = "lambda_energy"
    objective: str = "objective"
    valid: str = "valid"


COLS = Columns()


def paper_value(values, kind: str):
    """Value as stored by the authors' harness: IP → −IP, IP* → −max(MMD², 0), cost → +cost.

    ``kind`` is one of ``PAPER_CONVENTION``. The sign cancels in every published statistic (ratios ρ_r of
    same-sign means; |·| in the differences Δ_r and the CT/BL columns), so ``reduction_table`` gives the same result
    on the stored and on the positive values — but the clamp at 0 of IP* does matter, and is applied here.
    """
    if kind not in PAPER_CONVENTION:
        raise KeyError(f"unknown metric kind {kind!r}; expected one of {sorted(PAPER_CONVENTION)}")
    sign, clamp = PAPER_CONVENTION[kind]
    v = np.asarray(values, dtype=float)
    if clamp:
        v = np.where(np.isnan(v), np.nan, np.maximum(v, 0.0))
    out = sign * v
    return pd.Series(out, index=values.index, name=getattr(values, "name", None)) if isinstance(values, pd.Series) \
        else out


def _prepare(df: pd.DataFrame, metric: str, kind: str | None, valid_only: bool, cols: Columns) -> pd.DataFrame:
    """Metric column → ``_y`` (transformed if ``kind``), non-finite rows dropped, optionally valid rows only."""
    y = pd.to_numeric(df[metric], errors="coerce").astype(float)
    y = paper_value(y, kind) if kind is not None else y
    keep = np.isfinite(y.to_numpy())
    if valid_only:
        keep &= df[cols.valid].astype(bool).to_numpy()
    # one copy of the kept rows and of the columns the recipes use (the paper profile's evaluations are ~21M rows)
    use = [c for c in dict.fromkeys((cols.dataset, cols.run, cols.lam, cols.objective, cols.valid)) if c in df]
    return df.loc[keep, use].assign(_y=y.to_numpy()[keep])


def per_run_means(df: pd.DataFrame, metric: str, *, kind: str | None = None, valid_only: bool = True,
                  cols: Columns = COLS) -> pd.DataFrame:
    """Steps 1–3 of §7.4: valid-only cell means per (dataset, run, λ, objective), then the mean over the λ cells
    that exist. Returns columns ``dataset, run, objective, value, n_lambda``."""
    d = _prepare(df, metric, kind, valid_only, cols)
    cell = d.groupby([cols.dataset, cols.run, cols.lam, cols.objective], sort=False)["_y"].mean().reset_index()
    out = cell.groupby([cols.dataset, cols.run, cols.objective], sort=False)["_y"].agg(["mean", "size"]).reset_index()
    return out.rename(columns={cols.dataset: "dataset", cols.run: "run", cols.objective: "objective",
                               "mean": "value", "size": "n_lambda"})


def reduction_table(df: pd.DataFrame, metric: str, *, kind: str | None = None, label: str | None = None,
                    ct: str = "full", bl: str = "vanilla", level: float = 0.99, avg_row: bool = True,
                    cols: Columns = COLS) -> pd.DataFrame:
    """Table I (and the appendix CI table) for one metric, exactly the recipe of §7.4.

    1. drop rows whose metric is NaN/±Inf, keep valid counterfactuals only (``kind`` given: first map the metric to
       the harness's stored value with :func:`paper_value`, e.g. ``kind="ip_star"`` → −max(MMD², 0));
    2. cell means m(r, λ, o) per (dataset, run, λ, objective); 3. m(r, o) = mean over the existing λ cells;
    4. ρ_r = m(r, CT) / m(r, BL) over the runs that have both objectives (non-finite ρ_r, e.g. 0/0 for an IP* of
       exactly 0, are left out of steps 5);
    5. ``reduction_pct`` = (1 − mean_r ρ_r)·100, ``pm`` = 100·std_r(ρ_r) (sample std, ddof=1 — a spread of the
       per-run ratios, *not* a standard error);
    6. Δ_r = |m(r, CT)| − |m(r, BL)|; [``lb``, ``ub``] = the (1−level)/2 and (1+level)/2 quantiles of Δ_r (linear
       interpolation = numpy default = Julia ``quantile``); ``significant`` when the interval excludes 0;
    7. ``ct_mean_abs``/``bl_mean_abs`` = mean_r |m(r, o)| (appendix CI table columns); an ``Avg.`` row holds the
       plain mean of the datasets' ``reduction_pct`` (other columns NA).

    Returns one row per dataset (in order of first appearance) with columns ``dataset, metric, reduction_pct, pm,
    significant, lb, ub, ct_mean_abs, bl_mean_abs, mean_delta, n_runs, n_ratio, level``; ``metric`` = ``label``
    (default: the metric column name).
    """
    label = label or metric
    pr = per_run_means(df, metric, kind=kind, cols=cols)
    rows = []
    qs = [(1 - level) / 2, (1 + level) / 2]
    for ds, g in pr.groupby("dataset", sort=False):
        w = g.pivot_table(index="run", columns="objective", values="value", aggfunc="first")
        if ct not in w or bl not in w:
            continue
        w = w[[ct, bl]].dropna()
        m_ct, m_bl = w[ct].to_numpy(), w[bl].to_numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = m_ct / m_bl
        rho = rho[np.isfinite(rho)]
        delta = np.abs(m_ct) - np.abs(m_bl)
        lb, ub = np.quantile(delta, qs) if delta.size else (np.nan, np.nan)
        rows.append({
            "dataset": ds, "metric": label,
            "reduction_pct": (1.0 - rho.mean()) * 100.0 if rho.size else np.nan,
            "pm": 100.0 * rho.std(ddof=1) if rho.size > 1 else np.nan,
            "significant": bool(lb > 0 or ub < 0) if delta.size else pd.NA,
            "lb": lb, "ub": ub,
            "ct_mean_abs": np.abs(m_ct).mean() if delta.size else np.nan,
            "bl_mean_abs": np.abs(m_bl).mean() if delta.size else np.nan,
            "mean_delta": delta.mean() if delta.size else np.nan,
            "n_runs": int(delta.size), "n_ratio": int(rho.size), "level": level,
        })
    out = pd.DataFrame(rows, columns=["dataset", "metric", "reduction_pct", "pm", "significant", "lb", "ub",
                                      "ct_mean_abs", "bl_mean_abs", "mean_delta", "n_runs", "n_ratio", "level"])
    if avg_row and len(out):
        avg = {c: np.nan for c in out.columns}
        avg.update(dataset=AVG, metric=label, reduction_pct=out["reduction_pct"].mean(), significant=pd.NA,
                   n_runs=pd.NA, n_ratio=pd.NA, level=level)
        out = pd.concat([out, pd.DataFrame([avg])], ignore_index=True)
    out["significant"] = out["significant"].astype("boolean")
    out[["n_runs", "n_ratio"]] = out[["n_runs", "n_ratio"]].astype("Int64")
    return out


def validity_table(df: pd.DataFrame, *, avg_row: bool = True, cols: Columns = COLS) -> pd.DataFrame:
    """Table III: per (dataset, objective), the mean over (run, λ) cells of the mean validity (all rows, no
    valid-only filter). ``Avg.`` rows (one per objective) average the datasets. Columns ``dataset, objective,
    validity, n_cells``."""
    d = df.assign(_v=df[cols.valid].astype(float))
    cell = d.groupby([cols.dataset, cols.objective, cols.run, cols.lam], sort=False)["_v"].mean().reset_index()
    out = cell.groupby([cols.dataset, cols.objective], sort=False)["_v"].agg(["mean", "size"]).reset_index()
    out = out.rename(columns={cols.dataset: "dataset", cols.objective: "objective", "mean": "validity",
                              "size": "n_cells"})
    if avg_row and len(out):
        avg = out.groupby("objective", sort=False)["validity"].mean().reset_index().assign(dataset=AVG, n_cells=pd.NA)
        out = pd.concat([out, avg[out.columns]], ignore_index=True)
    out["n_cells"] = out["n_cells"].astype("Int64")
    return out


def ablation_table(df: pd.DataFrame, metric: str, *, kind: str | None = None, label: str | None = None,
                   baseline: str = "vanilla", cols: Columns = COLS) -> pd.DataFrame:
    """Ablation reductions (Fig. 6, §7.5): per (dataset, objective), ``mean`` = mean over the (run, λ) cells of the
    valid-only cell means (no λ marginalisation first, no ratios), ``reduction_pct = (1 − |mean| / |mean_BL|)·100``
    (the baseline itself gets 0). Columns ``dataset, metric, objective, mean, baseline_mean, reduction_pct,
    n_cells``."""
    d = _prepare(df, metric, kind, True, cols)
    cell = d.groupby([cols.dataset, cols.objective, cols.run, cols.lam], sort=False)["_y"].mean().reset_index()
    out = cell.groupby([cols.dataset, cols.objective], sort=False)["_y"].agg(["mean", "size"]).reset_index()
    out = out.rename(columns={cols.dataset: "dataset", cols.objective: "objective", "size": "n_cells"})
    base = out[out["objective"] == baseline].set_index("dataset")["mean"]
    # as floats whatever the key column's dtype (an Arrow string column with no baseline row maps to strings)
    out["baseline_mean"] = out["dataset"].astype(object).map(base).astype("float64")
    with np.errstate(divide="ignore", invalid="ignore"):
        out["reduction_pct"] = (1.0 - out["mean"].abs() / out["baseline_mean"].abs()) * 100.0
    out.insert(1, "metric", label or metric)
    return out[["dataset", "metric", "objective", "mean", "baseline_mean", "reduction_pct", "n_cells"]]


def _run_level(v: np.ndarray, w: np.ndarray, cell: np.ndarray, J: int, n_lam: int) -> np.ndarray:
    """(b, N) values, validity weights and (run, objective, λ) cell codes → (b, J) λ-marginalised valid-only means
    per (run, objective) (cell code = j·n_lam + λ); one bincount per quantity over all replicates at once."""
    b = v.shape[0]
    n_cell = J * n_lam
    flat = (cell + np.arange(b)[:, None] * n_cell).ravel()
    s = np.bincount(flat, weights=(v * w).ravel(), minlength=b * n_cell).reshape(b, J, n_lam)
    c = np.bincount(flat, weights=w.ravel(), minlength=b * n_cell).reshape(b, J, n_lam)
    return _cell_means_to_runs(s, c)


def _cell_means_to_runs(s: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(b, J, n_lam) sums of valid values and valid counts per cell → (b, J) λ-marginalised valid-only means."""
    with np.errstate(divide="ignore", invalid="ignore"):
        m = s / c  # NaN where a (resampled) cell has no valid row, or does not exist
        ok = np.isfinite(m)
        return np.where(ok, m, 0.0).sum(axis=2) / ok.sum(axis=2)


#: positions drawn per block of the bootstrap: the block's buffers and the rows it draws from stay in cache
_BLOCK = 1 << 15


def _replicate_sums(rng: np.random.Generator, vw: np.ndarray, w: np.ndarray, cell: np.ndarray, starts: np.ndarray,
                    sizes: np.ndarray, n_boot: int, n_cell: int, max_bytes: int, cell_is_stratum: bool):
    """The bootstrap's draws: yields (b, n_cell) arrays of the valid values' sums and the valid counts per cell of
    ``b`` successive replicates, until ``n_boot`` replicates are done.

    Rows are sorted by stratum (``starts``/``sizes``: each stratum's first row and size); every position p of a
    replicate draws row ``start(p) + ⌊u·size(p)⌋`` of its own stratum, u from ``rng.random`` in the order of the
    (replicate, position) grid, and the drawn row's value counts in the cell of the drawn row. The same draws and the
    same sums, bit for bit, as drawing the whole (n_boot, n) grid at once and summing with one ``bincount`` per
    replicate (the loop before issue 21, kept in ``tests/test_aggregate.py``): u·size ≥ 0, so the cast truncates as
    ``floor`` did; ``vw = v·w`` gathered is the product of the gathered values; a cell lies in one stratum, so blocks
    cut at stratum boundaries hold every cell whole. Where the cells are the strata (``cell_is_stratum``: λ
    stratified) and a block's cells are equally large, a cell's draws are its own positions: the block's draws are
    gathered as a (cell size × cells) array and summed down its first axis, which numpy adds row after row, i.e. each
    cell's values in position order from 0.0, as ``bincount`` does (tested bitwise; with two cells or more:
    a single column is summed pairwise); other blocks use ``bincount``.
    What it saves against the old loop: the gather of the cell codes, one product, the bincounts' passes and the
    memory traffic of (replicates × n) arrays of up to 64 MB (blocks of :data:`_BLOCK` positions instead).
    """
    n = len(vw)
    block = max(1, min(_BLOCK, int(max_bytes // 48)))
    size_f = np.repeat(sizes, sizes).astype(np.float64)
    row_start = np.repeat(starts, sizes).astype(np.int64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    if n <= block:  # several whole replicates per block, summed with one bincount as before
        per = max(1, block // max(n, 1))
        done = 0
        while done < n_boot:
            b = min(per, n_boot - done)
            k = (rng.random((b, n)) * size_f).astype(np.int64)
            k += row_start
            flat = ((cell if cell_is_stratum else cell[k]) + np.arange(b)[:, None] * n_cell).ravel()
            s = np.bincount(flat, weights=vw[k].ravel(), minlength=b * n_cell).reshape(b, n_cell)
            c = np.bincount(flat, weights=w[k].ravel(), minlength=b * n_cell).reshape(b, n_cell)
            yield s, c
            done += b
        return
    # one replicate at a time, in blocks of whole strata (a stratum larger than a block is a block of its own)
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
        # ≥ 2 cells: numpy sums a (size × 1) array down its contiguous axis pairwise, not row after row
        square = cell_is_stratum and bool((sizes[first] == size).all()) and c1 - c0 == int(first.sum()) >= 2
        segs.append((p0, p1, c0, c1, size if square else 0, starts[first][None, :], cell[p0:p1] - c0))
    wb = w.astype(bool)
    m_max = max(p1 - p0 for p0, p1, *_ in segs)
    ubuf, tbuf, gbuf = np.empty(m_max), np.empty(m_max), np.empty(m_max)
    kbuf, hbuf = np.empty(m_max, np.int64), np.empty(m_max, bool)
    per = max(1, min(64, n_boot))
    done = 0
    while done < n_boot:
        b = min(per, n_boot - done)
        s = np.zeros((b, n_cell))
        c = np.zeros((b, n_cell))
        for r in range(b):
            for p0, p1, c0, c1, size, seg_starts, local in segs:
                u, k = ubuf[:p1 - p0], kbuf[:p1 - p0]
                rng.random(out=u)
                if size:  # (draw within the cell, cell) arrays in C order: u transposed while it is scaled
                    shape = (size, c1 - c0)
                    t, k2 = tbuf[:p1 - p0].reshape(shape), k.reshape(shape)
                    g, h = gbuf[:p1 - p0].reshape(shape), hbuf[:p1 - p0].reshape(shape)
                    np.multiply(u.reshape(c1 - c0, size).T, float(size), out=t)
                    np.copyto(k2, t, casting="unsafe")
                    k2 += seg_starts
                    np.take(vw, k2, out=g, mode="wrap")  # the indices are in range: "wrap" only skips the check
                    np.take(wb, k2, out=h, mode="wrap")
                    s[r, c0:c1] = np.add.reduce(g, axis=0, initial=0.0)
                    c[r, c0:c1] = np.count_nonzero(h, axis=0)
                else:
                    np.multiply(u, size_f[p0:p1], out=u)
                    np.copyto(k, u, casting="unsafe")
                    k += row_start[p0:p1]
                    loc = local if cell_is_stratum else cell[k] - c0
                    s[r, c0:c1] = np.bincount(loc, weights=vw[k], minlength=c1 - c0)
                    c[r, c0:c1] = np.bincount(loc, weights=w[k], minlength=c1 - c0)
        yield s, c
        done += b


def _stats(m: np.ndarray) -> dict[str, np.ndarray]:
    """(b, R, 2) run-level means (CT, BL) → mean Δ, paper reduction (mean of ratios), ratio-of-means reduction."""
    ct, bl = m[..., 0], m[..., 1]
    both = np.isfinite(ct) & np.isfinite(bl)
    n = both.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.where(both, np.abs(ct) - np.abs(bl), 0.0).sum(axis=1) / n
        rho = ct / bl
        rok = both & np.isfinite(rho)
        mean_rho = np.where(rok, rho, 0.0).sum(axis=1) / rok.sum(axis=1)
        rom = np.where(both, np.abs(ct), 0.0).sum(axis=1) / np.where(both, np.abs(bl), 0.0).sum(axis=1)
    return {"mean_delta": delta, "reduction_pct": (1 - mean_rho) * 100, "reduction_rom_pct": (1 - rom) * 100}


def bootstrap_reduction(df: pd.DataFrame, metric: str, *, kind: str | None = None, label: str | None = None,
                        ct: str = "full", bl: str = "vanilla", n_boot: int = 1000, level: float = 0.99,
                        seed: int = 2025, stratify_lambda: bool = True, max_bytes: int = 64 * 2**20,
                        cols: Columns = COLS) -> pd.DataFrame:
    """Bootstrap over individuals: percentile CIs of the mean difference CT − BL and of the reduction.

    Why a second estimate: in the paper's recipe (:func:`reduction_table`) the "±" is 100·std of the per-run
    ratios ρ_r — the spread of a *single* run's ratio, which does not shrink with the number of runs (a standard
    error of the mean reduction would be std/√R) — and the star's 99% interval is the percentile range of the
    per-run differences Δ_r, i.e. where a single run falls, not a confidence interval of the mean difference. Here
    the individuals are resampled instead: within every stratum (run, λ, objective) — or (run, objective) with
    ``stratify_lambda=False`` — the counterfactual rows (valid and invalid, after dropping non-finite metric
    values) are drawn with replacement, keeping stratum sizes; each of ``n_boot`` replicates recomputes the same
    statistic as the point estimate (valid-only cell means → λ-marginalised run means → statistic), so the number of
    valid rows is random too. The interval covers the sampling of individuals given the trained models (as in the
    paper, training seeds are not resampled). Vectorised with numpy in chunks of at most ``max_bytes``; seeded with
    ``numpy.random.default_rng(seed)`` → reproducible.

    Statistics (point estimate on the data, ``*_lb``/``*_ub`` = (1∓level)/2 percentiles over replicates):
    ``mean_delta`` = mean_r (|m(r,CT)| − |m(r,BL)|) (CT − BL on the absolute scale; negative = CT better),
    ``reduction_pct`` = (1 − mean_r ρ_r)·100 (the paper's definition), ``reduction_rom_pct`` = (1 − mean_r|m(r,CT)| /
    mean_r|m(r,BL)|)·100 (ratio of means, more stable when m(r,BL) is small). ``significant``: the ``mean_delta``
    interval excludes 0. Also ``delta_se`` = bootstrap standard deviation of ``mean_delta``. One row per dataset.
    """
    label = label or metric
    qs = [(1 - level) / 2, (1 + level) / 2]
    d = _prepare(df, metric, kind, False, cols)
    d = d[d[cols.objective].isin([ct, bl])]
    rng = np.random.default_rng(seed)
    rows = []
    for ds, g in d.groupby(cols.dataset, sort=False):
        run_code, runs = pd.factorize(g[cols.run], sort=True)
        lam_code, lams = pd.factorize(g[cols.lam], sort=True)
        J, n_lam = 2 * len(runs), len(lams)
        j = run_code * 2 + (g[cols.objective] == bl).to_numpy().astype(int)  # (run, objective); 0 = CT, 1 = BL
        cell = j * n_lam + lam_code
        stratum = cell if stratify_lambda else j
        order = np.argsort(stratum, kind="stable")
        stratum, cell = stratum[order], cell[order]
        vals = g["_y"].to_numpy(float)[order]
        w = g[cols.valid].astype(bool).to_numpy(float)[order]
        n = len(vals)
        starts = np.flatnonzero(np.r_[True, stratum[1:] != stratum[:-1]])
        sizes = np.diff(np.r_[starts, n])
        idx0 = np.arange(n)[None, :]
        point = _stats(_run_level(vals[idx0], w[idx0], cell[idx0], J, n_lam).reshape(1, -1, 2))
        reps = {k: [] for k in point}
        for s_sum, c_sum in _replicate_sums(rng, vals * w, w, cell, starts, sizes, n_boot, J * n_lam, max_bytes,
                                              stratify_lambda):
            b = len(s_sum)
            st = _stats(_cell_means_to_runs(s_sum.reshape(b, J, n_lam), c_sum.reshape(b, J, n_lam)).reshape(b, -1, 2))
            for k in reps:
                reps[k].append(st[k])
        row = {"dataset": ds, "metric": label}
        for k in point:
            r = np.concatenate(reps[k])
            lo, hi = np.nanquantile(r, qs) if np.isfinite(r).any() else (np.nan, np.nan)
            row.update({k: float(point[k][0]), f"{k}_lb": lo, f"{k}_ub": hi})
            if k == "mean_delta":
                row["delta_se"] = float(np.nanstd(r, ddof=1))
        row["significant"] = bool(row["mean_delta_lb"] > 0 or row["mean_delta_ub"] < 0)
        row.update(n_rows=n, n_runs=len(runs), n_boot=n_boot, level=level)
        rows.append(row)
    return pd.DataFrame(rows)


def compare_published(ours: pd.DataFrame, published_csv: str | Path, *, version: str = "satml_2026",
                      metric_names: Mapping[str, str] | None = None,
                      dataset_names: Mapping[str, str] | None = None,
                      keep: Sequence[str] = ("reduction_pct", "pm", "significant")) -> pd.DataFrame:
    """Our :func:`reduction_table` rows next to the published Table I (``table1_reductions.csv``).

    ``ours`` metric labels are mapped with ``metric_names`` (default :data:`PUBLISHED_METRIC_NAMES`, e.g.
    ``ip_star`` → ``IP*``; unknown labels pass unchanged) and dataset names with ``dataset_names`` (default
    identity). Outer join on (dataset, metric) so that missing rows show. Columns: ``dataset, metric`` + ``keep`` +
    ``pub_<keep>`` + ``diff_pct`` (ours − published reduction, percentage points) + ``significant_agrees``.
    """
    pub = pd.read_csv(published_csv)
    pub = pub[pub["version"] == version].drop(columns="version")
    pub["significant"] = pub["significant"].map({1: True, 0: False}).astype("boolean")
    mnames = dict(PUBLISHED_METRIC_NAMES if metric_names is None else metric_names)
    o = ours[["dataset", "metric", *keep]].copy()
    o["metric"] = o["metric"].map(lambda m: mnames.get(m, m))
    if dataset_names:
        o["dataset"] = o["dataset"].map(lambda s: dataset_names.get(s, s))
    p = pub[["dataset", "metric", *keep]].rename(columns={k: f"pub_{k}" for k in keep})
    out = o.merge(p, on=["dataset", "metric"], how="outer", sort=False)
    out["diff_pct"] = out["reduction_pct"] - out["pub_reduction_pct"]
    if "significant" in keep:
        agree = out["significant"].astype("boolean") == out["pub_significant"].astype("boolean")
        out["significant_agrees"] = agree
    order = {(d, m): i for i, (d, m) in enumerate(zip(pub["dataset"], pub["metric"], strict=True))}
    out["_o"] = [order.get((d, m), len(order)) for d, m in zip(out["dataset"], out["metric"], strict=True)]
    return out.sort_values("_o", kind="stable").drop(columns="_o").reset_index(drop=True)
