"""The prose of the consistency chapter (``paper/consistency.md``), every number read from the report's consistency
tables (issue 14, item 5): Table 1 regenerated, the r² paragraph, the CT × consistency answer and the compute.

Judgements in words ("every", "higher", "no", "not systematically") are computed from the same numbers, so a run
that comes out differently gets different sentences. The only constants typed here are the thresholds below and
the design's CPU target; a missing table gives the chapter's "not yet run" note.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...io import is_dirty
from ..common import not_run_note, read_report_csv

#: a dataset's mean rate without SNS "is of the published size" when within this of the paper's (mean over methods)
SIZE_TOL = 0.1
#: SNS "leaves a residue" on a dataset when its largest rate after SNS exceeds this
RESIDUE = 0.05
#: the design's CPU budget for Black et al.'s part of the stage (DESIGN.md: ≤ 10 CPU-minutes)
TARGET_CPU_MIN = 10


def _r(v: float) -> str:
    """A rate: two decimals, three where two would print a non-zero value as 0.00."""
    v = float(v)
    return f"{v:.3f}" if 0 < abs(v) < 0.005 else f"{v:.2f}"


def _d(v: float) -> str:
    """A signed difference, with a real minus sign."""
    return _r(v) if v == 0 else ("+" if v > 0 else "−") + _r(abs(v))


def _span(vals) -> str:
    vals = [float(v) for v in vals if pd.notna(v)]
    if not vals:
        return "–"
    lo, hi = _r(min(vals)), _r(max(vals))
    return lo if lo == hi else f"{lo}–{hi}"


def _join(items: list[str]) -> str:
    items = list(items)
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _of(k: int, n: int) -> str:
    return f"all {n}" if k == n and n > 1 else f"{k} of {n}"


def _every(k: int, n: int, what: str) -> str:
    return f"on every {what}" if k == n else f"on {k} of {n} {what}s"


def _ci(r: pd.Series, col: str) -> str:
    """``+0.38 [+0.26, +0.50]``; no interval where there is none (one seed)."""
    if pd.isna(r[col + "_lb"]):
        return _d(r[col])
    return f"{_d(r[col])} [{_d(r[col + '_lb'])}, {_d(r[col + '_ub'])}]"


def _commit(report: Path | None) -> str:
    """``report written with code of abc1234`` from ``provenance.json``, or nothing."""
    p = None if report is None else report / "provenance.json"
    if p is None or not p.exists():
        return ""
    c = str(json.loads(p.read_text()).get("git_commit") or "")
    if not c:
        return ""
    return f"report written with code of `{c[:7]}`{' with uncommitted changes' if is_dirty(c) else ''}"


# ------------------------------------------------------------------------------------------------- Table 1
def _sns_headline(t: pd.DataFrame) -> str:
    sns = t[t["sns"].astype(bool)]
    if sns.empty:
        return "this run has no SNS counterfactuals."
    top = sns.loc[sns["iv_loo"].idxmax()]
    text = (f"after SNS the LOO invalidation rate is at most {_r(top['iv_loo'])} on every dataset (largest: "
            f"{top['method']} on {top['dataset']}")
    if "pub_iv_loo" in sns and sns["pub_iv_loo"].notna().any():
        text += f"; published: at most {_r(sns['pub_iv_loo'].max())}"
    return text + ")."


def _pairs_sentence(pairs: pd.DataFrame | None) -> str:
    if pairs is None:
        return ""
    n, down = len(pairs), int((pairs["delta"] < 0).sum())
    if down == n:
        text = (f"Every base method moves down with SNS under both sources ({_of(down, n)} pairs of method, dataset "
                "and source)")
    else:
        up = pairs[pairs["delta"] >= 0]
        text = (f"SNS lowers the rate in {down} of {n} pairs of method, dataset and source; not in "
                + _join([f"{r['method']} on {r['dataset']} under {r['source']} ({_d(r['delta'])})"
                         for _, r in up.iterrows()]))
    pub = pairs["pub_delta"].dropna() if "pub_delta" in pairs else pd.Series(dtype=float)
    if len(pub):
        text += f"; in the paper, {_of(int((pub < 0).sum()), len(pub))} pairs it reports move down"
    return text + "."


def _against_published(base: pd.DataFrame) -> str:
    if "diff_iv_loo" not in base or base["diff_iv_loo"].isna().all():
        return ""
    same, off = [], []
    for ds, g in base.groupby("dataset", sort=False):
        g = g.dropna(subset=["pub_iv_loo", "pub_iv_rs"])
        if g.empty:
            continue
        m = {src: float(g[f"diff_iv_{src}"].mean()) for src in ("loo", "rs")}
        far = [f"{src.upper()} {_d(v)}" for src, v in m.items() if abs(v) > SIZE_TOL]
        (off.append(f"{ds} ({', '.join(far)})") if far else same.append(ds))
    text = (f"Without SNS the rates, averaged over the methods the paper reports, are within {SIZE_TOL:g} of the "
            f"published ones on {_join(same)}")
    text += f" and differ by more (ours − published) on {_join(off)}." if off else "."
    long = base.melt(id_vars=["method", "dataset", "validity"], value_vars=["diff_iv_loo", "diff_iv_rs"])
    long = long.dropna(subset=["value"])
    if len(long):
        w = long.loc[long["value"].abs().idxmax()]
        src = w["variable"].removeprefix("diff_iv_")
        r = base[(base["method"] == w["method"]) & (base["dataset"] == w["dataset"])].iloc[0]
        text += (f" The largest single difference is {w['method']} on {w['dataset']} under {src.upper()}: "
                 f"{_r(r[f'iv_{src}'])} against {_r(r[f'pub_iv_{src}'])} published (validity "
                 f"{_r(w['validity'])}).")
    return text


def _rs_vs_loo(base: pd.DataFrame) -> str:
    if base.empty:
        return ""
    per = base.groupby("dataset", sort=False)[["iv_rs", "iv_loo"]].mean()
    k, cells = int((per["iv_rs"] > per["iv_loo"]).sum()), int((base["iv_rs"] > base["iv_loo"]).sum())
    return (f"RS invalidates more than LOO {_every(k, len(per), 'dataset')} (mean over the methods without SNS) "
            f"and in {_of(cells, len(base))} (method, dataset) cells.")


def _residue(t: pd.DataFrame) -> str:
    sns = t[t["sns"].astype(bool)]
    if sns.empty:
        return ""
    worst = sns.groupby("dataset", sort=False)["iv_rs"].max()
    hit = worst[worst > RESIDUE]
    pub = "pub_iv_rs" in sns
    if hit.empty:
        text = f"Under RS, SNS leaves at most {_r(worst.max())} on every dataset"
        return text + (f" (published: at most {_r(sns['pub_iv_rs'].max())})." if pub else ".")
    parts = []
    for ds in hit.index:
        g = sns[sns["dataset"] == ds]
        p = g["pub_iv_rs"].dropna() if pub else pd.Series(dtype=float)
        parts.append(f"{ds} ({_span(g['iv_rs'])}" + (f"; published {_span(p)})" if len(p) else ")"))
    rest = worst.drop(hit.index)
    text = f"SNS under RS leaves a rate above {RESIDUE:g} on {_join(parts)}"
    return text + (f"; elsewhere at most {_r(rest.max())}." if len(rest) else ".")


def render_table1_text(report: Path | None) -> str:
    """The paragraph above Table 1: the headline, the direction of every pair, the size against the paper's."""
    t = read_report_csv(report, "consistency_table1.csv")
    if t is None:
        return not_run_note("consistency_table1.csv", "part `black2022`", stage="consistency")
    base = t[~t["sns"].astype(bool)]
    c, head = _commit(report), _sns_headline(t)
    parts = [f"In this run ({c}), {head}" if c else head[0].upper() + head[1:],
             _pairs_sentence(read_report_csv(report, "consistency_sns_pairs.csv")),
             _against_published(base), _rs_vs_loo(base), _residue(t)]
    return " ".join(p for p in parts if p) + "\n"


# ------------------------------------------------------------------------------------------------------- r²
def render_r2_text(report: Path | None) -> str:
    """The r² paragraph: cost against the paper's, without SNS, and the two quantities of Theorem 2."""
    r = read_report_csv(report, "consistency_r2.csv")
    if r is None:
        return not_run_note("consistency_r2.csv", "part `black2022`", stage="consistency")
    n, out = len(r), []
    if "pub_r2" in r and r["pub_r2"].notna().any():
        top = r.loc[r["pub_r2"].idxmax()]
        cap = float(top["pub_r2"])
        out.append(f"The paper's r² of invalidation on cost is at most {_r(cap)} ({top['dataset']}).")
        low, high = r[r["r2"].round(2) <= round(cap, 2)], r[r["r2"].round(2) > round(cap, 2)]
        if low.empty:
            out.append(f"Ours exceeds it on every dataset ({_span(r['r2'])}).")
        else:
            text = "Ours is at most that on " + _join([f"{d} ({_r(v)})" for d, v in low[["dataset", "r2"]].values])
            if len(high):
                text += f" and above it on {_join(list(high['dataset']))} ({_span(high['r2'])})"
            out.append(text + ".")
    else:
        high = r
        out.append(f"Our r² of invalidation on cost is {_span(r['r2'])}.")
    if "r2_without_sns" in r and r["r2_without_sns"].notna().any():
        text = f"Without the SNS rows it is {_span(r['r2_without_sns'].dropna())}"
        if len(high):
            k = int((high["r2_without_sns"] < high["r2"]).sum())
            text += (f"; leaving them out lowers it on {_of(k, len(high))} of the datasets where ours exceeds the "
                     "paper's" if "pub_r2" in r else f"; leaving them out lowers it on {_of(k, len(high))} datasets")
            pairs = read_report_csv(report, "consistency_sns_pairs.csv")
            if k == len(high) and pairs is not None and (pairs["cost_delta"] > 0).all():
                text += (f": SNS counterfactuals cost more than their base method's in every pair and are "
                         f"invalidated at a mean rate of {_r(pairs['iv_sns'].mean())} against "
                         f"{_r(pairs['iv_base'].mean())}, so pooling them with the others makes cost look "
                         "predictive")
        out.append(text + ".")
    conf, lip = r["r2_confidence"], r["r2_log_lipschitz"]
    kc, kl = int((conf > r["r2"]).sum()), int((lip > r["r2"]).sum())
    kb = int(((conf > r["r2"]) & (lip > r["r2"])).sum())
    out.append(f"The two quantities of Theorem 2 give r² {_span(conf)} (the base model's confidence) and "
               f"{_span(lip)} (the log local Lipschitz estimate); confidence explains more of the invalidation "
               f"than cost on {_of(kc, n)} datasets, the Lipschitz estimate on {_of(kl, n)}, both on {_of(kb, n)}.")
    return " ".join(out) + "\n"


# ------------------------------------------------------------------------------------------- CT × consistency
def _settings(models: pd.DataFrame | None) -> str:
    if models is None or "part" not in models:
        return ""
    m = models[models["part"] == "ct"].dropna(subset=["n_rs"])
    if m.empty:
        return ""

    def nums(c: str) -> str:
        v = sorted({int(x) for x in m[c]})
        return str(v[0]) if len(v) == 1 else f"{v[0]}–{v[-1]}"
    return (f"{m['dataset'].nunique()} datasets, {m['seed'].nunique()} training seeds, {nums('n_rs')} RS and "
            f"{nums('n_loo')} LOO models per base model")


def _verdict(g: pd.DataFrame) -> str:
    worse = sum(int((g[f"delta_iv_{s}_lb"] > 0).sum()) for s in ("loo", "rs"))
    better = sum(int((g[f"delta_iv_{s}_ub"] < 0).sum()) for s in ("loo", "rs"))
    if worse and not better:
        return ("*No: counterfactual training does not make counterfactuals more consistent under retraining — "
                "without SNS it makes them less consistent.*")
    if better and not worse:
        return "*Yes: without SNS, counterfactual training makes counterfactuals more consistent under retraining.*"
    if better and worse:
        return "*Not one way: without SNS, CT's counterfactuals are more consistent in some cells, less in others.*"
    return "*No measurable difference: without SNS, no cell separates CT from BL.*"


def _cells(g: pd.DataFrame, src: str) -> tuple[int, int]:
    return int((g[f"delta_iv_{src}_lb"] > 0).sum()), int((g[f"delta_iv_{src}_ub"] < 0).sum())


def _cost_side(g: pd.DataFrame) -> tuple[str, bool]:
    out, mixed = [], False
    for meth, h in g.groupby("method", sort=False):
        cheap = list(h.loc[h["delta_cost_l2_ub"] < 0, "dataset"])
        dear = list(h.loc[h["delta_cost_l2_lb"] > 0, "dataset"])
        mixed |= bool(cheap) and bool(dear)
        out.append(f"{meth} counterfactuals of CT models are significantly cheaper than BL's on {_join(cheap)} "
                   f"and dearer on {_join(dear)}")
    return "; ".join(out), mixed


def render_answer_text(report: Path | None) -> str:
    """The CT × consistency answer in plain words, from ``consistency_ct_delta.csv`` and ``consistency_ct.csv``."""
    d = read_report_csv(report, "consistency_ct_delta.csv")
    if d is None:
        return not_run_note("consistency_ct_delta.csv", "part `ct`", stage="consistency")
    ct = read_report_csv(report, "consistency_ct.csv")
    sns = d["method"].str.endswith("+ SNS")
    plain, with_sns = d[~sns], d[sns]
    settings = _settings(read_report_csv(report, "consistency_models.csv"))
    c = _commit(report)
    head = "; ".join(x for x in (f"measured with {settings}" if settings else "", c) if x)
    out = ["**The answer, in plain words**" + (f" ({head})." if head else ".")
           + (" " + _verdict(plain) if len(plain) else "")]
    if len(plain):
        (wl, bl_), (wr, br) = _cells(plain, "loo"), _cells(plain, "rs")
        out.append(f"Without SNS, CT's counterfactuals were invalidated significantly more often than BL's in {wl} "
                   f"of {len(plain)} (dataset, method) cells under LOO and {wr} of {len(plain)} under RS, and "
                   f"significantly less often in {'none' if bl_ + br == 0 else f'{bl_} and {br}'}; the mean gap is "
                   f"{_d(plain['delta_iv_loo'].mean())} (LOO) and {_d(plain['delta_iv_rs'].mean())} (RS).")
        long = plain.melt(id_vars=["dataset", "method"], value_vars=["delta_iv_loo", "delta_iv_rs"]).dropna()
        lb = plain.melt(id_vars=["dataset", "method"], value_vars=["delta_iv_loo_lb", "delta_iv_rs_lb"])["value"]
        ub = plain.melt(id_vars=["dataset", "method"], value_vars=["delta_iv_loo_ub", "delta_iv_rs_ub"])["value"]
        sig = long[((lb > 0) | (ub < 0)).loc[long.index]]
        w = (sig if len(sig) else long).loc[(sig if len(sig) else long)["value"].abs().idxmax()]
        r = plain[(plain["dataset"] == w["dataset"]) & (plain["method"] == w["method"])].iloc[0]
        src = w["variable"].removeprefix("delta_iv_")
        kind = "significant " if len(sig) else ""
        out.append(f"The largest {kind}gap is on {w['dataset']}: the mean {src.upper()} invalidation rate of "
                   f"{w['method']}'s counterfactuals is {_r(abs(w['value']))} "
                   f"{'higher' if w['value'] > 0 else 'lower'} for CT than for BL (CT − BL "
                   f"{_ci(r, w['variable'])}).")
    if len(with_sns):
        sig = [f"{r['method']} on {r['dataset']} under {s.upper()} ({_ci(r, f'delta_iv_{s}')})"
               for _, r in with_sns.iterrows() for s in ("loo", "rs")
               if r[f"delta_iv_{s}_lb"] > 0 or r[f"delta_iv_{s}_ub"] < 0]
        n = 2 * len(with_sns)
        text = (f"With SNS, CT and BL differ significantly in {len(sig)} of {n} (dataset, method, source) cells"
                + (f": {_join(sig)}" if sig else ""))
        if ct is not None:
            s = ct[ct["method"].str.endswith("+ SNS")]
            top = {k: _r(s[s["model"] == k][["iv_loo", "iv_rs"]].max().max()) for k in ("CT", "BL")}
            text += f"; the mean invalidation rate with SNS is at most {top['CT']} for CT and {top['BL']} for BL"
        out.append(text + ".")
        if ct is not None:
            out.append(_sns_price(ct))
        sides, mixed = _cost_side(with_sns)
        out.append(f"Against BL, {sides}" + (" — the price is not systematically higher or lower for CT."
                                            if mixed else "."))
    return " ".join(o for o in out if o) + "\n"


def _sns_price(ct: pd.DataFrame) -> str:
    """How often SNS counterfactuals lie further from their factuals than their base method's."""
    k = n = 0
    for _, r in ct[ct["method"].str.endswith("+ SNS")].iterrows():
        b = ct[(ct["dataset"] == r["dataset"]) & (ct["model"] == r["model"])
               & (ct["method"] == r["method"].removesuffix(" + SNS"))]
        if len(b):
            n, k = n + 1, k + int(r["cost_l2"] > b.iloc[0]["cost_l2"])
    if not n:
        return ""
    return (f"The price is the one Black et al. report: SNS counterfactuals lie further from their factuals than "
            f"their base method's in {_of(k, n)} (dataset, method, model) cells." if k == n else
            f"SNS counterfactuals lie further from their factuals than their base method's in {k} of {n} "
            "(dataset, method, model) cells.")


# --------------------------------------------------------------------------------------------------- compute
def render_compute_text(report: Path | None) -> str:
    """CPU seconds per part from ``consistency_models.csv`` (one row per job and model: a job is counted once)."""
    m = read_report_csv(report, "consistency_models.csv")
    if m is None:
        return not_run_note("consistency_models.csv", "stage `consistency`", stage="consistency")
    jobs = m.dropna(subset=["cpu_total_s"]).drop_duplicates(["part", "dataset", "seed"])
    out, total = [], {}
    for part, g in jobs.groupby("part", sort=False):
        total[part] = float(g["cpu_total_s"].sum())
        per = g.groupby("dataset", sort=False)["cpu_total_s"]
        top = per.sum().idxmax()
        big = g[g["dataset"] == top]
        r = m[(m["part"] == part) & (m["dataset"] == top)].iloc[0]
        one = m[(m["part"] == part) & (m["dataset"] == top) & (m["seed"] == r["seed"])]
        models = int((1 + one["n_rs"] + one["n_loo"]).sum()) if one["n_rs"].notna().all() else None
        what = f"{top}, {models} models per job" if models else top
        secs = f"{big['cpu_total_s'].iloc[0]:,.0f} s" if len(big) == 1 else \
            f"{big['cpu_total_s'].min():,.0f}–{big['cpu_total_s'].max():,.0f} s per seed"
        out.append(f"part `{part}` {total[part]:,.0f} CPU-s ({total[part] / 60:.0f} CPU-min; {what}: {secs})")
    failed = int(m["failed"].fillna(0).sum()) if "failed" in m else 0
    text = (f"CPU time per part: {'; '.join(out)}; "
            + ("no retrained model failed." if failed == 0 else f"{failed} retrained models failed (diverged)."))
    if "black2022" in total:
        met = total["black2022"] <= 60 * TARGET_CPU_MIN
        text += (f" The design's target of {TARGET_CPU_MIN} CPU-minutes for Black et al.'s part is "
                 f"{'met' if met else 'not met'}")
        text += f"; the whole stage took {sum(total.values()) / 60:.0f} CPU-minutes." if len(total) > 1 else "."
    return text + "\n"


def pages(report: Path | None) -> dict[str, str]:
    """Include name → Markdown, added to :func:`..book.consistency_pages.pages`."""
    return {"consistency_table1_text": render_table1_text(report), "consistency_r2_text": render_r2_text(report),
            "consistency_answer_text": render_answer_text(report),
            "consistency_compute_text": render_compute_text(report)}


__all__ = ["RESIDUE", "SIZE_TOL", "TARGET_CPU_MIN", "pages", "render_answer_text", "render_compute_text",
           "render_r2_text", "render_table1_text"]
