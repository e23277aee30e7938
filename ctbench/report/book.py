"""Build the Jupyter Book (``paper/``) from a report folder, offline.

:func:`build_book` copies the report outputs (``ctbench report``: tables as CSV, figures as PNG, ``index.json``,
optional ``verdicts.csv``, ``benchmarks.csv``, ``provenance.json``, ``fidelity_effects.csv``, ``grids/``) into the
book's ``_generated/report/`` folder, renders one Markdown include per table or figure into ``_generated/`` (our
values next to the published ones, differences in bold where they exceed the published spread), and runs
``jupyter-book build`` in a subprocess (``-W`` when ``strict``). An output that is missing gives a "not yet run in
this profile" note, never an error. Nothing is trained or executed; MathJax is bundled (``sphinx-mathjax-offline``)
so the HTML reads without a network.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from .markdown import frame_to_markdown

GENERATED = "_generated"
#: report files copied into the book (everything else in the report folder is ignored)
COPY_SUFFIXES = (".csv", ".md", ".png", ".svg", ".jpg", ".pdf", ".json")
PAPER_ORDER = ["LS", "Circ", "Moon", "OL", "Adult", "CH", "Cred", "GMSC", "MNIST", "Avg."]
DATASET_LABELS = {"lin_sep": "LS", "circles": "Circ", "moons": "Moon", "over": "OL", "adult": "Adult",
                  "california_housing": "CH", "credit_default": "Cred", "gmsc": "GMSC", "mnist": "MNIST"}
OBJECTIVE_LABELS = {"full": "CT", "vanilla": "BL", "energy": "CD", "adversarial": "AR"}
#: figures of chapter 4: file → caption
PAPER_FIGURES = {
    "figure1.png": "Figure 1: counterfactuals of a conventionally trained model and of CT, without and with a "
                   "mutability constraint (the paper's proof-of-concept figure).",
    "mnist_counterfactuals.png": "MNIST: a factual 0 and ECCo counterfactuals in target classes 1 to 4, BL (top) "
                                 "and CT (bottom).",
    "mnist_attribution.png": "MNIST: integrated gradients averaged over test images of classes 5 to 9, BL (top) and "
                             "CT (bottom); the protected pixel rows should be blue (insensitive) for CT.",
}


class BookBuildError(RuntimeError):
    """``jupyter-book build`` failed (the message carries the tail of its output)."""


# --------------------------------------------------------------------------------------------------- helpers


def _note(file: str, what: str = "") -> str:
    what = f" ({what})" if what else ""
    return (f"```{{note}}\nNot yet run in this profile: `{file}` is not in the report folder{what}. "
            f"Run the corresponding workflow stage, then rebuild the book.\n```\n")


def _read_csv(report: Path | None, name: str) -> pd.DataFrame | None:
    if report is None:
        return None
    p = report / name
    if not p.exists() or p.stat().st_size == 0:
        return None
    try:
        df = pd.read_csv(p)
    except pd.errors.EmptyDataError:
        return None
    return None if df.empty else df


def _isnan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _num(v: Any, digits: int = 2) -> str:
    if _isnan(v):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    try:
        return f"{float(v):.{digits}f}"
    except (TypeError, ValueError):
        return str(v)


def _truthy(v: Any) -> bool | None:
    if _isnan(v):
        return None
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes")
    return bool(v)


def _esc(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _text(s: Any) -> str:
    """Data-derived text for a Markdown cell: no emphasis, math or code spans by accident."""
    if _isnan(s):
        return ""
    out = str(s)
    for ch in ("\\", "*", "$", "`", "_"):
        out = out.replace(ch, "\\" + ch)
    return out


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _sort(df: pd.DataFrame) -> pd.DataFrame:
    if "dataset" not in df.columns:
        return df
    df = df.assign(dataset=df["dataset"].map(lambda d: DATASET_LABELS.get(d, d)))
    rank = {d: i for i, d in enumerate(PAPER_ORDER)}
    return df.sort_values("dataset", key=lambda s: s.map(lambda d: rank.get(d, len(rank))), kind="stable")


def _figure(rel: str, caption: str, name: str | None = None) -> str:
    label = f":name: {name}\n" if name else ""
    return f"```{{figure}} /{GENERATED}/report/{rel}\n{label}:width: 90%\n\n{caption}\n```\n"


# --------------------------------------------------------------------------------------------------- renderers


def _cell_reduction(v: Any, pm: Any, sig: Any) -> str:
    if _isnan(v):
        return "—"
    s = f"{float(v):.2f}"
    if not _isnan(pm):
        s += f"\u00a0±\u00a0{float(pm):.2f}"
    return s + ("\\*" if _truthy(sig) else "")


def _interval(lb: Any, ub: Any) -> str:
    return "" if _isnan(lb) or _isnan(ub) else f"[{float(lb):.1f},\u00a0{float(ub):.1f}]"


def render_table1(report: Path | None) -> str:
    """Table 1, one row per cell (readable without sideways scrolling): ours with the paper's ± and star, the
    interval over training seeds, every published version and the agreement with the July 2025 preprint."""
    df = _read_csv(report, "table1.csv")
    if df is None or "reduction_pct" not in df.columns or (df["reduction_pct"].isna().all() and "flag" not in df):
        return _note("table1.csv", "experiments `single` and `mutability`")
    df = _sort(df)
    versions = [("preprint_2025_07", "July 2025"), ("satml_2026", "final"), ("preprint_2025_03", "March 2025")]
    versions = [(v, lab) for v, lab in versions if f"{v}_reduction_pct" in df.columns]
    header = ["Data", "metric", "ours", "seeds (95%)", *[lab for _, lab in versions], "vs July", "note"]
    rows = []
    order = {"IP": 0, "IP*": 1, "Cost": 2}
    df = df.assign(_m=df["metric"].map(order)).sort_values(["_m"], kind="stable")
    df = _sort(df)
    for _, r in df.iterrows():
        n = r.get("n_seeds")
        seeds = _interval(r.get("seed_lb"), r.get("seed_ub"))
        if seeds and not _isnan(n):
            seeds += f" (n={int(n)})"
        row = [str(r["dataset"]), str(r["metric"]), _cell_reduction(r["reduction_pct"], r.get("pm"),
                                                                   r.get("significant")), seeds]
        for v, _ in versions:
            row.append(_cell_reduction(r.get(f"{v}_reduction_pct"), r.get(f"{v}_pm"), r.get(f"{v}_significant")))
        agree = r.get("preprint_2025_07_agreement", "")
        agree = "" if _isnan(agree) else str(agree)
        if agree == "disagrees":
            agree = "**disagrees**"
        row.append(agree)
        flag = r.get("flag", "")
        row.append("" if _isnan(flag) else _text(flag))
        rows.append(row)
    legend = ("Percent reduction CT vs BL (positive = CT better). *ours*: the paper's recipe over all (training "
              "seed, evaluation run) pairs, ± = 100·std of the per-run ratios, \\* = the 99% range of the per-run "
              "differences excludes 0. *seeds*: the reduction computed per training seed, mean ± Student-t 95% "
              "interval over seeds — the uncertainty of retraining, which the paper's ± does not cover. "
              "*vs July*: agreement in sign and significance with the July 2025 preprint. IP* is grouped per "
              "evaluation run (see `ipstar_groupings.csv` for the pooled reading). An Avg. row is compared with the "
              "paper's only when it averages the same nine datasets.\n\n")
    return legend + _table(header, rows)


def render_agreement(report: Path | None) -> str:
    df = _read_csv(report, "table1_agreement.csv")
    if df is None or df.empty:
        return _note("table1_agreement.csv", "experiments `single` and `mutability` with the published tables")
    cols = [c for c in df.columns if c not in ("version",)]
    return _table(cols, [[_text(_num(r[c], 0)) if c != "label" else _text(r[c]) for c in cols]
                         for _, r in df.iterrows()])


def render_side_by_side(report: Path | None, name: str, columns: dict[str, str], keys: list[str],
                        flag: Callable[[pd.Series, str], bool], legend: str, digits: int = 2,
                        what: str = "") -> str:
    """A table whose ``pub_<col>``/``diff_<col>`` columns (from ``with_published``) sit next to ours."""
    df = _read_csv(report, f"{name}.csv")
    if df is None:
        return _note(f"{name}.csv", what)
    df = _sort(df)
    cols = [c for c in columns if c in df.columns]
    header = [k.capitalize() if k != "dataset" else "Data" for k in keys]
    for c in cols:
        header.append(columns[c])
        if f"pub_{c}" in df.columns:
            header += [f"{columns[c]} paper", "Δ"]
    rows = []
    for _, r in df.iterrows():
        row = [str(r[k]) for k in keys]
        for c in cols:
            row.append(_num(r[c], digits))
            if f"pub_{c}" in df.columns:
                row.append(_num(r[f"pub_{c}"], digits))
                d = r[c] - r[f"pub_{c}"] if not (_isnan(r[c]) or _isnan(r[f"pub_{c}"])) else float("nan")
                cell = _num(d, digits)
                row.append(f"**{cell}**" if not _isnan(d) and flag(r, c) else cell)
        rows.append(row)
    return legend + "\n\n" + _table(header, rows)


def _flag_abs(threshold: float) -> Callable[[pd.Series, str], bool]:
    return lambda r, c: abs(float(r[c]) - float(r[f"pub_{c}"])) > threshold


def _flag_rel(rel: float, floor: float) -> Callable[[pd.Series, str], bool]:
    def f(r: pd.Series, c: str) -> bool:
        return abs(float(r[c]) - float(r[f"pub_{c}"])) > max(rel * abs(float(r[f"pub_{c}"])), floor)
    return f


def _flag_ig(r: pd.Series, c: str) -> bool:
    lb, ub = r.get("pub_lb_2_5"), r.get("pub_ub_97_5")
    if c != "median" or _isnan(lb) or _isnan(ub):
        return _flag_rel(0.5, 0.05)(r, c)
    return not (float(lb) <= float(r[c]) <= float(ub))


def render_plain(report: Path | None, name: str, columns: list[str] | None = None, digits: int = 3,
                 what: str = "", legend: str = "") -> str:
    df = _read_csv(report, f"{name}.csv")
    if df is None:
        return _note(f"{name}.csv", what)
    df = _sort(df)
    if columns:
        df = df[[c for c in columns if c in df.columns]]
    return (legend + "\n\n" if legend else "") + frame_to_markdown(df, digits=digits)


def render_ablation(report: Path | None) -> str:
    df = _read_csv(report, "ablation.csv")
    if df is None:
        return _note("ablation.csv", "experiment `ablation`: objectives CT, CD, AR against BL")
    df = _sort(df)
    df = df.assign(objective=df["objective"].map(lambda o: OBJECTIVE_LABELS.get(o, o)))
    wide = df.pivot_table(index=["dataset", "metric"], columns="objective", values="reduction_pct", sort=False)
    wide = wide.reset_index()
    legend = ("Percent reduction against BL of IP and IP* for the full objective (CT) and the partial objectives "
              "CD (contrastive divergence only) and AR (adversarial only) — the paper's Fig. 6.")
    return legend + "\n\n" + frame_to_markdown(wide, digits=2)


def render_robustness(report: Path | None) -> str:
    if report is None or not (report / "robustness.png").exists():
        if _read_csv(report, "robustness.csv") is not None:
            return "The robustness table exists but its figure is missing; see `robustness.csv`.\n"
        return _note("robustness.png", "stage `robustness`: FGSM and PGD accuracy over ε")
    out = _figure("robustness.png", "Test accuracy under FGSM and PGD attacks over the perturbation size ε "
                  "(paper: Fig. 3 in the preprint, Fig. 5 in the final version).", "fig-robustness")
    df = _read_csv(report, "robustness.csv")
    if df is not None and {"attack", "eps", "accuracy", "dataset"} <= set(df.columns):
        df = _sort(df)
        df["model"] = df["objective"].map(lambda o: OBJECTIVE_LABELS.get(o, o)) if "objective" in df.columns \
            else df.get("model", "")
        summ = df.groupby(["dataset", "attack", "model"], sort=False)["accuracy"].agg(
            clean=lambda a: a.iloc[0], mean_over_eps="mean", at_max_eps=lambda a: a.iloc[-1]).reset_index()
        out += ("\nAccuracy per dataset, attack and model: clean (ε = 0), mean over the ε grid and at the largest "
                "ε.\n\n" + frame_to_markdown(summ, digits=3))
    return out


def render_paper_figures(report: Path | None) -> str:
    parts = []
    for fname, caption in PAPER_FIGURES.items():
        stem = Path(fname).stem
        if report is not None and (report / fname).exists():
            parts.append(_figure(fname, caption, f"fig-{stem.replace('_', '-')}"))
        else:
            parts.append(f"**{caption.split(':')[0]}.** " + _note(fname))
    return "\n".join(parts)


def render_prop31(report: Path | None) -> tuple[str, str]:
    """The Proposition 3.1 check (``prop31/`` of the report): results (summary + figures) and the violations."""
    pdir = report / "prop31" if report is not None else None
    if pdir is None or not (pdir / "prop31_summary.csv").exists():
        note = _note("prop31/prop31_summary.csv", "stage `prop31`: `ctbench prop31`")
        return note, note
    summary = pd.read_csv(pdir / "prop31_summary.csv")
    parts = ["Share of paired runs in which protection lowered the relative sensitivity (Wilson 95% interval): "
             "overall (`by = all`), by sample size, mean gap and standard deviations, at training checkpoints "
             "(`by = iteration`) and for the training variants (`by = variant`). Suffixes: `u` unprotected CT, "
             "`p` protected CT, `bl` baseline.\n\n" + frame_to_markdown(summary, digits=3)]
    for stem, caption in (("prop31_paths", "Coefficient paths (thin: seeds, bold: median) without and with "
                           "protection, and the relative sensitivity |w_imm| / |w_mut|."),
                          ("prop31_sensitivity", "Relative sensitivity with against without protection, one point "
                           "per run (below the diagonal: protection lowered it), and the per-run log ratio for "
                           "each violation of the assumptions.")):
        if (pdir / f"{stem}.png").exists():
            parts.append(_figure(f"prop31/{stem}.png", caption, name=f"fig-{stem.replace('_', '-')}"))
    violations = pdir / "prop31_violations.csv"
    viol = (frame_to_markdown(pd.read_csv(violations), digits=3) if violations.exists()
            else _note("prop31/prop31_violations.csv", "stage `prop31`"))
    return "\n\n".join(parts), viol


def render_prop31_findings(report: Path | None) -> str:
    """The Prop 3.1 page's prose, every number from the run's own summary (:mod:`.prop31_text`)."""
    from .prop31_text import render_findings, render_violations

    summary = report / "prop31" / "prop31_summary.csv" if report is not None else None
    if summary is None or not summary.exists():
        return _note("prop31/prop31_summary.csv", "stage `prop31`")
    text = render_findings(summary)
    violations = summary.parent / "prop31_violations.csv"
    return text + ("\n" + render_violations(violations) if violations.exists() else "")


def render_prop31_settings(report: Path | None) -> str:
    from .prop31_text import render_settings_section  # both arms per setting, with the negative controls

    return render_settings_section(report)


def render_grids(report: Path | None) -> str:
    gdir = report / "grids" if report is not None else None
    if gdir is None or not gdir.is_dir():
        return _note("grids/", "stages `grids` and `tune`: appendix Notes 3, 5, 7, 9 and 11")
    parts = []
    tables = sorted(p for p in gdir.rglob("*.csv"))
    figures = sorted(p for p in gdir.rglob("*.png"))
    if not tables and not figures:
        return _note("grids/*.png", "the grids folder is empty")
    for p in figures:
        rel = p.relative_to(report).as_posix()
        title = p.stem.replace("_", " ")
        parts.append(f"## {title}\n\n" + _figure(rel, f"Grid search: {title} (`{rel}`)."))
    for p in tables:
        rel = p.relative_to(report).as_posix()
        df = pd.read_csv(p)
        shown = df.head(60)
        more = f"\n\n*First 60 of {len(df)} rows; the full table is `{rel}`.*" if len(df) > 60 else ""
        parts.append(f"## `{rel}`\n\n" + frame_to_markdown(shown, digits=3) + more)
    return "\n\n".join(parts)


def render_verdicts(report: Path | None, verdicts: pd.DataFrame | None) -> tuple[str, str]:
    """(summary, table) Markdown of the claims ledger: one verdict per published version."""
    from .claims import VERDICTS, VERSIONS, summarize

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

    from ..fidelity import PRESETS, Fidelity

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
    return frame_to_markdown(_sort(df), digits=3)


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


# --------------------------------------------------------------------------------------------------- build


def render_includes(report_dir: str | Path | None, book_dir: str | Path = "paper",
                    claims_yaml: str | Path | None | bool = None) -> dict[str, Path]:
    """Copy the report into ``book_dir/_generated/report`` and write every include; returns name → path.

    ``claims_yaml``: ``None`` uses the report's ``verdicts.csv`` when present, else evaluates ``claims.yaml`` next to
    the book folder (if it exists); a path always evaluates that file; ``False`` only uses ``verdicts.csv``.
    """
    book = Path(book_dir)
    gen = book / GENERATED
    if gen.exists():
        shutil.rmtree(gen)
    dst = gen / "report"
    dst.mkdir(parents=True)
    report = Path(report_dir) if report_dir is not None else None
    if report is not None and report.is_dir():
        for p in sorted(report.rglob("*")):
            if p.is_file() and p.suffix.lower() in COPY_SUFFIXES and GENERATED not in p.parts:
                target = dst / p.relative_to(report)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, target)
    elif report is not None:
        raise FileNotFoundError(f"book: report folder {report} does not exist (pass None for an empty book)")
    src = dst if report is not None else None

    verdicts = None
    if claims_yaml is None and src is not None and (src / "verdicts.csv").exists():
        verdicts = pd.read_csv(src / "verdicts.csv", keep_default_na=False)
    elif claims_yaml is not False:
        path = Path(claims_yaml) if claims_yaml not in (None, True) else book.resolve().parent / "claims.yaml"
        if path.exists():
            from .claims import evaluate_claims

            verdicts = evaluate_claims(path, src if src is not None else dst)
            verdicts.to_csv(dst / "verdicts.csv", index=False)
    summary, ledger = render_verdicts(src, verdicts)

    pages: dict[str, str] = {
        "verdicts_summary": summary,
        "verdicts": ledger or "",
        "table1": render_table1(src),
        "table1_agreement": render_agreement(src),
        "table1_bootstrap": render_plain(
            src, "table1_bootstrap",
            ["dataset", "metric", "reduction_pct", "reduction_pct_lb", "reduction_pct_ub", "mean_delta",
             "mean_delta_lb", "mean_delta_ub", "significant", "n_runs", "n_boot", "level"],
            digits=2, what="experiments `single` and `mutability`",
            legend="Bootstrap over individuals: percentile interval of the reduction and of the mean difference. "
                   "IP* is left out: it is one MMD per group of counterfactuals, so a bootstrap over individuals "
                   "would have to recompute the MMD for every resample; reusing the group values gave zero-width "
                   "intervals."),
        "ipstar_groupings": render_plain(
            src, "ipstar_groupings",
            ["dataset", "reduction_pct_per_run", "pm_per_run", "significant_per_run",
             "preprint_2025_07_agreement_per_run", "reduction_pct_pooled", "pm_pooled", "significant_pooled",
             "preprint_2025_07_agreement_pooled"],
            digits=2, what="experiment `single`",
            legend="IP* reduction with MMD groups per evaluation run (Table 1) and pooled over runs."),
        "table3_agreement": render_plain(
            src, "table3_agreement", ["cells", "within", "tolerance", "outside"], digits=2,
            what="experiments `single` and `mutability` with the published tables",
            legend="Table 3 cells within the tolerance of the published validity (final version)."),
        "performance": render_plain(
            src, "performance", ["dataset", "acc_ct", "acc_bl", "acc_diff", "f1_ct", "f1_bl", "n_seeds"],
            digits=3, what="experiment `single`",
            legend="Test accuracy and macro F1 of the `single` experiment's CT and BL models, mean over training "
                   "seeds."),
        "table2": render_side_by_side(
            src, "table2", {"median": "median", "lb_2_5": "2.5%", "ub_97_5": "97.5%"}, ["dataset", "model"],
            _flag_ig, "Median standardised integrated gradients on the protected features with the 2.5%/97.5% "
            "quantiles over rounds. **Bold** Δ: our median lies outside the published 95% interval.",
            what="stage `attribution`"),
        "table3": render_side_by_side(
            src, "table3", {"ct_unconstrained": "CT mut.", "bl_unconstrained": "BL mut.",
                            "ct_constrained": "CT constr.", "bl_constrained": "BL constr."}, ["dataset"],
            _flag_abs(0.05), "Average validity; unconstrained (τ_eval 0.95, experiment `single`) and constrained "
            "(τ_eval 0.5, experiment `mutability`). **Bold** Δ: more than 0.05 from the published value.",
            what="experiments `single` and `mutability`"),
        "appendix_ci": render_side_by_side(
            src, "appendix_ci", {"ct_mean_abs": "CT", "bl_mean_abs": "BL", "lb": "LB", "ub": "UB"},
            ["metric", "dataset"], _flag_rel(0.25, 0.02),
            "Mean |value| for CT and BL and the 99% interval of the per-run difference. **Bold** Δ: more than 25% "
            "(at least 0.02) from the published value.", what="experiments `single` and `mutability`"),
        "appendix_cost_unconstrained": render_plain(
            src, "appendix_cost_unconstrained", ["dataset", "metric", "reduction_pct", "pm", "significant", "lb",
                                                 "ub", "ct_mean_abs", "bl_mean_abs"],
            digits=2, what="experiment `single`",
            legend="Cost reduction without mutability constraints (published Avg. −1.74%, reference §9.6)."),
        "ablation": render_ablation(src),
        "robustness": render_robustness(src),
        "paper_figures": render_paper_figures(src),
        "grids": render_grids(src),
        "prop31_results": render_prop31(src)[0],
        "prop31_violations": render_prop31(src)[1],
        "prop31_findings": render_prop31_findings(src),
        "prop31_settings": render_prop31_settings(src),
        "provenance": render_provenance(src),
        "benchmarks": render_benchmarks(src),
        "report_index": render_index(src),
        "fidelity_switches": render_fidelity_switches(),
        "fidelity_effects": render_fidelity_effects(src),
    }
    from .consistency_book import pages as consistency_pages

    pages.update(consistency_pages(src))
    out = {}
    for name, text in pages.items():
        p = gen / f"{name}.md"
        p.write_text(text if text.endswith("\n") else text + "\n")
        out[name] = p
    return out


def _toc_files(book: Path) -> list[str]:
    import yaml

    toc = yaml.safe_load((book / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in toc.items() if k != "root"})
    return files


def committed_results(book_dir: str | Path = "paper") -> Path:
    """The committed result set next to the book sources (``<book>/results/report``); a clear error when absent
    (e.g. an installed package without the repository)."""
    report = Path(book_dir) / "results" / "report"
    if not (report / "index.json").exists():
        raise BookBuildError(f"book: no committed result set at {report} (index.json missing); pass --report DIR, "
                             "e.g. results/quick/report after `snakemake --configfile workflow/config/quick.yaml`")
    return report


def build_book(report_dir: str | Path | None, book_dir: str | Path = "paper", out_dir: str | Path | None = None,
               strict: bool = True, *, claims_yaml: str | Path | None | bool = None, timeout: float | None = 900,
               env: dict[str, str] | None = None) -> Path:
    """Render the includes from ``report_dir`` and build the HTML book; returns the path of ``index.html``.

    ``out_dir``: where ``_build/html`` goes (default: ``book_dir``). ``strict``: Sphinx warnings are errors
    (``-W --keep-going``). ``env``: environment of the ``jupyter-book`` subprocess (default: this one's).
    Raises :class:`BookBuildError` when the build fails, with the tail of its output.
    """
    book = Path(book_dir).resolve()
    missing = [f for f in _toc_files(book) if not any((book / f"{f}{s}").exists() for s in ("", ".md", ".ipynb"))]
    if missing:
        raise BookBuildError(f"book: pages listed in {book / '_toc.yml'} are missing: {missing}")
    render_includes(report_dir, book, claims_yaml=claims_yaml)
    out = Path(out_dir).resolve() if out_dir is not None else book
    cmd = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build", str(book),
           "--path-output", str(out), "--builder", "html", "--all"]
    if strict:
        cmd += ["--warningiserror", "--keep-going"]
    run_env = dict(os.environ if env is None else env)
    run_env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=book, env=run_env, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - t0
    log = proc.stdout + proc.stderr
    html = out / "_build" / "html" / "index.html"
    if proc.returncode != 0 or not html.exists():
        raise BookBuildError(f"book: jupyter-book build failed (exit {proc.returncode}, {seconds:.0f} s):\n"
                             + log[-6000:])
    return html


def main(argv: list[str] | None = None) -> int:
    """``python -m ctbench.report.book --report DIR [--book paper] [--out DIR] [--no-strict]``."""
    import argparse

    ap = argparse.ArgumentParser(prog="ctbench-book", description="build the Jupyter Book from a report folder")
    ap.add_argument("--report", required=False, help="report folder (ctbench report --out)")
    ap.add_argument("--book", default="paper")
    ap.add_argument("--out", default=None, help="folder for _build/html (default: the book folder)")
    ap.add_argument("--claims", default=None, help="claims.yaml to evaluate (default: verdicts.csv or claims.yaml)")
    ap.add_argument("--no-strict", dest="strict", action="store_false")
    args = ap.parse_args(argv)
    html = build_book(args.report, args.book, args.out, strict=args.strict, claims_yaml=args.claims)
    print(html)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
