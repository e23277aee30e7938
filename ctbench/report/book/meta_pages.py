"""The book's ledger and record pages: the claims' verdicts, provenance and fidelity switches, CPU time per stage,
and the index of report outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ...io import is_dirty
from ..common import not_run_note, paper_sorted, read_report_csv
from ..markdown import frame_to_markdown
from ..run_set import UNRECORDED
from .md import cell_text, fmt_num, is_missing, md_table


def render_verdicts(report: Path | None, verdicts: pd.DataFrame | None) -> tuple[str, str]:
    """(summary, table) Markdown of the claims ledger: one verdict per published version. The table is narrow (it
    reads without sideways scrolling): the claim with its id, the published value and ours, a short verdict with the
    other versions' below it; the rule's note and where the authors' versions differ are folded under the claim."""
    from ..claims import VERDICTS, VERSIONS, summarize
    from .findings_pages import MARKS, version_label

    if verdicts is None or verdicts.empty:
        return not_run_note("verdicts.csv", "run `write_verdicts` or pass the claims file"), ""
    per_version = [v for v in VERSIONS if f"verdict_{v}" in verdicts.columns]
    counts = {v: summarize(verdicts, f"verdict_{v}") for v in per_version}
    if not per_version:
        counts = {"verdict": summarize(verdicts)}
    summary = md_table(["verdict", *[f"vs {version_label(v)}" for v in counts]],
                       [[k, *[str(counts[v][k]) for v in counts]] for k in VERDICTS])
    rows = []
    for _, r in verdicts.iterrows():
        ours = cell_text(fmt_num(r["ours"])) if not is_missing(r["ours"]) and str(r["ours"]) else "—"
        if not is_missing(r.get("interval")) and str(r.get("interval")):
            ours += f" ({cell_text(r['interval'])})"
        version = version_label(str(r.get("version", ""))) if str(r.get("version", "")) else ""
        published = cell_text(fmt_num(r["published"])) + (f" <small>({version})</small>" if version else "")
        others = "<br>".join(f"<small>{version_label(v)}: {MARKS.get(str(r[f'verdict_{v}']), r[f'verdict_{v}'])}"
                             "</small>" for v in per_version
                             if str(r.get(f"verdict_{v}", "")) and v != r.get("version"))
        details = cell_text(r.get("note"))
        vnote = r.get("versions_note", "")
        if not is_missing(vnote) and str(vnote):
            details += f"<br><em>{cell_text(vnote)}</em>"
        held = r.get("seeds_held", "")
        if not is_missing(held) and str(held):  # the share of training seeds under which it holds alone
            others = f"<small>holds on {cell_text(held)} seeds</small>" + (f"<br>{others}" if others else "")
            details += f"<br>{cell_text(r.get('seed_note'))}"
        # the source may be a long quotation: its line wraps (class "wrap"; other second lines stay on one line)
        claim = (f"{cell_text(r.get('text'))}<br><small class=\"wrap\">`{r['claim']}` · "
                 f"{cell_text(r.get('source'))}</small>"
                 + (f"<details><summary>why</summary>{details}</details>" if details else ""))
        verdict = MARKS.get(str(r["verdict"]), cell_text(r["verdict"])) + (f"<br>{others}" if others else "")
        rows.append([claim, f"{published}<br>ours: {ours}", verdict])
    table = md_table(["claim (id · source; *why*: the rule's note)", "published / ours", "verdict"], rows)
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


def result_set_versions(report: Path | None) -> dict[str, Any] | None:
    """The code versions of a report's inputs from its ``provenance.json``: ``code_versions`` (version → number of
    input files), ``mixed`` and ``dirty`` (files made with uncommitted changes); None when it records none. A report
    written before ``mixed`` was recorded is judged from its ``input_code_versions``."""
    path = report / "provenance.json" if report is not None else None
    if path is None or not path.exists():
        return None
    try:
        prov = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    per_kind = prov.get("input_code_versions") if isinstance(prov, dict) else None
    if not isinstance(per_kind, dict):
        return None
    total: dict[str, int] = {}
    for kv in per_kind.values():
        for v, n in (kv or {}).items():
            total[v] = total.get(v, 0) + int(n)
    recorded = [v for v in total if v != UNRECORDED]
    if not recorded:
        return None
    return {"code_versions": dict(sorted(total.items(), key=lambda kv: -kv[1])), "per_kind": per_kind,
            "mixed": bool(prov.get("mixed", len(recorded) > 1)),
            "dirty": sum(n for v, n in total.items() if is_dirty(v)), "report_commit": prov.get("git_commit"),
            "stage_code": prov.get("stage_code") or {}}


def _short(commit: str | None) -> str:
    return f"`{commit[:7]}`" + (" (uncommitted changes)" if is_dirty(commit) else "") if commit else "this commit"


def render_result_set(report: Path | None) -> str:
    """The book's first page: which code made the numbers it shows, and a warning when they come from several."""
    info = result_set_versions(report)
    if info is None:
        return ("The report folder records no code versions of its inputs (`provenance.json`): the commit that made "
                "these numbers is not known.\n")
    versions = info["code_versions"]
    short = {v: f"`{v[:7]}`" + (" (uncommitted changes)" if is_dirty(v) else "") for v in versions}
    recorded = [v for v in versions if v != UNRECORDED]
    if not info["mixed"] and len(recorded) == 1:
        n = sum(versions.values())
        return f"Every number in this book was made by one code version, {short[recorded[0]]} ({n} input files).\n"
    if not info["mixed"]:
        commit = info["report_commit"]
        stages = ", ".join(f"{k} `{c['stage']}` {str(c['code'])[:12]}" for k, c in info["stage_code"].items())
        return (f"Every number in this book is what the code at {_short(commit)} makes: its {sum(versions.values())} "
                f"input files were written at {len(recorded)} commits, and for each file the code of the stage that "
                f"wrote it is identical at its commit and here (stage code fingerprints: {stages}). Snakemake reran "
                "exactly the stages whose code or settings changed.\n\n"
                + md_table(["code version", "input files"], [[short[v], str(n)] for v, n in versions.items()]))
    kinds = ", ".join(f"{k} {len(kv)}" for k, kv in info["per_kind"].items() if kv)
    rows = [[short[v], str(n)] for v, n in versions.items()]
    return ("```{warning}\n"
            f"**Mixed result set.** The inputs of these numbers were made by {len(versions)} code versions "
            f"(versions per input kind: {kinds}), {info['dirty']} input files with uncommitted changes: they are not "
            "the output of one commit, and a fresh run at one commit may differ.\n```\n\n"
            + md_table(["code version", "input files"], rows))


def render_provenance(report: Path | None) -> str:
    versions, fidelity, sources = _provenance(report)
    if not versions and not fidelity:
        return not_run_note("provenance.json",
                            "no provenance found in index.json, provenance.json or evaluation sidecars")
    out = "" if fidelity else (
        "The fidelity mode is not recorded in the report folder: copy the evaluations' `*.json` sidecars there or "
        "write `provenance.json` with a `fidelity` mapping.\n\n")
    if versions:
        out += (f"Read from {', '.join(f'`{s}`' for s in sources)}.\n\n"
                + md_table(["item", "value"], [[str(k), str(v)] for k, v in sorted(versions.items())]))
    if fidelity:
        mode = fidelity.get("mode", "?")
        out += (f"\nFidelity mode: **{mode}**. The switches as they were resolved for these results:\n\n"
                + md_table(["switch", "value"], [[f"`{k}`", str(v)] for k, v in fidelity.items() if k != "mode"]))
    return out


def render_benchmarks(report: Path | None) -> str:
    df = read_report_csv(report, "benchmarks.csv")
    if df is None:
        return not_run_note("benchmarks.csv",
                            "CPU time per workflow stage: columns stage, jobs, cpu_seconds, wall_seconds")
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
    return md_table(["switch", "reference (final code)", "paper (text)", "", "reference_2025_07 (July code)"], rows)


def render_fidelity_effects(report: Path | None) -> str:
    df = read_report_csv(report, "fidelity_effects.csv")
    if df is None:
        return not_run_note("fidelity_effects.csv", "one run per switch flipped from `reference` to `paper`; expected "
                                             "columns switch, dataset, metric, reference, paper, delta")
    from .table_pages import SETTING_COLUMNS, constant_columns, merge_columns

    def pm(v: object, s: object) -> str:
        return fmt_num(v, 3) + ("" if is_missing(s) else f"\u00a0±\u00a0{fmt_num(s, 3)}")

    df = merge_columns(paper_sorted(df, relabel=True), "switch", ["switch", "reference_setting", "paper_setting"],
                       lambda s, a, b: f"`{s}`" + ("" if is_missing(a) else f"<br>{cell_text(a)} → {cell_text(b)}"))
    df = merge_columns(df, "reference", ["reference", "pm_reference"], pm)
    df = merge_columns(df, "paper", ["paper", "pm_paper"], pm)
    df, const = constant_columns(df, only=SETTING_COLUMNS)
    legend = ("One run per switch flipped from `reference` (the authors' code) to `paper` (the text); under each "
              "switch its two settings; reference and paper: metric ± std over evaluation runs, Δ = paper − "
              "reference. " + const)
    return legend + "\n\n" + frame_to_markdown(df.rename(columns={"delta": "Δ"}), digits=3)


def render_index(report: Path | None) -> str:
    if report is None:
        return not_run_note("index.json", "no report folder was given")
    p = report / "index.json"
    if not p.exists():
        return not_run_note("index.json")
    written = json.loads(p.read_text()).get("written", {})
    rows = []
    for name, v in written.items():
        if isinstance(v, dict):
            files, n = [v[k] for k in ("csv", "md") if v.get(k)], str(v.get("rows", ""))
        else:
            files, n = (list(v) if isinstance(v, list) else [str(v)]), ""
        rows.append([name, n, ", ".join(f"`{f}`" for f in files)])
    return md_table(["output", "rows", "files"], rows) if rows else "The report index lists no outputs.\n"

