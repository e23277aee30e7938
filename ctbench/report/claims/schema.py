"""The claims file: its schema, validation and loading (the rules themselves are in :mod:`.rules`).

``claims.yaml`` (repository root) documents the schema in its header; this module enforces it, including the caps on
tolerances (a tolerance so wide that a claim cannot fail is an error) and the published versions a claim is judged
against.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...facts import BLACK2022_ORDER, PAPER_ORDER

REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_YET_RUN = "reproduced", "partly", "not reproduced", "not yet run"
#: the experiment ran but the value is withheld (e.g. MNIST IP*: too few counterfactuals per MMD group); the note
#: gives the reason. "not yet run" is kept for experiments that did not run in this profile.
NOT_COMPUTABLE = "not computable"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_COMPUTABLE, NOT_YET_RUN)
RULES = ("value", "no_effect", "relation", "most_often", "cell", "which")
OPS = (">", ">=", "<", "<=", "==")
AGGS = ("mean", "max", "min", "median", "sum", "range")
#: the published versions, the one this project reproduces first (``../shared/papers/000_…``); ``black2022`` is
#: Black et al.'s consistency paper (``../shared/papers/003_…``), whose claims are judged on its own datasets
VERSIONS = ("preprint_2025_07", "satml_2026", "preprint_2025_03", "black2022")
PRIMARY = VERSIONS[0]
#: versions a claim is judged against when its entry does not say (the March preprint has a different table)
DEFAULT_VERSIONS = ("preprint_2025_07", "satml_2026")
#: the widest tolerances allowed (absolute in the column's unit, e.g. percentage points; relative to |published|)
MAX_TOLERANCE = {"abs": 25.0, "rel": 0.5}
MAX_PARTLY_TOLERANCE = {"abs": 50.0, "rel": 1.0}
#: the paper's nine datasets (labels): paper claims are judged on these rows only, whatever else a report holds
PAPER_DATASETS = PAPER_ORDER
#: the datasets of Black et al.'s Table 1 (their labels): ``black2022`` claims are judged on these rows only
BLACK_DATASETS = BLACK2022_ORDER

_REQUIRED = {"id", "text", "source", "rule", "file", "published"}
_COMMON = _REQUIRED | {"note", "versions", "headline"}
_ALLOWED = {
    "value": _COMMON | {"select", "over", "column", "agg", "agg_over", "tolerance", "partly_tolerance", "interval",
                        "significant", "significance_column", "sign_free", "item_published", "item_tolerance"},
    "no_effect": _COMMON | {"select", "over", "column", "tolerance", "significance_column", "interval"},
    "relation": _COMMON | {"select", "over", "left", "right", "op", "tolerance", "min_share", "significant",
                           "except", "must_differ", "upper"},
    "most_often": _COMMON | {"select", "group", "candidates", "column", "op", "threshold", "expected", "exclude"},
    "cell": _COMMON | {"dataset", "metric"},
    "which": _COMMON | {"select", "over", "column", "op", "threshold", "significant", "expected"},
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
    versions: tuple[str, ...] = DEFAULT_VERSIONS

    def for_version(self, version: str, key: str) -> Any:
        """A field that may be given per version (``{preprint_2025_07: x, satml_2026: y}``) or once for all."""
        value = self.published if key == "published" else self.spec.get(key)
        return value.get(version) if isinstance(value, dict) and set(value) <= set(VERSIONS) else value


def _fail(where: str, msg: str) -> ClaimsError:
    return ClaimsError(f"claims: {where}: {msg}")


def _check_tolerance(where: str, tol: Any, name: str = "tolerance") -> None:
    if not isinstance(tol, dict) or len(tol) != 1 or next(iter(tol)) not in ("abs", "rel"):
        raise _fail(where, f"{name} must be a mapping with exactly one key 'abs' or 'rel', got {tol!r}")
    kind, v = next(iter(tol.items()))
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
        raise _fail(where, f"{name} value must be a number >= 0, got {v!r}")
    cap = (MAX_PARTLY_TOLERANCE if name == "partly_tolerance" else MAX_TOLERANCE)[kind]
    if v > cap:
        raise _fail(where, f"{name} {kind} {v:g} exceeds the cap {cap:g}: a tolerance that wide cannot fail")


def _check_select(where: str, sel: Any, name: str = "select") -> None:
    if sel is None:
        return
    if not isinstance(sel, dict) or not all(isinstance(k, str) for k in sel):
        raise _fail(where, f"{name} must be a mapping column -> value (or list of values), got {sel!r}")


def _check_side(where: str, side: Any, name: str) -> None:
    if not isinstance(side, dict) or not ({"column", "value"} & set(side)):
        raise _fail(where, f"{name} must be a mapping with 'column' (and optional 'select', 'agg') or 'value'")
    unknown = set(side) - {"column", "select", "agg", "value", "scale"}
    if unknown:
        raise _fail(where, f"{name}: unknown key(s) {sorted(unknown)}")
    _check_select(where, side.get("select"), f"{name}.select")
    if "agg" in side and side["agg"] not in AGGS:
        raise _fail(where, f"{name}.agg must be one of {AGGS}, got {side['agg']!r}")
    if "value" in side and (isinstance(side["value"], bool) or not isinstance(side["value"], int | float)):
        raise _fail(where, f"{name}.value must be a number, got {side['value']!r}")
    if "scale" in side and (isinstance(side["scale"], bool) or not isinstance(side["scale"], int | float)
                            or side["scale"] <= 0):
        raise _fail(where, f"{name}.scale must be a number > 0, got {side['scale']!r}")


def _is_number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, int | float)


def _per_version(where: str, value: Any, name: str, versions: tuple[str, ...], check) -> None:
    """``value`` is given once or as ``{version: value}`` for exactly the claim's versions."""
    if isinstance(value, dict) and value and set(value) <= set(VERSIONS):
        missing = sorted(set(versions) - set(value))
        if missing:
            raise _fail(where, f"{name} gives no value for version(s) {missing} of 'versions'")
        for v in value.values():
            check(v)
    else:
        check(value)


def _check_rule_fields(where: str, entry: dict[str, Any], rule: str, versions: tuple[str, ...]) -> None:
    over = entry.get("over")
    if rule in ("value", "no_effect"):
        if not isinstance(entry.get("column"), str):
            raise _fail(where, f"rule {rule!r} needs 'column' (the value column)")
        if "tolerance" not in entry:
            raise _fail(where, f"rule {rule!r} needs 'tolerance' ({{abs: x}} or {{rel: x}})")
        if rule == "no_effect" and over is None:
            raise _fail(where, "rule 'no_effect' needs 'over' (the datasets that show no effect)")
        if rule == "value":
            def number(p):
                if not _is_number(p):
                    raise _fail(where, f"rule 'value' needs a numeric 'published', got {p!r}")
            _per_version(where, entry["published"], "published", versions, number)
            if "agg" in entry and entry["agg"] not in AGGS:
                raise _fail(where, f"agg must be one of {AGGS}")
            if "agg_over" in entry:
                if entry["agg_over"] not in AGGS:
                    raise _fail(where, f"agg_over must be one of {AGGS}")
                if over is None:
                    raise _fail(where, "agg_over needs 'over'")
            elif over is not None:
                raise _fail(where, "rule 'value' with 'over' needs 'agg_over' (how to combine the items)")
            if "item_published" in entry:
                if "agg_over" not in entry:
                    raise _fail(where, "item_published needs 'over' and 'agg_over' (it checks each item)")
                ip = entry["item_published"]
                items = {str(x) for x in next(iter(over.values()))}

                def item_values(m):
                    if not isinstance(m, dict) or not set(map(str, m)) <= items or not all(
                            _is_number(x) for x in m.values()):
                        raise _fail(where, "item_published must be 'table1' or {item: number} for items of 'over' "
                                           f"(or one such mapping per version), got {m!r}")
                if ip != "table1":
                    _per_version(where, ip, "item_published", versions, item_values)
                elif "metric" not in (entry.get("select") or {}):
                    raise _fail(where, "item_published: table1 needs select.metric (IP, IP* or Cost)")
            if "item_tolerance" in entry:
                _check_tolerance(where, entry["item_tolerance"], "item_tolerance")
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
        if "upper" in entry:
            _check_side(where, entry["upper"], "upper")
            if entry.get("op") not in (">", ">="):
                raise _fail(where, "upper bounds the left side from above: it needs op '>' or '>='")
        if entry.get("op") not in OPS:
            raise _fail(where, f"op must be one of {OPS}, got {entry.get('op')!r}")
        if "tolerance" in entry and "abs" not in entry["tolerance"]:
            raise _fail(where, "rule 'relation' takes an absolute tolerance (the margin), {abs: x}")
        share = entry.get("min_share", 1.0)
        if not _is_number(share) or not 0 < share <= 1:
            raise _fail(where, f"min_share must be a number in (0, 1], got {share!r}")
        exc = entry.get("except")
        if exc is not None:
            items = [str(x) for x in next(iter((over or {"": []}).values()))]
            if not isinstance(exc, list) or not exc or not {str(x) for x in exc} <= set(items):
                raise _fail(where, f"except must be a non-empty list of items of 'over' (where the claim says the "
                                   f"relation does not hold), got {exc!r}")
            if len(exc) >= len(items):
                raise _fail(where, "except may not name every item of 'over'")
        md = entry.get("must_differ")
        if md is not None:
            if not isinstance(md, list) or not md or not all(isinstance(c, str) for c in md):
                raise _fail(where, f"must_differ must be a non-empty list of column names, got {md!r}")
            if "value" in entry["left"] or "value" in entry["right"]:
                raise _fail(where, "must_differ compares the rows of both sides: neither may be a fixed 'value'")
    elif rule == "most_often":
        for key in ("group", "candidates", "column", "expected"):
            if key not in entry:
                raise _fail(where, f"rule 'most_often' needs '{key}'")
        if not isinstance(entry["group"], list) or not all(isinstance(c, str) for c in entry["group"]):
            raise _fail(where, "group must be a list of column names")
        if entry.get("op", ">") not in OPS:
            raise _fail(where, f"op must be one of {OPS}")
    elif rule == "cell":
        if entry.get("dataset") not in PAPER_DATASETS or entry.get("metric") not in ("IP", "IP*", "Cost"):
            raise _fail(where, f"rule 'cell' needs 'dataset' in {PAPER_DATASETS} and 'metric' in IP, IP*, Cost")
    elif rule == "which":
        for key in ("over", "column", "expected"):
            if key not in entry:
                raise _fail(where, f"rule 'which' needs '{key}'")
        if entry.get("op", ">") not in OPS:
            raise _fail(where, f"op must be one of {OPS}")

        def items(e):
            if not isinstance(e, list) or not all(isinstance(x, str) for x in e):
                raise _fail(where, f"expected must be a list of items (or one list per version), got {e!r}")
        _per_version(where, entry["expected"], "expected", versions, items)


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
    if not isinstance(entry.get("headline", False), bool):
        raise _fail(where, f"headline must be true or false, got {entry['headline']!r}")
    versions = entry.get("versions", list(DEFAULT_VERSIONS))
    if not isinstance(versions, list) or not versions or not set(versions) <= set(VERSIONS):
        raise _fail(where, f"versions must be a non-empty list of {VERSIONS}, got {versions!r}")
    _check_select(where, entry.get("select"))
    over = entry.get("over")
    if over is not None and (not isinstance(over, dict) or len(over) != 1
                             or not isinstance(next(iter(over.values())), list) or not next(iter(over.values()))):
        raise _fail(where, f"over must be a mapping with one column -> non-empty list of values, got {over!r}")
    if "tolerance" in entry:
        _check_tolerance(where, entry["tolerance"])
    if "partly_tolerance" in entry:
        _check_tolerance(where, entry["partly_tolerance"], "partly_tolerance")
    _check_rule_fields(where, entry, rule, tuple(versions))
    spec = {k: v for k, v in entry.items() if k not in _REQUIRED and k != "versions"}
    ordered = tuple(v for v in VERSIONS if v in versions)
    return Claim(id=cid, text=entry["text"].strip(), source=entry["source"], rule=rule, file=entry["file"],
                 published=entry["published"], spec=spec, versions=ordered)


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
