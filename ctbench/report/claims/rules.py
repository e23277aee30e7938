"""The verdict rules of the claims ledger, one function per rule of ``claims.yaml``'s header.

Every rule is a deterministic function of one report table and one published version:
``rule(claim, table, version) -> {ours, interval, verdict, note}``. A missing row or value raises :class:`Missing`
(→ ``not yet run``); a rule over several items that judges the items present also returns ``missing``, the items it
lacked (so a per-seed judgement can tell a seed without a dataset's model from a failing one); a row that is
there but withheld with its reason (a ``flag`` "not computable: …"), or a comparison whose two sides the run did
not separate (``must_differ``), raises :class:`NotComputable` (→ ``not computable``). Two principles hold for every
rule: a claim whose sign is opposite to the paper's is never reproduced, and a claim whose significance differs from
the paper's (in either direction) is at most ``partly``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..common import truthy
from .schema import NOT_REPRODUCED, PARTLY, REPRODUCED, VERSIONS, Claim, ClaimsError

_OPS: dict[str, Callable[[float, float], bool]] = {">": operator.gt, ">=": operator.ge, "<": operator.lt,
                                                   "<=": operator.le}
#: a value verdict that uses more than this share of its tolerance says so in its note ("at the edge"): a pass by a
#: hair is still a pass, but the reader sees how close it came
EDGE_SHARE = 0.8
#: ``must_differ``: values this close (relative) are one measurement, not two (members of one population read its
#: wall time a few microseconds apart)
SAME_RTOL = 1e-5
#: magnitude tolerance of a Table-1 cell: 2 × the published ±, at least 5 and at most 20 percentage points; a
#: version whose table prints no ± (the March 2025 preprint) gets ``no_pm`` percentage points
CELL_TOLERANCE = {"factor": 2.0, "floor": 5.0, "cap": 20.0, "no_pm": 10.0}


class Missing(Exception):
    """The report lacks what a claim needs (→ ``not yet run``)."""


class NotComputable(Missing):
    """The experiment ran, but the value the claim needs is withheld, for the reason given (→ ``not computable``)."""


def _withheld(df: pd.DataFrame, selects: list[dict | None]) -> str | None:
    """The reason a selected row's value is withheld (its ``flag`` starting "not computable"), else None."""
    if "flag" not in df.columns:
        return None
    try:
        found = rows(df, *selects)
    except Missing:
        return None
    for f in found["flag"]:
        if isinstance(f, str) and f.strip().startswith("not computable"):
            return f.strip()
    return None


def _match(series: pd.Series, value: Any) -> pd.Series:
    values = value if isinstance(value, list) else [value]
    if pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series):
        try:
            return series.isin([float(v) for v in values])
        except (TypeError, ValueError):
            pass
    return series.astype(str).isin([str(v) for v in values])


def rows(df: pd.DataFrame, *selects: dict[str, Any] | None) -> pd.DataFrame:
    mask = pd.Series(True, index=df.index)
    for sel in selects:
        for col, val in (sel or {}).items():
            if col not in df.columns:
                raise Missing(f"column {col!r} not in file")
            mask &= _match(df[col], val)
    return df[mask]


def _agg(values: pd.Series, how: str | None, what: str) -> float:
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        raise Missing(f"no value for {what}")
    if how == "range":
        return float(values.max() - values.min())
    if how is None:
        if len(values) > 1:
            raise ClaimsError(f"claims: {what}: {len(values)} rows match; narrow 'select' or set 'agg'")
        return float(values.iloc[0])
    return float(getattr(values, how)())


def _value(df: pd.DataFrame, column: str, selects: list[dict | None], how: str | None, what: str) -> float:
    if column not in df.columns:
        raise Missing(f"column {column!r} not in file")
    return _agg(rows(df, *selects)[column], how, what)


def _items(claim: Claim) -> list[tuple[str, dict[str, Any] | None]]:
    over = claim.spec.get("over")
    if not over:
        return [("", None)]
    col, values = next(iter(over.items()))
    return [(str(v), {col: v}) for v in values]


def within(ours: float, pub: float, tol: dict[str, float]) -> bool:
    if "abs" in tol:
        return abs(ours - pub) <= tol["abs"]
    return abs(ours - pub) <= tol["rel"] * abs(pub)


def _tol_width(pub: float, tol: dict[str, float]) -> float:
    return float(tol["abs"]) if "abs" in tol else float(tol["rel"]) * abs(pub)


def tol_text(tol: dict[str, float] | None) -> str:
    if not tol:
        return ""
    return f"±{tol['abs']:g} abs" if "abs" in tol else f"±{100 * tol['rel']:g}% rel"


def fmt(v: Any, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return ""
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | float | np.number):
        return f"{float(v):.{digits}f}"
    return str(v)


def _sign(v: float) -> int:
    return 0 if v == 0 else int(math.copysign(1, v))


def _cap(verdict: str, limit: str) -> str:
    order = (NOT_REPRODUCED, PARTLY, REPRODUCED)
    return order[min(order.index(verdict), order.index(limit))]


# --------------------------------------------------------------------------------------------------- rules


def rule_value(claim: Claim, df: pd.DataFrame, version: str) -> dict[str, Any]:
    s = claim.spec
    col, tol = s["column"], s["tolerance"]
    pub = float(claim.for_version(version, "published"))
    want_sig = claim.for_version(version, "significant")
    values, present, missing, withheld, interval, sig = [], [], [], {}, "", None
    for label, item_sel in _items(claim):
        try:
            values.append(_value(df, col, [s.get("select"), item_sel], s.get("agg"), f"{claim.id} {label}".strip()))
            present.append(label)
        except Missing:
            reason = _withheld(df, [s.get("select"), item_sel])
            if reason:
                withheld[label] = reason
            else:
                missing.append(label)
            continue
        if "over" not in s:
            found = rows(df, s.get("select"))
            if s.get("interval"):
                iv = [found[c].iloc[0] if c in found.columns and len(found) else float("nan") for c in s["interval"]]
                interval = f"± {fmt(iv[0])}" if len(iv) == 1 else f"[{fmt(iv[0])}, {fmt(iv[1])}]"
                if any(isinstance(v, float) and math.isnan(v) for v in iv):
                    interval = ""
            scol = s.get("significance_column", "significant")
            if scol in found.columns and len(found):
                sig = truthy(found[scol].iloc[0])
    if not values:
        if withheld and not missing:
            raise NotComputable("; ".join(f"{k + ': ' if k else ''}{v}" for k, v in withheld.items()))
        raise Missing("no value in the report" + (f" for {', '.join(missing)}" if missing and missing[0] else ""))
    if missing or withheld:  # an aggregate over a subset is not the paper's aggregate
        part = float(getattr(pd.Series(values), s["agg_over"])())
        n = len(values) + len(missing) + len(withheld)
        why = ([f"not yet run: {', '.join(missing)}"] if missing else []) + [
            f"{k} {v}" for k, v in withheld.items()]
        msg = (f"an aggregate over all {n} items; {'; '.join(why)} "
               f"({s['agg_over']} over the {len(values)} present: {part:.2f})")
        raise (Missing if missing else NotComputable)(msg)
    ours = float(getattr(pd.Series(values), s["agg_over"])()) if "agg_over" in s else values[0]
    notes = []
    partly_tol = s.get("partly_tolerance")
    sign_free = partly_tol is not None or bool(s.get("sign_free")) or pub == 0
    if within(ours, pub, tol) and (sign_free or _sign(ours) == _sign(pub)):
        verdict = REPRODUCED
        notes.append(f"within {tol_text(tol)} of the published value")
        used = abs(ours - pub) / _tol_width(pub, tol) if _tol_width(pub, tol) else 0.0
        if used > EDGE_SHARE:
            notes.append(f"at the edge of the tolerance: off by {ours - pub:+.2f}, {100 * used:.0f}% of "
                         f"{tol_text(tol)}")
    elif partly_tol is not None:
        verdict = PARTLY if within(ours, pub, partly_tol) else NOT_REPRODUCED
        notes.append(f"off by {ours - pub:+.2f}: outside {tol_text(tol)}, "
                     f"{'within' if verdict == PARTLY else 'outside'} {tol_text(partly_tol)} (partly band)")
    elif pub != 0 and _sign(ours) == _sign(pub):
        verdict = PARTLY
        notes.append(f"same sign, magnitude off by {ours - pub:+.2f} (tolerance {tol_text(tol)})")
    else:
        verdict = NOT_REPRODUCED
        notes.append(f"off by {ours - pub:+.2f}" + (", opposite sign" if pub != 0 else "") +
                     f" (tolerance {tol_text(tol)})")
    if want_sig is not None and sig is not None and bool(want_sig) != sig:
        verdict = _cap(verdict, PARTLY)
        notes.append("the paper reports a significant effect, ours is not significant" if want_sig
                     else "ours is significant, the paper's is not")
    if "agg_over" in s:
        verdict = _item_check(claim, version, dict(zip(present, values, strict=True)), verdict, notes)
    return {"ours": fmt(ours), "interval": interval, "verdict": verdict, "note": "; ".join(notes)}


def item_published(claim: Claim, version: str) -> dict[str, float]:
    """The published value of each item of an aggregate claim in ``version`` ({} when the claim gives none)."""
    spec = claim.spec.get("item_published")
    if spec is None:
        return {}
    if spec == "table1":
        metric = claim.spec["select"]["metric"]
        out = {}
        for label, _ in _items(claim):
            cell = published_cell(version, label, metric)
            if cell is not None and np.isfinite(cell["reduction_pct"]):
                out[label] = cell["reduction_pct"]
        return out
    m = spec.get(version, {}) if set(spec) <= set(VERSIONS) else spec
    return {str(k): float(v) for k, v in m.items()}


def _item_check(claim: Claim, version: str, ours: dict[str, float], verdict: str, notes: list[str]) -> str:
    """An aggregate shows its items: each item next to its published value, and an item whose sign is opposite to
    the published one by more than ``item_tolerance`` (default: the claim's tolerance) is a per-item contradiction
    of the claim, which caps the verdict at partly."""
    pub = item_published(claim, version)
    if not pub:
        notes.append("per item: " + ", ".join(f"{k} {v:.2f}" for k, v in ours.items()))
        return verdict
    tol = claim.spec.get("item_tolerance", claim.spec["tolerance"])
    shown, contra, far = [], [], []
    for k, v in ours.items():
        if k not in pub:
            shown.append(f"{k} {v:.2f}")
            continue
        p = pub[k]
        shown.append(f"{k} {v:.2f} ({p:.2f})")
        if p != 0 and _sign(v) != _sign(p) and not within(v, p, tol):
            contra.append(f"{k} {v:+.2f} vs {p:+.2f}")
        elif not within(v, p, tol):
            far.append(f"{k} {v - p:+.2f}")
    notes.append("per item, ours (published): " + ", ".join(shown))
    if far:  # a magnitude off on one item does not contradict a claim about the aggregate, but the reader sees it
        notes.append(f"items beyond {tol_text(tol)} of their published value, same sign: {', '.join(far)}")
    if contra:
        notes.append(f"per-item contradiction (opposite sign, beyond {tol_text(tol)}): {', '.join(contra)}")
        return _cap(verdict, PARTLY)
    return verdict


def rule_no_effect(claim: Claim, df: pd.DataFrame, version: str) -> dict[str, Any]:
    s = claim.spec
    col, tol, scol = s["column"], s["tolerance"], s.get("significance_column", "significant")
    held, near, failed, missing, shown = [], [], [], [], []
    for label, item_sel in _items(claim):
        try:
            v = _value(df, col, [s.get("select"), item_sel], None, f"{claim.id} {label}")
        except Missing:
            missing.append(label)
            continue
        found = rows(df, s.get("select"), item_sel)
        sig = truthy(found[scol].iloc[0]) if scol in found.columns else None
        shown.append(f"{label} {v:.2f}{'*' if sig else ''}")
        small = within(v, 0.0, {"abs": tol["abs"]} if "abs" in tol else {"abs": 0.0})
        (held if sig is False or (sig is None and small) else near if small else failed).append(label)
    if not shown:
        raise Missing("no value in the report")
    verdict = NOT_REPRODUCED if failed else PARTLY if near or missing else REPRODUCED
    notes = [f"not significant: {', '.join(held) or '-'}"]
    if near:
        notes.append(f"significant but within {tol_text(tol)} of 0: {', '.join(near)}")
    if failed:
        notes.append(f"significant effect beyond {tol_text(tol)}: {', '.join(failed)}")
    if missing:
        notes.append(f"not yet run: {', '.join(missing)}")
    return {"ours": "; ".join(shown), "interval": "", "verdict": verdict, "note": "; ".join(notes),
            "missing": missing}


def holds(left: float, right: float, op: str, margin: float) -> bool:
    if op == "==":
        return abs(left - right) <= margin
    if op in (">", ">="):
        return _OPS[op](left, right + margin)
    return _OPS[op](left, right - margin)


def _side(df: pd.DataFrame, side: dict[str, Any], selects: list[dict | None], what: str) -> float:
    v = float(side["value"]) if "value" in side else _value(df, side["column"], [*selects, side.get("select")],
                                                            side.get("agg"), what)
    return v * float(side.get("scale", 1.0))


def _not_separated(df: pd.DataFrame, claim: Claim, item_sel: dict | None) -> bool:
    """True when the left and right rows of an item agree in every ``must_differ`` column (to :data:`SAME_RTOL`):
    the run did not separate the two sides (a parameter it ignored, models that share one timing), so the item
    tests nothing."""
    s = claim.spec
    cols = s.get("must_differ")
    if not cols:
        return False
    sides = [rows(df, s.get("select"), item_sel, s[k].get("select")) for k in ("left", "right")]
    for c in cols:
        if c not in df.columns:
            raise Missing(f"column {c!r} not in file")
        a, b = (np.sort(pd.to_numeric(d[c], errors="coerce").to_numpy(dtype=float)) for d in sides)
        if len(a) != len(b) or not np.allclose(a, b, rtol=SAME_RTOL, atol=0.0, equal_nan=True):
            return False
    return True


def rule_relation(claim: Claim, df: pd.DataFrame, version: str) -> dict[str, Any]:
    """``left op right`` on each item; on the items of ``except`` the claim itself says the relation does not hold
    ("all datasets but GMSC"), so there it must not hold: an exception that goes the other way caps the verdict at
    partly, as a share rule would otherwise let any one item fail. An item whose two sides the run did not
    separate (``must_differ``) is left out; with none left the claim is not computable. ``upper`` (a side, with
    ``op`` '>' or '>='): the claim states a range ("2-3x"), so an item whose left side exceeds it holds in
    direction only, which caps the verdict at partly."""
    s = claim.spec
    op, margin, share = s["op"], float(s.get("tolerance", {}).get("abs", 0.0)), float(s.get("min_share", 1.0))
    left, right = s["left"], s["right"]
    exceptions = {str(x) for x in s.get("except", [])}
    held, failed, missing, shown, exc_ok, exc_bad, same, above = [], [], [], [], [], [], [], []
    for label, item_sel in _items(claim):
        try:
            lv = _side(df, left, [s.get("select"), item_sel], f"{claim.id} {label} left")
            rv = _side(df, right, [s.get("select"), item_sel], f"{claim.id} {label} right")
        except Missing:
            missing.append(label)
            continue
        if _not_separated(df, claim, item_sel):
            same.append(label)
            continue
        ok = holds(lv, rv, op, margin)
        if ok and "upper" in s:
            uv = _side(df, s["upper"], [s.get("select"), item_sel], f"{claim.id} {label} upper")
            if lv > uv:
                above.append(f"{label + ' ' if label else ''}{lv:.3g} > {uv:.3g}")
        star = ""
        if s.get("significant"):  # the relation must also be significant on the item
            sig = truthy(rows(df, s.get("select"), item_sel, left.get("select")).get(
                "significant", pd.Series([None])).iloc[0])
            ok = ok and sig is True
            star = "*" if sig else " (n.s.)"
        shown.append(f"{label + ' ' if label else ''}{lv:.3g}{star} vs {rv:.3g}")
        if label in exceptions:
            (exc_bad if ok else exc_ok).append(label)
            continue
        (held if ok else failed).append(label)
    n_av = len(held) + len(failed)
    cols = ", ".join(s.get("must_differ", []))
    if n_av == 0 and same:
        raise NotComputable(f"the two sides are identical in {cols} on {', '.join(same) or 'the item'}: the run did "
                            "not separate them, so it cannot test the claim")
    if n_av == 0:
        raise Missing("no value in the report")
    frac = len(held) / n_av
    verdict = REPRODUCED if frac >= share and not missing else PARTLY if held else NOT_REPRODUCED
    rel = f"left {op} right" + (f" with margin {margin:g}" if margin else "") + \
        (" and significant" if s.get("significant") else "")
    notes = [f"{rel} holds on {len(held)} of {n_av} ({', '.join(held) or '-'}); needs a share >= {share:.2f}"]
    if exceptions:
        if exc_bad:
            verdict = _cap(verdict, PARTLY)
            notes.append(f"the claim's exception {', '.join(exc_bad)} goes the other way in ours (the relation "
                         "holds there too)")
        if exc_ok:
            notes.append(f"the claim's exception {', '.join(exc_ok)} is an exception in ours too")
    if above:
        verdict = _cap(verdict, PARTLY)
        notes.append(f"beyond the stated range's upper end (left > upper): {', '.join(above)}")
    if same:
        verdict = _cap(verdict, PARTLY)
        notes.append(f"not separated by the run (identical in {cols}), left out: {', '.join(same)}")
    if missing:
        notes.append(f"not yet run: {', '.join(missing)}")
    return {"ours": "; ".join(shown), "interval": "", "verdict": verdict, "note": "; ".join(notes),
            "missing": missing}


def rule_most_often(claim: Claim, df: pd.DataFrame, version: str) -> dict[str, Any]:
    s = claim.spec
    cand, col, op, thr = s["candidates"], s["column"], s.get("op", ">"), float(s.get("threshold", 0.0))
    for c in [*s["group"], cand, col]:
        if c not in df.columns:
            raise Missing(f"column {c!r} not in file")
    d = rows(df, s.get("select"))
    d = d[~d[cand].astype(str).isin([str(x) for x in s.get("exclude", [])])]
    d = d.assign(_v=pd.to_numeric(d[col], errors="coerce")).dropna(subset=["_v"])
    if d.empty:
        raise Missing("no rows")
    d["_ok"] = [holds(v, thr, op, 0.0) for v in d["_v"]]
    counts = d.groupby(cand)["_ok"].sum().astype(int).sort_values(ascending=False, kind="stable")
    n_groups = d.groupby(s["group"]).ngroups
    top = counts.max()
    winners = sorted(str(k) for k, v in counts.items() if v == top)
    expected = str(s["expected"])
    verdict = REPRODUCED if winners == [expected] else PARTLY if expected in winners else NOT_REPRODUCED
    shown = ", ".join(f"{k} {v}/{n_groups}" for k, v in counts.items())
    note = f"cells with {col} {op} {thr:g} per {cand}; most often: {', '.join(winners)}"
    return {"ours": shown, "interval": "", "verdict": verdict, "note": note}


def rule_which(claim: Claim, df: pd.DataFrame, version: str) -> dict[str, Any]:
    """The items on which ``column op threshold`` holds (and is significant, with ``significant: true``) must be
    exactly ``expected``: e.g. "only on Cred do the costs increase significantly"."""
    s = claim.spec
    op, thr = s.get("op", ">"), float(s.get("threshold", 0.0))
    expected = set(claim.for_version(version, "expected"))
    found, missing, shown = set(), [], []
    for label, item_sel in _items(claim):
        try:
            v = _value(df, s["column"], [s.get("select"), item_sel], None, f"{claim.id} {label}")
        except Missing:
            missing.append(label)
            continue
        sig = truthy(rows(df, s.get("select"), item_sel).get("significant", pd.Series([None])).iloc[0])
        ok = holds(v, thr, op, 0.0) and (sig is True or not s.get("significant"))
        if ok:
            found.add(label)
        shown.append(f"{label} {v:.2f}{'*' if sig else ''}")
    if not shown:
        raise Missing("no value in the report")
    if found == expected:
        verdict = PARTLY if missing else REPRODUCED
    else:
        verdict = PARTLY if found & expected else NOT_REPRODUCED
    cond = f"{s['column']} {op} {thr:g}" + (" and significant" if s.get("significant") else "")
    notes = [f"{cond} on: {', '.join(sorted(found)) or 'none'}; the paper: {', '.join(sorted(expected)) or 'none'}"]
    if missing:
        notes.append(f"not yet run: {', '.join(missing)}")
    return {"ours": "; ".join(shown), "interval": "", "verdict": verdict, "note": "; ".join(notes),
            "missing": missing}


@lru_cache(maxsize=4)
def _published_cells(published_dir: str) -> pd.DataFrame:
    from ..tables.table1 import published_versions

    return published_versions(published_dir).set_index(["version", "dataset", "metric"])


def published_cell(version: str, dataset: str, metric: str, published_dir: str | Path | None = None) -> dict | None:
    """The published reduction, ± and star of one Table-1 cell in one version (None when that version has none)."""
    from ..tables.table1 import PUBLISHED_DIR

    cells = _published_cells(str(published_dir or PUBLISHED_DIR))
    key = (version, dataset, metric)
    if key not in cells.index:
        return None
    r = cells.loc[key]
    return {"reduction_pct": float(r["reduction_pct"]), "pm": float(r["pm"]), "significant": r["significant"]}


def cell_tolerance(pub_pm: float) -> float:
    t = CELL_TOLERANCE
    if not np.isfinite(pub_pm):
        return t["no_pm"]
    return min(max(t["factor"] * pub_pm, t["floor"]), t["cap"])


def rule_cell(claim: Claim, df: pd.DataFrame, version: str) -> dict[str, Any] | None:
    """One Table-1 cell against one version: sign and significance must agree (the paper's recipe), the magnitude
    lie within :func:`cell_tolerance`, the seed-level interval not contradict the star, and the cell rest on enough
    valid counterfactuals; else partly (same sign) or not reproduced (opposite sign, or not computable)."""
    from ..tables.table1 import AGREE, DISAGREE, agreement

    ds, metric = claim.spec["dataset"], claim.spec["metric"]
    pub = published_cell(version, ds, metric)
    if pub is None:
        return None
    found = rows(df, {"dataset": ds, "metric": metric})
    if found.empty:
        raise Missing(f"no row for {ds} {metric}")
    r = found.iloc[0]
    flag = str(r.get("flag", "") or "")
    flag = "" if flag == "nan" else flag
    ours, sig = r.get("reduction_pct"), truthy(r.get("significant"))
    shown = f"{pub['reduction_pct']:.2f}{'*' if truthy(pub['significant']) else ''}"
    if ours is None or pd.isna(ours):
        if flag:
            return {"ours": "", "interval": "", "verdict": NOT_REPRODUCED, "note": flag, "published": shown}
        raise Missing(f"no value for {ds} {metric}")
    ours = float(ours)
    pub_sig = pub["significant"]
    cat = agreement(ours, pd.NA if sig is None else sig, pub["reduction_pct"], pub_sig)
    tol = cell_tolerance(pub["pm"])
    close = abs(ours - pub["reduction_pct"]) <= tol
    notes = [f"{cat} (ours {ours:.2f}{'*' if sig else ''} vs {pub['reduction_pct']:.2f}"
             f"{'*' if truthy(pub_sig) else ''}); magnitude {'within' if close else 'outside'} ±{tol:g}"
             + ("" if np.isfinite(pub["pm"]) else " (this version prints no ±: the fixed fallback)")]
    if cat == DISAGREE:
        verdict = NOT_REPRODUCED
    elif cat == AGREE or pd.isna(pub_sig):
        verdict = REPRODUCED if close else PARTLY
    else:
        verdict = PARTLY
    seed_sig = truthy(r.get("seed_significant"))
    if seed_sig is not None and not pd.isna(pub_sig):
        seed_ok = seed_sig == bool(pub_sig) and _sign(float(r["seed_mean"])) == _sign(pub["reduction_pct"])
        if not seed_ok:
            verdict = _cap(verdict, PARTLY)
            notes.append(f"over training seeds {fmt(r.get('seed_mean'))} [{fmt(r.get('seed_lb'))}, "
                         f"{fmt(r.get('seed_ub'))}] {'excludes' if seed_sig else 'includes'} 0, the paper's star "
                         f"says {'significant' if truthy(pub_sig) else 'not significant'}")
    if flag:
        verdict = _cap(verdict, PARTLY)
        notes.append(flag)
    interval = f"± {fmt(r.get('pm'))}"
    if pd.notna(r.get("seed_lb", np.nan)):
        interval += f"; seeds [{fmt(r.get('seed_lb'))}, {fmt(r.get('seed_ub'))}]"
    return {"ours": fmt(ours), "interval": interval, "verdict": verdict, "note": "; ".join(notes),
            "published": shown}


RULE_FUNCTIONS: dict[str, Callable[[Claim, pd.DataFrame, str], dict[str, Any] | None]] = {
    "value": rule_value, "no_effect": rule_no_effect, "relation": rule_relation, "most_often": rule_most_often,
    "which": rule_which, "cell": rule_cell}
