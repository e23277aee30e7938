"""The book's ledger and record pages: the claims' verdicts, provenance and fidelity switches, CPU time per stage,
and the index of report outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..markdown import frame_to_markdown
from .md import _isnan, _note, _num, _read_csv, _sort, _table, _text


def render_verdicts(report: Path | None, verdicts: pd.DataFrame | None) -> tuple[str, str]:
    """(summary, table) Markdown of the claims ledger: one verdict per published version."""
    from ..claims import VERDICTS, VERSIONS, summarize

    if verdicts is None or verdicts.empty:
        return _note("verdicts.csv", "run `write_verdicts` or pass the claims file"), ""
    labels = {"preprint_2025_07": "July 2025", "satml_2026": "final", "preprint_2025_03": "March 2025",
              "black2022": "Black et al. 2022"}
    per_version = [v for v in VERSIONS if f"verdict_{v}" in verdicts.columns]
    counts = {v: summarize(verdicts, f"verdict_{v}") for v in per_version}
    if not per_version:
        counts = {"verdict": summarize(verdicts)}
    summary = _table(["verdict", *[f"vs {labels.get(v, v)}" for v in counts]],
                     [[k, *[str(counts[v][k]) for v in counts]] for k in VERDICTS])
    mark = {"reproduced": "✓ reproduced", "partly": "partly", "not reproduced": "✗ **not reproduced**",
            "not yet run": "*not yet run*"}
    rows = []
    for _, r in verdicts.iterrows():
        ours = _text(_num(r["ours"])) if not _isnan(r["ours"]) and str(r["ours"]) else ""
        if not _isnan(r.get("interval")) and str(r.get("interval")):
            ours += f" ({_text(r['interval'])})"
        claim = f"{_text(r.get('text'))}<br>`{r['claim']}` · {_text(r.get('source'))}"
        version = labels.get(str(r.get("version", "")), "")
        published = _text(_num(r["published"])) + (f" ({version})" if version else "")
        others = "; ".join(f"{labels[v]}: {mark.get(str(r[f'verdict_{v}']), r[f'verdict_{v}'])}"
                           for v in per_version if str(r.get(f"verdict_{v}", "")) and v != r.get("version"))
        note = _text(r.get("note"))
        vnote = r.get("versions_note", "")
        if not _isnan(vnote) and str(vnote):
            note += f"<br>*{_text(vnote)}*"
        rows.append([claim, published, ours, mark.get(str(r["verdict"]), _text(r["verdict"])), others, note])
    table = _table(["claim (id · source)", "published", "ours", "verdict", "other versions", "note"], rows)
    return summary, table


def _provenance(report: Path | None) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(versions, fidelity switches, sources) from provenance.json, index.json or evaluation sidecars."""
    versions: dict[str, Any] = {}
    fidelity: dict[str, Any] = {}
    sources: list[str] = []
    if report is None:
        return versions, fidelity, sources
    cands = [report / "provenance.json", report / "index.json"]
    cands += sorted(p for p in report.glob("*.json") if p.name not in ("provenance.json", "index.json"))
    for p in cands:
        if not p.exists():
            continue
        try:
            meta = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if not isinstance(meta, dict):
            continue
        prov = meta.get("provenance") if isinstance(meta.get("provenance"), dict) else (
            meta if p.name == "provenance.json" else None)
        if prov:
            for k, v in prov.items():
                if not isinstance(v, dict | list):
                    versions.setdefault(k, v)
            sources.append(p.name)
        fid = meta.get("fidelity")
        if isinstance(fid, dict) and not fidelity:
            fidelity = fid
            if p.name not in sources:
                sources.append(p.name)
        elif isinstance(fid, str) and "mode" not in fidelity:
            fidelity = {"mode": fid}
        for key in ("profile", "fidelity_mode"):
            if key in meta and not isinstance(meta[key], dict | list):
                versions.setdefault(key, meta[key])
    return versions, fidelity, sources


def render_provenance(report: Path | None) -> str:
    versions, fidelity, sources = _provenance(report)
    if not versions and not fidelity:
        return _note("provenance.json", "no provenance found in index.json, provenance.json or evaluation sidecars")
    out = "" if fidelity else (
        "The fidelity mode is not recorded in the report folder: copy the evaluations' `*.json` sidecars there or "
        "write `provenance.json` with a `fidelity` mapping.\n\n")
    if versions:
        out += (f"Read from {', '.join(f'`{s}`' for s in sources)}.\n\n"
                + _table(["item", "value"], [[str(k), str(v)] for k, v in sorted(versions.items())]))
    if fidelity:
        mode = fidelity.get("mode", "?")
        out += (f"\nFidelity mode: **{mode}**. The switches as they were resolved for these results:\n\n"
                + _table(["switch", "value"], [[f"`{k}`", str(v)] for k, v in fidelity.items() if k != "mode"]))
    return out


def render_benchmarks(report: Path | None) -> str:
    df = _read_csv(report, "benchmarks.csv")
    if df is None:
        return _note("benchmarks.csv", "CPU time per workflow stage: columns stage, jobs, cpu_seconds, wall_seconds")
    cols = [c for c in ("stage", "jobs", "cpu_seconds", "wall_seconds") if c in df.columns]
    df = df[cols + [c for c in df.columns if c not in cols]]
    tot = {c: df[c].sum() for c in ("jobs", "cpu_seconds", "wall_seconds") if c in df.columns}
    if tot and "stage" in df.columns:
        df = pd.concat([df, pd.DataFrame([{"stage": "total", **tot}])], ignore_index=True)
    if "cpu_seconds" in df.columns:
        df["cpu_hours"] = df["cpu_seconds"] / 3600
    return frame_to_markdown(df, digits=1)


def render_fidelity_switches() -> str:
    """The fidelity switches of ``ctbench.fidelity`` with their value in both modes (from the code, not a copy)."""
    from dataclasses import fields

    from ...fidelity import PRESETS, Fidelity

    ref, pap, jul = PRESETS["reference"], PRESETS["paper"], PRESETS["reference_2025_07"]
    rows = []
    for f in fields(Fidelity):
        if f.name == "mode":
            continue
        a, b, c = getattr(ref, f.name), getattr(pap, f.name), getattr(jul, f.name)
        rows.append([f"`{f.name}`", str(a), str(b), "same" if a == b else "**differs**",
                     str(c) if c != a else "="])
    return _table(["switch", "reference (final code)", "paper (text)", "", "reference_2025_07 (July code)"], rows)


def render_fidelity_effects(report: Path | None) -> str:
    df = _read_csv(report, "fidelity_effects.csv")
    if df is None:
        return _note("fidelity_effects.csv", "one run per switch flipped from `reference` to `paper`; expected "
                                             "columns switch, dataset, metric, reference, paper, delta")
    from .table_pages import SETTING_COLUMNS, constant_columns, merge_columns

    def pm(v: object, s: object) -> str:
        return _num(v, 3) + ("" if _isnan(s) else f"\u00a0±\u00a0{_num(s, 3)}")

    df = merge_columns(_sort(df), "switch", ["switch", "reference_setting", "paper_setting"],
                       lambda s, a, b: f"`{s}`" + ("" if _isnan(a) else f"<br>{_text(a)} → {_text(b)}"))
    df = merge_columns(df, "reference", ["reference", "pm_reference"], pm)
    df = merge_columns(df, "paper", ["paper", "pm_paper"], pm)
    df, const = constant_columns(df, only=SETTING_COLUMNS)
    legend = ("One run per switch flipped from `reference` (the authors' code) to `paper` (the text); under each "
              "switch its two settings; reference and paper: metric ± std over evaluation runs, Δ = paper − "
              "reference. " + const)
    return legend + "\n\n" + frame_to_markdown(df.rename(columns={"delta": "Δ"}), digits=3)


def render_index(report: Path | None) -> str:
    if report is None:
        return _note("index.json", "no report folder was given")
    p = report / "index.json"
    if not p.exists():
        return _note("index.json")
    written = json.loads(p.read_text()).get("written", {})
    rows = []
    for name, v in written.items():
        if isinstance(v, dict):
            files, n = [v[k] for k in ("csv", "md") if v.get(k)], str(v.get("rows", ""))
        else:
            files, n = (list(v) if isinstance(v, list) else [str(v)]), ""
        rows.append([name, n, ", ".join(f"`{f}`" for f in files)])
    return _table(["output", "rows", "files"], rows) if rows else "The report index lists no outputs.\n"

