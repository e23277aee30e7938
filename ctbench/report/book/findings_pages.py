"""The book's first page: what was found, rendered from the result files (issue 24, item 6).

:func:`render_findings` reads the claims' verdicts (``verdicts.csv``), Table 1 (``table1.csv``) and
``provenance.json`` of a report folder and writes, in this order: the run the book shows (profile, commit, date; a
book of any profile but ``paper`` says so and where the paper-scale book is), the verdict counts per published
version, the headline claims with their verdicts, the largest disagreements with their reasons, how the Table-1
cells hold over training seeds, and which claims are robust to retraining and which hang on a seed. Nothing here
is typed by hand: every number comes from the files.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd

from ...facts import VERSION_LABELS
from ...io import is_dirty
from ..common import read_report_csv, truthy
from ..text.discrepancy_text import cell_facts, facts_inputs
from .md import cell_text, md_table

#: short verdict marks for narrow tables (the ledger and this page)
MARKS = {"reproduced": "✓ reproduced", "partly": "◐ partly", "not reproduced": "✗ **not reproduced**",
         "not computable": "○ not computable", "not yet run": "*not yet run*"}


def version_label(v: str) -> str:
    return {"preprint_2025_07": "July 2025", "satml_2026": "final", "preprint_2025_03": "March 2025",
            "black2022": "Black et al. 2022"}.get(v, VERSION_LABELS.get(v, v))


def _commit_date(commit: str | None, repo: Path | None = None) -> str:
    """The committer date of ``commit`` (its 40-hex part) from the repository, '' when git does not know it."""
    if not commit:
        return ""
    sha = str(commit).split("+")[0]
    try:
        out = subprocess.run(["git", "show", "-s", "--format=%cs", sha], capture_output=True, text=True,
                             timeout=10, cwd=repo or Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def render_run(report: Path | None) -> str:
    """One paragraph: which profile, commit and date the numbers come from; a warning for a non-paper profile."""
    prov: dict = {}
    if report is not None and (report / "provenance.json").exists():
        try:
            prov = json.loads((report / "provenance.json").read_text())
        except (OSError, json.JSONDecodeError):
            prov = {}
    profile = prov.get("profile") or "unknown"
    commit = prov.get("git_commit")
    date = _commit_date(commit)
    written = str(prov.get("written_utc") or "")[:10]
    who = (f"commit `{str(commit)[:7]}`" + (" with uncommitted changes" if commit and is_dirty(commit) else "")
           if commit else "an unrecorded commit")
    text = (f"**The run shown.** Profile `{profile}`; the report was written"
            + (f" on {written}" if written else "") + f" at {who}"
            + (f" (committed {date})" if date else "") + "; the code versions of its inputs are listed below.\n")
    if profile != "paper":
        text = ("```{warning}\n"
                f"This book shows the **`{profile}`** profile, not the paper-scale run: fewer datasets, seeds or "
                "evaluation runs, so its verdicts are not the reproduction's. The paper-scale book builds from the "
                "committed result set with `ctbench book` (its default report folder is `paper/results/report`).\n"
                "```\n\n") + text
    return text


def _counts(verdicts: pd.DataFrame) -> str:
    from ..claims import VERDICTS, VERSIONS, summarize

    cols = [v for v in VERSIONS if f"verdict_{v}" in verdicts.columns
            and (verdicts[f"verdict_{v}"].astype(str) != "").any()]
    counts = {v: summarize(verdicts[verdicts[f"verdict_{v}"].astype(str) != ""], f"verdict_{v}") for v in cols}
    n = {v: int((verdicts[f"verdict_{v}"].astype(str) != "").sum()) for v in cols}
    rows = [[MARKS.get(k, k), *[str(counts[v][k]) for v in cols]] for k in VERDICTS]
    rows.append(["claims judged", *[str(n[v]) for v in cols]])
    return md_table(["verdict", *[f"vs {version_label(v)}" for v in cols]], rows)


def _headlines(verdicts: pd.DataFrame) -> str:
    if "headline" not in verdicts.columns:
        return ""
    head = verdicts[verdicts["headline"].map(lambda v: truthy(v) is True)]
    if head.empty:
        return ""
    rows = []
    for _, r in head.iterrows():
        others = "; ".join(f"{version_label(v)}: {MARKS.get(str(r[f'verdict_{v}']), r[f'verdict_{v}'])}"
                           for v in ("satml_2026", "preprint_2025_03", "black2022")
                           if f"verdict_{v}" in r and str(r[f"verdict_{v}"]) and v != r.get("version"))
        ours = (cell_text(r["ours"]) or "—") if len(str(r["ours"])) <= 40 else "see the ledger"
        version = str(r.get("version"))
        vs = "" if version == "preprint_2025_07" else f" <small>(vs {version_label(version)})</small>"
        rows.append([f"{cell_text(r['text'])}<br><small>`{r['claim']}`</small>",
                     f"{cell_text(r['published'])} / {ours}",
                     MARKS.get(str(r["verdict"]), cell_text(r["verdict"])) + vs
                     + (f"<br><small>{others}</small>" if others else "")])
    return md_table(["headline claim", "published / ours", "verdict vs July 2025"], rows)


def _disagreements(verdicts: pd.DataFrame, table1: pd.DataFrame | None, report: Path | None, top: int = 5) -> str:
    out = []
    bad = verdicts[verdicts["verdict"].astype(str) == "not reproduced"]
    if not bad.empty:
        out.append(f"**Not reproduced against the July 2025 preprint ({len(bad)} claims)**, with the rule's reason:\n")
        for _, r in bad.iterrows():
            note = str(r["note"]).split(";")[0]
            out.append(f"- `{r['claim']}`: {cell_text(r['text'])} — {cell_text(note)}")
        out.append("")
    if table1 is not None and {"diff_pct", "pub_reduction_pct"} <= set(table1.columns):
        t = table1[table1["dataset"] != "Avg."].copy()
        t["_abs"] = pd.to_numeric(t["diff_pct"], errors="coerce").abs()
        t = t.dropna(subset=["_abs"]).sort_values("_abs", ascending=False, kind="stable").head(top)
        if not t.empty:
            ver = version_label(str(t["pub_version"].iloc[0])) if "pub_version" in t.columns else "July 2025"
            out.append(f"**The {len(t)} Table-1 cells farthest from the {ver} preprint**, each with what the result "
                       "files say about it (the [discrepancies chapter](discrepancies.md) has every cell that does "
                       "not agree and the fidelity switches that move it):\n")
            inputs = facts_inputs(report) if report is not None else (None, None, None)
            for _, r in t.iterrows():
                facts = cell_facts(r, *inputs)
                out.append(f"- **{r['dataset']} {cell_text(r['metric'])}**: ours {float(r['reduction_pct']):.2f}, "
                           f"published {float(r['pub_reduction_pct']):.2f} (Δ {float(r['diff_pct']):+.2f} pp)."
                           + (f" {cell_text('; '.join(facts))}." if facts else ""))
            out.append("")
    return "\n".join(out)


def _seeds(table1: pd.DataFrame | None, cells: pd.DataFrame | None = None) -> str:
    """The Table-1 cells over training seeds: the seed-level interval (the profile's seeds, ``table1.csv``) and the
    widest ranges, over every seed ``cells`` (``table1_seeds.csv``: the retrain stage's seeds too) has."""
    if table1 is None or "seed_significant" not in table1.columns or "n_seeds" not in table1.columns:
        return ""
    t = table1[(table1["dataset"] != "Avg.") & pd.to_numeric(table1["n_seeds"], errors="coerce").gt(1)]
    if t.empty:
        return ""
    n = int(pd.to_numeric(t["n_seeds"], errors="coerce").max())
    sig = t["seed_significant"].map(truthy)
    pos = pd.to_numeric(t["seed_mean"], errors="coerce") > 0
    held = int((sig.eq(True) & pos).sum())
    neg = int((sig.eq(True) & ~pos).sum())
    unsure = int(sig.eq(False).sum())
    hang = ", ".join(f"{r['dataset']} {cell_text(r['metric'])}" for _, r in t[sig.eq(False)].iterrows())
    return (f"**Over training seeds.** Each Table-1 cell was also computed per training seed ({n} seeds): the "
            f"interval over seeds shows a reduction on {held} of {len(t)} cells, an increase on {neg}, and "
            f"includes 0 on {unsure}" + (f" ({hang}): there the sign hangs on which models were trained" if hang
                                         else "") + "." + _spreads(t, cells) + "\n")


def _seed_values(t: pd.DataFrame, cells: pd.DataFrame | None) -> dict[tuple[str, str], list[float]]:
    """Each cell's reductions per training seed: from ``cells`` (every seed, retrain seeds included) where it has
    the cell, else from ``table1.csv``'s ``seed_values`` (the profile's seeds)."""
    out = {}
    for _, r in t.iterrows():
        out[(str(r["dataset"]), str(r["metric"]))] = [
            float(x) for x in str(r.get("seed_values", "") or "").split() if x not in ("nan", "")]
    if cells is not None and {"dataset", "metric", "seed", "reduction_pct"} <= set(cells.columns):
        for (d, m), g in cells.groupby(["dataset", "metric"], sort=False):
            vals = pd.to_numeric(g.sort_values("seed")["reduction_pct"], errors="coerce").dropna().tolist()
            if (str(d), str(m)) in out and vals:
                out[(str(d), str(m))] = vals
    return out


def _spreads(t: pd.DataFrame, cells: pd.DataFrame | None = None, top: int = 3) -> str:
    """The cells whose per-seed reductions spread the most, as a sentence."""
    rows = []
    per_cell = _seed_values(t, cells)
    for _, r in t.iterrows():
        vals = per_cell[(str(r["dataset"]), str(r["metric"]))]
        if len(vals) > 1:
            rows.append((max(vals) - min(vals), r["dataset"], r["metric"], min(vals), max(vals), len(vals)))
    if not rows:
        return ""
    rows.sort(key=lambda x: -x[0])
    parts = [f"{d} {cell_text(m)} from {lo:+.1f} to {hi:+.1f}% over {k} seeds" for _, d, m, lo, hi, k in rows[:top]]
    return (" The paper's ± covers redrawn individuals for one trained pair of models, not retraining; the widest "
            "ranges of a cell's reduction over training seeds: " + "; ".join(parts) + ".")


def _claim_name(r: pd.Series) -> str:
    """A Table-1 cell as "Moon IP*", any other claim as its id."""
    cid = str(r["claim"])
    if cid.startswith("t1_"):
        text = str(r.get("text", ""))
        tail = text.rsplit(" on ", 1)[-1] if " on " in text else cid
        metric = "IP*" if "_ipstar_" in cid else "Cost" if "_cost_" in cid else "IP"
        return f"{tail} {metric}"
    return f"`{cid}`"


def _held(r: pd.Series) -> str:
    return f"{_claim_name(r)} ({r['seeds_held']})"


def render_retraining(verdicts: pd.DataFrame) -> str:
    """How robust the claims are to retraining: the share of training seeds under which each claim holds on its own
    (``verdicts.csv``'s ``seed_*`` columns, :mod:`ctbench.report.claims.seeds`), headline claims by name, Table-1
    cells by dataset and metric; '' when the report judged no claim per seed."""
    from ..claims.seeds import HANGS, NEVER, ROBUST, ROBUST_SHARE

    if "seed_share" not in verdicts.columns:
        return ""
    v = verdicts.assign(_share=pd.to_numeric(verdicts["seed_share"], errors="coerce")).dropna(subset=["_share"])
    if v.empty:
        return ""
    v = v.assign(_n=v["seeds_held"].astype(str).str.split(" of ").str[-1].astype(int))
    head = v[v["headline"].map(lambda x: truthy(x) is True)] if "headline" in v else v.iloc[:0]
    cells = v[v["claim"].astype(str).str.startswith("t1_")]
    n_seeds = f"{v['_n'].min()}" if v["_n"].min() == v["_n"].max() else f"{v['_n'].min()}-{v['_n'].max()}"
    parts = [f"**How robust each claim is to retraining.** Every claim whose table can be cut by training seed was "
             f"judged again on each seed alone ({n_seeds} seeds), with the same rule as its pooled verdict; the "
             f"share of seeds under which it is reproduced is in the [ledger](claims.md) beside the verdict. A claim "
             f"is *robust* when it holds under at least {100 * ROBUST_SHARE:.0f}% of the seeds, and *hangs on the "
             f"seed* when it holds under some seeds but not others. {len(v)} claims were judged per seed: "
             f"{(v['seed_robustness'] == ROBUST).sum()} robust, {(v['seed_robustness'] == HANGS).sum()} hang on "
             f"the seed, {(v['seed_robustness'] == NEVER).sum()} hold on no seed alone."]
    for label, what in ((ROBUST, "Robust"), (HANGS, "Hang on the seed"), (NEVER, "Hold on no seed alone")):
        h = head[head["seed_robustness"] == label]
        c = cells[cells["seed_robustness"] == label]
        if h.empty and c.empty:
            continue
        line = f"- *{what}*: "
        bits = []
        if not h.empty:
            bits.append("headline claims " + ", ".join(_held(r) for _, r in h.iterrows()))
        if not c.empty:
            bits.append(f"{len(c)} of {len(cells)} Table-1 cells: " + ", ".join(_held(r) for _, r in c.iterrows()))
        parts.append(line + "; ".join(bits) + ".")
    lucky = v[(v["verdict"] == "reproduced") & (v["_share"] < 0.5)]
    unlucky = v[v["verdict"].isin(["partly", "not reproduced"]) & (v["_share"] >= ROBUST_SHARE)]
    if not lucky.empty:
        parts.append("- *Reproduced pooled, but under fewer than half of the seeds alone* (the pooled verdict hangs on "
                     "averaging over seeds): " + ", ".join(_held(r) for _, r in lucky.iterrows()) + ".")
    if not unlucky.empty:
        parts.append("- *Partly or not reproduced pooled, though at least 80% of the seeds alone reproduce it*: "
                     + ", ".join(f"{_held(r)}, pooled {r['verdict']}" for _, r in unlucky.iterrows()) + ".")
    uncut = verdicts[verdicts["headline"].map(lambda x: truthy(x) is True)
                     & pd.to_numeric(verdicts["seed_share"], errors="coerce").isna()
                     & ~verdicts.get("seed_note", pd.Series("", index=verdicts.index)).astype(str)
                     .str.startswith("not judged per seed")] if "headline" in verdicts else verdicts.iloc[:0]
    if not uncut.empty:
        files = ", ".join(dict.fromkeys(f"`{f}`" for f in uncut["file"])) if "file" in uncut else ""
        why = "their tables" + (f", {files}," if files else "") + " are not made per training seed"
        if "file" in uncut and uncut["file"].astype(str).str.startswith("consistency").any():
            why += "; the consistency study's invalidation rates are themselves over retrained models"
        parts.append("- *Headline claims not cut by seed*: " + ", ".join(f"`{c}`" for c in uncut["claim"])
                     + f" ({why}).")
    untimed = verdicts[verdicts.get("seed_note", pd.Series("", index=verdicts.index)).astype(str)
                       .str.startswith("not judged per seed")] if "seed_note" in verdicts else verdicts.iloc[:0]
    if not untimed.empty:
        parts.append("- *Not judged per seed*: " + ", ".join(f"`{c}`" for c in untimed["claim"]) + " ("
                     + str(untimed["seed_note"].iloc[0])[len("not judged per seed: "):] + ").")
    return "\n".join(parts) + "\n"


def render_findings(report: Path | None, verdicts: pd.DataFrame | None) -> str:
    """Markdown for the top of the book's first page: what was found, from the result files."""
    parts = [render_run(report)]
    if verdicts is None or verdicts.empty:
        parts.append("No claims were judged: the report folder has no `verdicts.csv`.\n")
        return "\n".join(parts)
    table1 = read_report_csv(report, "table1.csv")
    parts += ["**Verdicts per published version** (every claim of the [claims ledger](claims.md) is judged once per "
              "version that makes it):\n", _counts(verdicts)]
    head = _headlines(verdicts)
    if head:
        parts += ["**The headline claims:**\n", head]
    dis = _disagreements(verdicts, table1, report)
    if dis:
        parts.append(dis)
    seeds = _seeds(table1, read_report_csv(report, "table1_seeds.csv"))
    if seeds:
        parts.append(seeds)
    retrain = render_retraining(verdicts)
    if retrain:
        parts.append(retrain)
    return "\n".join(parts)
