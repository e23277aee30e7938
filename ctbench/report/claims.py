"""The claims ledger: every claim of the paper, tested against the report outputs with a stated rule.

``claims.yaml`` (repository root) lists the claims; its header documents the schema and the verdict rules, which
this module implements. :func:`evaluate_claims` reads the report folder (``ctbench report`` outputs) and returns one
row per claim with the columns ``claim, text, source, published, ours, interval, verdict, note, file``;
:func:`write_verdicts` writes them to ``verdicts.csv`` (and ``verdicts.md``) in the report folder.

Verdicts are one of :data:`VERDICTS`. They are deterministic functions of the report files: no randomness, no
network, no training. A missing report file, a missing row or an empty value gives ``not yet run``, never an error;
a malformed claim entry raises :class:`ClaimsError` naming the claim and the field.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_YET_RUN = "reproduced", "partly", "not reproduced", "not yet run"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_YET_RUN)
RULES = ("value", "no_effect", "relation", "most_often")
OPS = (">", ">=", "<", "<=", "==")
AGGS = ("mean", "max", "min", "median", "sum")
COLUMNS = ["claim", "text", "source", "published", "ours", "interval", "verdict", "note", "file"]

#: dataset names of the evaluation outputs → the paper's labels (robustness.csv keeps our names)
DATASET_LABELS = {"lin_sep": "LS", "circles": "Circ", "moons": "Moon", "over": "OL", "adult": "Adult",
                  "california_housing": "CH", "credit_default": "Cred", "gmsc": "GMSC", "mnist": "MNIST"}

_REQUIRED = {"id", "text", "source", "rule", "file", "published"}
_ALLOWED = {
    "value": _REQUIRED | {"select", "over", "column", "agg", "agg_over", "tolerance", "partly_tolerance", "interval",
                          "significant", "significance_column", "note"},
    "no_effect": _REQUIRED | {"select", "over", "column", "tolerance", "significance_column", "interval", "note"},
    "relation": _REQUIRED | {"select", "over", "left", "right", "op", "tolerance", "min_share", "note"},
    "most_often": _REQUIRED | {"select", "group", "candidates", "column", "op", "threshold", "expected", "exclude",
                               "note"},
}


class ClaimsError(ValueError):
    """A malformed entry in the claims file (the message names the claim and the field)."""


@dataclass(frozen=True)
class Claim:
    """One validated entry of ``claims.yaml`` (``spec`` holds the rule-specific fields)."""

    id: str
    text: str
    source: str
    rule: str
    file: str
    published: Any
    spec: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------- loading


def _fail(where: str, msg: str) -> ClaimsError:
    return ClaimsError(f"claims: {where}: {msg}")


def _check_tolerance(where: str, tol: Any, name: str = "tolerance") -> None:
    if not isinstance(tol, dict) or len(tol) != 1 or next(iter(tol)) not in ("abs", "rel"):
        raise _fail(where, f"{name} must be a mapping with exactly one key 'abs' or 'rel', got {tol!r}")
    v = next(iter(tol.values()))
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
        raise _fail(where, f"{name} value must be a number >= 0, got {v!r}")


def _check_select(where: str, sel: Any, name: str = "select") -> None:
    if sel is None:
        return
    if not isinstance(sel, dict) or not all(isinstance(k, str) for k in sel):
        raise _fail(where, f"{name} must be a mapping column -> value (or list of values), got {sel!r}")


def _check_side(where: str, side: Any, name: str) -> None:
    if not isinstance(side, dict) or not ({"column", "value"} & set(side)):
        raise _fail(where, f"{name} must be a mapping with 'column' (and optional 'select', 'agg') or 'value'")
    unknown = set(side) - {"column", "select", "agg", "value"}
    if unknown:
        raise _fail(where, f"{name}: unknown key(s) {sorted(unknown)}")
    _check_select(where, side.get("select"), f"{name}.select")
    if "agg" in side and side["agg"] not in AGGS:
        raise _fail(where, f"{name}.agg must be one of {AGGS}, got {side['agg']!r}")
    if "value" in side and (isinstance(side["value"], bool) or not isinstance(side["value"], int | float)):
        raise _fail(where, f"{name}.value must be a number, got {side['value']!r}")


def validate_claim(entry: Any, index: int = 0) -> Claim:
    """Check one raw entry against the schema of the claims file's header and return it as a :class:`Claim`."""
    if not isinstance(entry, dict):
        raise _fail(f"entry {index}", f"must be a mapping, got {type(entry).__name__}")
    cid = entry.get("id")
    where = f"claim {cid!r} (entry {index})" if cid else f"entry {index}"
    missing = sorted(_REQUIRED - set(entry))
    if missing:
        raise _fail(where, f"missing required field(s) {missing}")
    if not isinstance(cid, str) or not cid.replace("_", "").replace("-", "").isalnum():
        raise _fail(where, "id must be a string of letters, digits, '_' or '-'")
    for key in ("text", "source", "file"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise _fail(where, f"{key} must be a non-empty string")
    rule = entry["rule"]
    if rule not in RULES:
        raise _fail(where, f"rule must be one of {RULES}, got {rule!r}")
    unknown = sorted(set(entry) - _ALLOWED[rule])
    if unknown:
        raise _fail(where, f"unknown field(s) {unknown} for rule {rule!r}; allowed: {sorted(_ALLOWED[rule])}")
    _check_select(where, entry.get("select"))
    over = entry.get("over")
    if over is not None and (not isinstance(over, dict) or len(over) != 1
                             or not isinstance(next(iter(over.values())), list) or not next(iter(over.values()))):
        raise _fail(where, f"over must be a mapping with one column -> non-empty list of values, got {over!r}")
    if "tolerance" in entry:
        _check_tolerance(where, entry["tolerance"])
    if "partly_tolerance" in entry:
        _check_tolerance(where, entry["partly_tolerance"], "partly_tolerance")
    if rule in ("value", "no_effect"):
        if not isinstance(entry.get("column"), str):
            raise _fail(where, f"rule {rule!r} needs 'column' (the value column)")
        if "tolerance" not in entry:
            raise _fail(where, f"rule {rule!r} needs 'tolerance' ({{abs: x}} or {{rel: x}})")
        if rule == "no_effect" and over is None:
            raise _fail(where, "rule 'no_effect' needs 'over' (the datasets that show no effect)")
        if rule == "value":
            pub = entry["published"]
            if isinstance(pub, bool) or not isinstance(pub, int | float):
                raise _fail(where, f"rule 'value' needs a numeric 'published', got {pub!r}")
            if "agg" in entry and entry["agg"] not in AGGS:
                raise _fail(where, f"agg must be one of {AGGS}")
            if "agg_over" in entry:
                if entry["agg_over"] not in AGGS:
                    raise _fail(where, f"agg_over must be one of {AGGS}")
                if over is None:
                    raise _fail(where, "agg_over needs 'over'")
            elif over is not None:
                raise _fail(where, "rule 'value' with 'over' needs 'agg_over' (how to combine the items)")
        if "interval" in entry:
            iv = entry["interval"]
            if not isinstance(iv, list) or len(iv) not in (1, 2) or not all(isinstance(c, str) for c in iv):
                raise _fail(where, "interval must be a list of one column (±) or two columns ([lb, ub])")
    elif rule == "relation":
        for side in ("left", "right"):
            if side not in entry:
                raise _fail(where, f"rule 'relation' needs '{side}'")
            _check_side(where, entry[side], side)
        if "column" not in entry["left"]:
            raise _fail(where, "left needs 'column'")
        if entry.get("op") not in OPS:
            raise _fail(where, f"op must be one of {OPS}, got {entry.get('op')!r}")
        if "tolerance" in entry and "abs" not in entry["tolerance"]:
            raise _fail(where, "rule 'relation' takes an absolute tolerance (the margin), {abs: x}")
        share = entry.get("min_share", 1.0)
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise _fail(where, f"min_share must be a number in (0, 1], got {share!r}")
    elif rule == "most_often":
        for key in ("group", "candidates", "column", "expected"):
            if key not in entry:
                raise _fail(where, f"rule 'most_often' needs '{key}'")
        if not isinstance(entry["group"], list) or not all(isinstance(c, str) for c in entry["group"]):
            raise _fail(where, "group must be a list of column names")
        if entry.get("op", ">") not in OPS:
            raise _fail(where, f"op must be one of {OPS}")
    spec = {k: v for k, v in entry.items() if k not in _REQUIRED}
    return Claim(id=cid, text=entry["text"].strip(), source=entry["source"], rule=rule, file=entry["file"],
                 published=entry["published"], spec=spec)


def load_claims(path: str | Path) -> list[Claim]:
    """Read and validate a claims file; raises :class:`ClaimsError` on the first bad entry or a duplicate id."""
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ClaimsError(f"claims: {path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("claims"), list):
        raise ClaimsError(f"claims: {path}: expected a mapping with a 'claims' list")
    claims = [validate_claim(e, i) for i, e in enumerate(raw["claims"])]
    seen: set[str] = set()
    for c in claims:
        if c.id in seen:
            raise ClaimsError(f"claims: {path}: duplicate id {c.id!r}")
        seen.add(c.id)
    return claims


# --------------------------------------------------------------------------------------------------- selection


class _Missing(Exception):
    """The report lacks what a claim needs (→ ``not yet run``)."""


_OPS: dict[str, Callable[[float, float], bool]] = {">": operator.gt, ">=": operator.ge, "<": operator.lt,
                                                   "<=": operator.le}


def _read(report_dir: Path, name: str, cache: dict[str, pd.DataFrame | None]) -> pd.DataFrame | None:
    if name not in cache:
        p = report_dir / name
        df = pd.read_csv(p) if p.exists() and p.stat().st_size > 0 else None
        if df is not None and "dataset" in df.columns:
            df["dataset"] = df["dataset"].map(lambda d: DATASET_LABELS.get(d, d))
        cache[name] = df
    return cache[name]


def _match(series: pd.Series, value: Any) -> pd.Series:
    values = value if isinstance(value, list) else [value]
    if pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series):
        try:
            return series.isin([float(v) for v in values])
        except (TypeError, ValueError):
            pass
    return series.astype(str).isin([str(v) for v in values])


def _rows(df: pd.DataFrame, *selects: dict[str, Any] | None) -> pd.DataFrame:
    mask = pd.Series(True, index=df.index)
    for sel in selects:
        for col, val in (sel or {}).items():
            if col not in df.columns:
                raise _Missing(f"column {col!r} not in file")
            mask &= _match(df[col], val)
    return df[mask]


def _agg(values: pd.Series, how: str | None, what: str) -> float:
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        raise _Missing(f"no value for {what}")
    if how is None:
        if len(values) > 1:
            raise ClaimsError(f"claims: {what}: {len(values)} rows match; narrow 'select' or set 'agg'")
        return float(values.iloc[0])
    return float(getattr(values, how)())


def _value(df: pd.DataFrame, column: str, selects: list[dict | None], how: str | None, what: str) -> float:
    if column not in df.columns:
        raise _Missing(f"column {column!r} not in file")
    return _agg(_rows(df, *selects)[column], how, what)


def _items(claim: Claim) -> list[tuple[str, dict[str, Any] | None]]:
    over = claim.spec.get("over")
    if not over:
        return [("", None)]
    col, values = next(iter(over.items()))
    return [(str(v), {col: v}) for v in values]


def _within(ours: float, pub: float, tol: dict[str, float]) -> bool:
    if "abs" in tol:
        return abs(ours - pub) <= tol["abs"]
    return abs(ours - pub) <= tol["rel"] * abs(pub)


def _tol_text(tol: dict[str, float] | None) -> str:
    if not tol:
        return ""
    return f"±{tol['abs']:g} abs" if "abs" in tol else f"±{100 * tol['rel']:g}% rel"


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int | float):
        return f"{v:.{digits}f}"
    return str(v)


def _truthy(v: Any) -> bool | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes", "*")
    return bool(v)


# --------------------------------------------------------------------------------------------------- rules


def _rule_value(claim: Claim, df: pd.DataFrame) -> dict[str, Any]:
    s = claim.spec
    col, tol, pub = s["column"], s["tolerance"], float(claim.published)
    values, missing, interval, sig = [], [], "", None
    for label, item_sel in _items(claim):
        try:
            values.append(_value(df, col, [s.get("select"), item_sel], s.get("agg"), f"{claim.id} {label}".strip()))
        except _Missing:
            missing.append(label)
            continue
        if "over" not in s:
            rows = _rows(df, s.get("select"))
            if s.get("interval"):
                iv = [rows[c].iloc[0] if c in rows.columns and len(rows) else float("nan") for c in s["interval"]]
                interval = f"± {_fmt(iv[0])}" if len(iv) == 1 else f"[{_fmt(iv[0])}, {_fmt(iv[1])}]"
                if any(isinstance(v, float) and math.isnan(v) for v in iv):
                    interval = ""
            scol = s.get("significance_column", "significant")
            if scol in rows.columns and len(rows):
                sig = _truthy(rows[scol].iloc[0])
    if not values:
        raise _Missing("no value in the report" + (f" for {', '.join(missing)}" if missing[0] else ""))
    if missing:  # an aggregate over a subset is not the paper's aggregate
        part = float(getattr(pd.Series(values), s["agg_over"])())
        return {"ours": "", "interval": "", "verdict": NOT_YET_RUN,
                "note": f"an aggregate over all {len(values) + len(missing)} items; not yet run: {', '.join(missing)} "
                        f"({s['agg_over']} over the {len(values)} present: {part:.2f})"}
    ours = float(getattr(pd.Series(values), s["agg_over"])()) if "agg_over" in s else values[0]
    notes = []
    partly_tol = s.get("partly_tolerance")
    if _within(ours, pub, tol):
        verdict = REPRODUCED
        notes.append(f"within {_tol_text(tol)} of the published value")
    elif partly_tol is not None:
        verdict = PARTLY if _within(ours, pub, partly_tol) else NOT_REPRODUCED
        notes.append(f"off by {ours - pub:+.2f}: outside {_tol_text(tol)}, "
                     f"{'within' if verdict == PARTLY else 'outside'} {_tol_text(partly_tol)} (partly band)")
    elif pub != 0 and math.copysign(1, ours) == math.copysign(1, pub) and ours != 0:
        verdict = PARTLY
        notes.append(f"same sign, magnitude off by {ours - pub:+.2f} (tolerance {_tol_text(tol)})")
    else:
        verdict = NOT_REPRODUCED
        notes.append(f"off by {ours - pub:+.2f}" + (", opposite sign" if pub != 0 else "") +
                     f" (tolerance {_tol_text(tol)})")
    if s.get("significant") is True and sig is False:
        if verdict == REPRODUCED:
            verdict = PARTLY
        notes.append("the paper reports a significant effect, ours is not significant")
    if s.get("significant") is False and sig is True:
        notes.append("ours is significant, the paper's is not")
    return {"ours": _fmt(ours), "interval": interval, "verdict": verdict, "note": "; ".join(notes)}


def _rule_no_effect(claim: Claim, df: pd.DataFrame) -> dict[str, Any]:
    s = claim.spec
    col, tol, scol = s["column"], s["tolerance"], s.get("significance_column", "significant")
    held, near, failed, missing, shown = [], [], [], [], []
    for label, item_sel in _items(claim):
        try:
            v = _value(df, col, [s.get("select"), item_sel], None, f"{claim.id} {label}")
        except _Missing:
            missing.append(label)
            continue
        rows = _rows(df, s.get("select"), item_sel)
        sig = _truthy(rows[scol].iloc[0]) if scol in rows.columns else None
        shown.append(f"{label} {v:.2f}{'*' if sig else ''}")
        small = _within(v, 0.0, {"abs": tol["abs"]} if "abs" in tol else {"abs": 0.0})
        (held if sig is False or (sig is None and small) else near if small else failed).append(label)
    if not shown:
        raise _Missing("no value in the report")
    verdict = NOT_REPRODUCED if failed else PARTLY if near or missing else REPRODUCED
    notes = [f"not significant: {', '.join(held) or '-'}"]
    if near:
        notes.append(f"significant but within {_tol_text(tol)} of 0: {', '.join(near)}")
    if failed:
        notes.append(f"significant effect beyond {_tol_text(tol)}: {', '.join(failed)}")
    if missing:
        notes.append(f"not yet run: {', '.join(missing)}")
    return {"ours": "; ".join(shown), "interval": "", "verdict": verdict, "note": "; ".join(notes)}


def _holds(left: float, right: float, op: str, margin: float) -> bool:
    if op == "==":
        return abs(left - right) <= margin
    if op in (">", ">="):
        return _OPS[op](left, right + margin)
    return _OPS[op](left, right - margin)


def _rule_relation(claim: Claim, df: pd.DataFrame) -> dict[str, Any]:
    s = claim.spec
    op, margin, share = s["op"], float(s.get("tolerance", {}).get("abs", 0.0)), float(s.get("min_share", 1.0))
    left, right = s["left"], s["right"]
    held, failed, missing, shown = [], [], [], []
    for label, item_sel in _items(claim):
        try:
            lv = _value(df, left["column"], [s.get("select"), item_sel, left.get("select")], left.get("agg"),
                        f"{claim.id} {label} left")
            rv = float(right["value"]) if "value" in right else _value(
                df, right["column"], [s.get("select"), item_sel, right.get("select")], right.get("agg"),
                f"{claim.id} {label} right")
        except _Missing:
            missing.append(label)
            continue
        ok = _holds(lv, rv, op, margin)
        (held if ok else failed).append(label)
        shown.append(f"{label + ' ' if label else ''}{lv:.3g} vs {rv:.3g}")
    n_av = len(held) + len(failed)
    if n_av == 0:
        raise _Missing("no value in the report")
    frac = len(held) / n_av
    if frac >= share and not missing:
        verdict = REPRODUCED
    elif held:
        verdict = PARTLY
    else:
        verdict = NOT_REPRODUCED
    rel = f"left {op} right" + (f" with margin {margin:g}" if margin else "")
    notes = [f"{rel} holds on {len(held)} of {n_av} ({', '.join(held) or '-'}); needs a share >= {share:.2f}"]
    if missing:
        notes.append(f"not yet run: {', '.join(missing)}")
    return {"ours": "; ".join(shown), "interval": "", "verdict": verdict, "note": "; ".join(notes)}


def _rule_most_often(claim: Claim, df: pd.DataFrame) -> dict[str, Any]:
    s = claim.spec
    cand, col, op, thr = s["candidates"], s["column"], s.get("op", ">"), float(s.get("threshold", 0.0))
    for c in [*s["group"], cand, col]:
        if c not in df.columns:
            raise _Missing(f"column {c!r} not in file")
    d = _rows(df, s.get("select"))
    d = d[~d[cand].astype(str).isin([str(x) for x in s.get("exclude", [])])]
    d = d.assign(_v=pd.to_numeric(d[col], errors="coerce")).dropna(subset=["_v"])
    if d.empty:
        raise _Missing("no rows")
    d["_ok"] = [_holds(v, thr, op, 0.0) for v in d["_v"]]
    counts = d.groupby(cand)["_ok"].sum().astype(int).sort_values(ascending=False, kind="stable")
    n_groups = d.groupby(s["group"]).ngroups
    top = counts.max()
    winners = sorted(str(k) for k, v in counts.items() if v == top)
    expected = str(s["expected"])
    if winners == [expected]:
        verdict = REPRODUCED
    elif expected in winners:
        verdict = PARTLY
    else:
        verdict = NOT_REPRODUCED
    shown = ", ".join(f"{k} {v}/{n_groups}" for k, v in counts.items())
    note = f"cells with {col} {op} {thr:g} per {cand}; most often: {', '.join(winners)}"
    return {"ours": shown, "interval": "", "verdict": verdict, "note": note}


_RULES: dict[str, Callable[[Claim, pd.DataFrame], dict[str, Any]]] = {
    "value": _rule_value, "no_effect": _rule_no_effect, "relation": _rule_relation, "most_often": _rule_most_often}


def _published_text(claim: Claim) -> str:
    p = claim.published
    return _fmt(float(p)) if isinstance(p, int | float) and not isinstance(p, bool) else str(p)


def evaluate_claim(claim: Claim, report_dir: str | Path, cache: dict | None = None) -> dict[str, Any]:
    """The verdict row of one claim against the report folder."""
    cache = {} if cache is None else cache
    row = {"claim": claim.id, "text": claim.text, "source": claim.source, "published": _published_text(claim),
           "ours": "", "interval": "", "verdict": NOT_YET_RUN, "note": "", "file": claim.file}
    df = _read(Path(report_dir), claim.file, cache)
    if df is None:
        row["note"] = f"{claim.file} not in the report (experiment not run in this profile)"
        return row
    try:
        row.update(_RULES[claim.rule](claim, df))
    except _Missing as exc:
        row["note"] = f"{claim.file}: {exc}"
    extra = claim.spec.get("note")
    if extra:
        row["note"] = f"{row['note']}; {extra}" if row["note"] else extra
    return row


def evaluate_claims(claims_yaml: str | Path, report_dir: str | Path) -> pd.DataFrame:
    """Evaluate every claim of ``claims_yaml`` against ``report_dir``; one row per claim, in file order."""
    cache: dict[str, pd.DataFrame | None] = {}
    rows = [evaluate_claim(c, report_dir, cache) for c in load_claims(claims_yaml)]
    return pd.DataFrame(rows, columns=COLUMNS)


def summarize(verdicts: pd.DataFrame) -> dict[str, int]:
    """Number of claims per verdict (all four verdicts present, in :data:`VERDICTS` order)."""
    counts = verdicts["verdict"].value_counts() if len(verdicts) else pd.Series(dtype=int)
    return {v: int(counts.get(v, 0)) for v in VERDICTS}


def write_verdicts(claims_yaml: str | Path, report_dir: str | Path, out: str | Path | None = None) -> Path:
    """Evaluate the claims and write ``verdicts.csv`` and ``verdicts.md`` (default: into ``report_dir``)."""
    from ..io import atomic_write_text
    from .markdown import frame_to_markdown

    df = evaluate_claims(claims_yaml, report_dir)
    out = Path(out) if out is not None else Path(report_dir) / "verdicts.csv"
    atomic_write_text(out, df.to_csv(index=False))
    atomic_write_text(out.with_suffix(".md"), frame_to_markdown(df.drop(columns=["file"])))
    return out


def training_times(sidecars: list[str | Path]) -> pd.DataFrame:
    """``training_time.csv`` from saved models' JSON sidecars: dataset, objective, experiment, seed, train_seconds.

    Dataset and objective are read from the sidecar's ``dataset``/``objective_effective`` fields when present.
    """
    import json

    rows = []
    for p in sidecars:
        meta = json.loads(Path(p).read_text())
        ds = meta.get("dataset")
        ds = ds.get("name") if isinstance(ds, dict) else ds
        obj = meta.get("objective_effective") or (meta.get("config") or {}).get("objective") or {}
        obj = obj.get("name") if isinstance(obj, dict) else obj
        rows.append({"dataset": DATASET_LABELS.get(ds, ds), "objective": obj,
                     "experiment": meta.get("experiment", ""), "seed": meta.get("seed"),
                     "train_seconds": meta.get("train_seconds"), "path": str(p)})
    return pd.DataFrame(rows, columns=["dataset", "objective", "experiment", "seed", "train_seconds", "path"])
