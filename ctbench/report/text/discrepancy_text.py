"""The prose of the discrepancies chapter, with every number read from the result files (issue 14: prose that
matches its numbers).

Two renderers, each included by ``paper/discrepancies.md``:

* :func:`render_table1_findings` — how Table 1 and Table 3 agree with the published versions
  (``table1.csv``, ``table1_agreement.csv``, ``table3.csv``, ``table3_agreement.csv``), and for each cell that does
  not agree with the July 2025 preprint the facts that bear on it: the value per training seed, the seed-level
  interval, seeds whose model trained worse than the dataset's best seed (``performance_seeds.csv``), CT's accuracy
  gap to BL, CT's validity against the published one, whether the authors' own versions agree with each other, and
  the cell on each training seed alone with the number of seeds that reach July and the final version
  (``table1_seeds.csv``, :func:`seed_agreement`).
* :func:`render_switch_findings` — what each fidelity switch does to the cells it touches
  (``fidelity_effects.csv``), with the published July value beside and a count of the cells that agree with July under
  each setting.

The text states only what the files show; interpretations that cannot be read off the numbers are left to the
chapter's fixed prose, which carries no numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...experiments.fidelity_switches import SWITCHES
from ...facts import VERSION_LABELS
from ..claims.cell_seeds import CELL_SEEDS_FILE
from ..claims.schema import REPRODUCED
from ..common import dataset_label, read_report_csv
from ..tables.table1 import AGREE, PRIMARY, agreement, published_versions

#: this reproduction's target for Table 1 (issue 11): cells agreeing with July or inside the authors' range
TABLE1_TARGET = 24
#: a seed whose test accuracy is this far below the dataset's best seed is called out as trained worse
ACC_GAP = 0.01
#: CT losing more accuracy than this to BL is called out
ACC_LOSS = 0.02
#: CT validity this far below the published one is called out
VALIDITY_GAP = 0.05


def _star(sig) -> str:
    return "\\*" if (not pd.isna(sig) and bool(sig)) else ""


def _cell(v, pm=None, sig=None, digits: int = 1) -> str:
    if v is None or pd.isna(v):
        return "—"
    s = f"{float(v):.{digits}f}"
    if pm is not None and not pd.isna(pm):
        s += f" ± {float(pm):.{digits}f}"
    return s + _star(sig)


def _num(v, digits: int = 1) -> str:
    return "—" if v is None or pd.isna(v) else f"{float(v):.{digits}f}"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# ------------------------------------------------------------------------------------------------ Table 1 and 3
def _counts(agr: pd.DataFrame) -> str:
    a = agr.set_index("version")
    parts = []
    for v in ("preprint_2025_07", "satml_2026"):
        if v in a.index:
            parts.append(f"{int(a.loc[v, AGREE])} of the {int(a.loc[v, 'cells'])} cells of the "
                         f"{VERSION_LABELS[v]}")
    text = "It agrees in sign and significance with " + _join(parts) + "."
    if "target" in a.index:
        n = int(a.loc["target", AGREE])
        text += (f" {n} cells reach this reproduction's target (agreement with the July preprint, or a value inside "
                 f"the range of the authors' own versions), {'short of' if n < TABLE1_TARGET else 'meeting'} the "
                 f"{TABLE1_TARGET} aimed for.")
    return text


def _table3(report: Path) -> str:
    agr = read_report_csv(report, "table3_agreement.csv")
    if agr is None or not len(agr):
        return ""
    r = agr.iloc[0]
    text = (f"Table 3: {int(r['within'])} of {int(r['cells'])} validity cells lie within {float(r['tolerance']):.2f} "
            f"of the final version's")
    outside = str(r.get("outside", "") or "")
    if outside and outside != "nan":
        text += f"; outside: {outside.replace(';', ',')}"
    return text + "."


def _seed_facts(r: pd.Series, perf: pd.DataFrame | None) -> list[str]:
    out = []
    vals = [float(x) for x in str(r.get("seed_values", "") or "").split()]
    if len(vals) > 1:
        out.append(f"per training seed {', '.join(_num(v) for v in vals)}; seed-level 95% interval "
                   f"[{_num(r['seed_lb'])}, {_num(r['seed_ub'])}]"
                   + (" (excludes 0)" if bool(r.get("seed_significant")) else " (includes 0)"))
    if perf is None or len(vals) < 2:
        return out
    p = perf[perf["dataset"] == r["dataset"]].sort_values("seed").reset_index(drop=True)
    if len(p) != len(vals):
        return out
    for who, col in (("BL", "acc_bl"), ("CT", "acc_ct")):
        best = p[col].max()
        worse = p[p[col] < best - ACC_GAP]
        if len(worse):
            seeds = worse.index.tolist()
            rest = [i for i in range(len(p)) if i not in seeds]
            out.append(f"the {who} models of seed(s) {_join([str(int(p.loc[i, 'seed'])) for i in seeds])} reach "
                       f"test accuracy {_join([_num(p.loc[i, col], 3) for i in seeds])} against {_num(best, 3)} "
                       f"for the best seed; those seeds give {_join([_num(vals[i]) for i in seeds])}, the others "
                       f"{_join([_num(vals[i]) for i in rest])}" if rest else "")
    return [o for o in out if o]


def _validity_fact(r: pd.Series, t3: pd.DataFrame | None) -> str:
    if t3 is None:
        return ""
    col = "ct_constrained" if r["metric"] == "Cost" else "ct_unconstrained"
    row = t3[t3["dataset"] == r["dataset"]]
    if not len(row) or f"pub_{col}" not in row:
        return ""
    ours, pub = float(row[col].iloc[0]), float(row[f"pub_{col}"].iloc[0])
    if np.isfinite(pub) and ours < pub - VALIDITY_GAP:
        return (f"CT's validity here is {ours:.2f} against {pub:.2f} published, so its valid counterfactuals are a "
                f"more selected subset")
    return ""


def _versions_fact(r: pd.Series) -> str:
    vals = []
    for v in ("preprint_2025_07", "satml_2026", "preprint_2025_03"):
        x = r.get(f"{v}_reduction_pct")
        if x is not None and not pd.isna(x):
            vals.append((v, float(x), r.get(f"{v}_significant")))
    if len(vals) < 2:
        return ""
    signs = {np.sign(x) for _, x, _ in vals}
    stars = {bool(s) for _, _, s in vals if not pd.isna(s)}
    if len(signs) > 1 or len(stars) > 1:
        agree = [VERSION_LABELS[v] for v, _, _ in vals if r.get(f"{v}_agreement") == AGREE]
        text = "the authors' own versions disagree with each other here"
        return text + (f"; ours agrees with the {_join(agree)}" if agree else "")
    return ""


def render_table1_findings(report: str | Path) -> str:
    """Markdown: agreement counts, then one bullet per Table-1 cell that does not agree with the July preprint."""
    report = Path(report)
    t1, agr = read_report_csv(report, "table1.csv"), read_report_csv(report, "table1_agreement.csv")
    if t1 is None or agr is None:
        return "*Table 1 has not been computed for this result set.*\n"
    perf, mean_perf, t3 = facts_inputs(report)
    per_seed = read_report_csv(report, CELL_SEEDS_FILE)
    n_seeds = int(t1["n_seeds"].max()) if "n_seeds" in t1 and t1["n_seeds"].notna().any() else 1
    lines = [f"The result set has {n_seeds} training seed{'s' if n_seeds != 1 else ''} per model. " + _counts(agr)
             + " " + _table3(report), ""]
    cells = t1[(t1["dataset"] != "Avg.") & (t1[f"{PRIMARY}_agreement"] != AGREE)
               & t1[f"{PRIMARY}_agreement"].notna()]
    if len(cells):
        lines.append("The cells that do not agree with the July preprint, with what the result files say about each:")
        lines.append("")
    for _, r in cells.iterrows():
        v07, vfin = "preprint_2025_07", "satml_2026"
        metric = str(r["metric"]).replace("*", "\\*")
        head = (f"- **{r['dataset']} {metric}** ({r[f'{PRIMARY}_agreement']}): ours "
                f"{_cell(r['reduction_pct'], r['pm'], r['significant'])}; July "
                f"{_cell(r[f'{v07}_reduction_pct'], r[f'{v07}_pm'], r[f'{v07}_significant'])}, final "
                f"{_cell(r[f'{vfin}_reduction_pct'], r[f'{vfin}_pm'], r[f'{vfin}_significant'])}.")
        facts = cell_facts(r, perf, mean_perf, t3)
        seeds = seed_agreement(per_seed, r["dataset"], r["metric"])
        lines.append(head + (" " + "; ".join(facts) + "." if facts else "") + (" " + seeds if seeds else ""))
    return "\n".join(lines) + "\n"


def _seed_range(seeds: list[int]) -> str:
    return (f"{seeds[0]}–{seeds[-1]}" if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1))
            else _join([str(s) for s in seeds]))


def seed_agreement(per_seed: pd.DataFrame | None, dataset: str, metric: str) -> str:
    """The cell on each training seed alone (``table1_seeds.csv``), how many seeds reach the July value and how
    many the final version's (the ledger's cell rule: same sign and significance, magnitude within the tolerance),
    and whether the gap to July lies within training-seed variation; '' when the file has no row for the cell."""
    if per_seed is None:
        return ""
    g = per_seed[(per_seed["dataset"] == dataset) & (per_seed["metric"] == metric)].sort_values("seed")
    if not len(g):
        return ""
    have = g[pd.to_numeric(g["reduction_pct"], errors="coerce").notna()]
    missing = [int(s) for s in g.loc[~g.index.isin(have.index), "seed"]]
    n = len(have)
    if not n:
        return f"No training seed alone has a value for this cell (seeds {_seed_range(missing)})."
    values = "; ".join(f"seed {int(x.seed)} {_cell(x.reduction_pct, None, x.significant)}"
                       for x in have.itertuples())
    absent = []
    if missing:
        notes = g.loc[~g.index.isin(have.index)]
        why = notes["note"].fillna("").astype(str) if "note" in notes else pd.Series("", index=notes.index)
        for reason, seeds in notes.groupby(why, sort=False)["seed"]:
            on = [int(x) for x in seeds]
            absent.append(f"no value on seed{'s' if len(on) > 1 else ''} {_seed_range(on)}"
                          + (f": {reason}" if reason else ""))
    text = (f"On each of the {n} training seed{'s' if n != 1 else ''} alone that {'have' if n != 1 else 'has'} it: "
            f"{values}" + "".join(f"; {a}" for a in absent) + ".")
    reach = {}
    for v, name in (("preprint_2025_07", "the July value"), ("satml_2026", "the final version's")):
        k = int((have[f"verdict_{v}"] == REPRODUCED).sum())
        tol = pd.to_numeric(have[f"tolerance_{v}"], errors="coerce").dropna()
        reach[v] = k
        text += (f" {k} of {n} reach {name}" + (f" (same sign and significance, magnitude within ±{tol.iloc[0]:g})"
                                                 if len(tol) else "") + ("," if v == "preprint_2025_07" else "."))
    k = reach["preprint_2025_07"]
    if k == 0:
        text += (" No seed reaches the July value: the gap to July is not training-seed variation"
                 + (f" (the final version's value is reached on {reach['satml_2026']} of {n})."
                    if reach["satml_2026"] else "; nor does any seed reach the final version's."))
    else:
        text += f" The gap to July lies within training-seed variation: {k} of {n} seeds agree with July."
    return text


def facts_inputs(report: Path) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame | None]:
    """The files :func:`cell_facts` reads: per-seed and mean performance, and Table 3."""
    return (read_report_csv(report, "performance_seeds.csv"), read_report_csv(report, "performance.csv"),
            read_report_csv(report, "table3.csv"))


def cell_facts(r: pd.Series, perf: pd.DataFrame | None, mean_perf: pd.DataFrame | None,
               t3: pd.DataFrame | None) -> list[str]:
    """What the result files say about one Table-1 cell (a row of ``table1.csv``): its flag, the value per training
    seed and seeds that trained worse, CT's accuracy loss, CT's validity against the published one, and whether the
    authors' own versions disagree; the first fact capitalised. Shared by the discrepancies chapter and the book's
    first page."""
    facts = []
    flag = r.get("flag") if isinstance(r.get("flag"), str) else ""
    if flag:
        facts.append(flag)
    if not flag.startswith("not computable"):
        facts += _seed_facts(r, perf)
    p = mean_perf[mean_perf["dataset"] == r["dataset"]] if mean_perf is not None else []
    if len(p) and float(p["acc_diff"].iloc[0]) < -ACC_LOSS:
        facts.append(f"CT's test accuracy is {100 * -float(p['acc_diff'].iloc[0]):.1f} percentage points below "
                     f"BL's ({float(p['acc_ct'].iloc[0]):.3f} vs {float(p['acc_bl'].iloc[0]):.3f}, mean over "
                     f"seeds)")
    facts += [f for f in (_validity_fact(r, t3), _versions_fact(r)) if f]
    if facts:
        facts[0] = facts[0][0].upper() + facts[0][1:]
    return facts


# ------------------------------------------------------------------------------------------------ switches
def _july(published_dir: str | Path | None) -> pd.DataFrame | None:
    if published_dir is None:
        return None
    pub = published_versions(published_dir)
    return pub[pub["version"] == PRIMARY].set_index(["dataset", "metric"])


def render_switch_findings(report: str | Path, published_dir: str | Path | None = None) -> str:
    """Markdown: per switch, the cells it is about under both settings, July beside, and an agreement count."""
    eff = read_report_csv(Path(report), "fidelity_effects.csv")
    if eff is None or not len(eff):
        return "*The fidelity study has not run for this result set.*\n"
    july = _july(published_dir)
    lines = []
    for switch, g in eff.groupby("switch", sort=False):
        metrics = SWITCHES[switch].metrics if switch in SWITCHES else ("IP", "IP*", "Cost")
        rows = g[g["metric"].isin(metrics) & g["reference"].notna()]
        if not len(rows):
            continue
        ref_set, pap_set = str(g["reference_setting"].iloc[0]), str(g["paper_setting"].iloc[0])
        n_seeds = int(g["n_seeds"].iloc[0]) if "n_seeds" in g and pd.notna(g["n_seeds"].iloc[0]) else 1
        parts, counts = [], {"reference": 0, "paper": 0}
        n_cmp = 0
        for _, r in rows.iterrows():
            label = dataset_label(r["dataset"])
            # Table 1's Cost column is the constrained (mutability) one; the single experiment's Cost is not it
            comparable = r["metric"] != "Cost" or r.get("experiment") == "mutability"
            pub = july.loc[(label, r["metric"])] if (july is not None and comparable
                                                      and (label, r["metric"]) in july.index) else None
            ref = _cell(r["reference"], r.get("pm_reference"), r.get("significant_reference"))
            pap = _cell(r["paper"], r.get("pm_paper"), r.get("significant_paper"))
            metric = str(r["metric"]).replace("*", "\\*")
            text = f"{label} {metric} {ref} with {ref_set}, {pap} with {pap_set}"
            if pub is not None:
                text += f" (July {_cell(pub['reduction_pct'], pub['pm'], pub['significant'])})"
                n_cmp += 1
                for setting in counts:
                    if agreement(r[setting], r.get(f"significant_{setting}"), pub["reduction_pct"],
                                 pub["significant"]) == AGREE:
                        counts[setting] += 1
            parts.append(text)
        line = (f"- **`{switch}`** ({n_seeds} training seed{'s' if n_seeds != 1 else ''}): " + "; ".join(parts) + ".")
        if n_cmp:
            line += (f" In sign and significance {counts['paper']} of these {n_cmp} cells agree with July with "
                     f"{pap_set}, {counts['reference']} with {ref_set}.")
        if switch == "redraw_per_lambda":
            pm = g[g["metric"].isin(("IP", "IP*", "Cost"))][["pm_reference", "pm_paper"]].astype(float)
            ratio = (pm["pm_paper"] / pm["pm_reference"]).replace([np.inf, -np.inf], np.nan).dropna()
            if len(ratio):
                line += (f" One draw for all λ's makes the ± {ratio.median():.2f} times as wide (median over these "
                         f"cells; √5 = {np.sqrt(5):.2f} if the five λ's were perfectly correlated).")
        if switch == "synthetic_mutability_zero_reg_adv":
            v = g[g["metric"] == "validity CT"]
            if len(v):
                line += (" CT validity (constrained) " + "; ".join(
                    f"{dataset_label(d)} {float(a):.3f} with {ref_set}, {float(b):.3f} with {pap_set}"
                    for d, a, b in zip(v["dataset"], v["reference"], v["paper"], strict=True)) + ".")
        lines.append(line)
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ variant runs
def variant_folders(report: str | Path) -> list[Path]:
    """Report folders of the same tables made under another fidelity preset, kept beside the result set as
    ``<report>/../variants/<name>/`` (``paper/results/variants/`` for the committed set)."""
    root = Path(report).parent / "variants"
    return sorted(p for p in root.iterdir() if (p / "table1.csv").exists()) if root.is_dir() else []


def _agree_count(agr: pd.DataFrame | None, version: str) -> int | None:
    if agr is None:
        return None
    a = agr.set_index("version")
    return int(a.loc[version, AGREE]) if version in a.index else None


def render_variant_findings(report: str | Path) -> str:
    """Markdown: for each variant run, Table 1's agreement counts beside the default run's, and the cells whose
    agreement with the July preprint changes between the two (both values and the published one)."""
    report = Path(report)
    base_t1, base_agr = read_report_csv(report, "table1.csv"), read_report_csv(report, "table1_agreement.csv")
    variants = variant_folders(report)
    if base_t1 is None or not variants:
        return "*No variant run is kept beside this result set.*\n"
    lines = []
    for folder in variants:
        t1, agr = read_report_csv(folder, "table1.csv"), read_report_csv(folder, "table1_agreement.csv")
        name = folder.name
        counts = []
        for v in ("preprint_2025_07", "satml_2026", "target"):
            ours, theirs = _agree_count(base_agr, v), _agree_count(agr, v)
            if ours is not None and theirs is not None:
                what = ("reach the target (July agreement or inside the authors' range)" if v == "target"
                        else f"agree in sign and significance with the {VERSION_LABELS[v]}")
                counts.append(f"{theirs} cells {what} (default run: {ours})")
        t3, t3_base = read_report_csv(folder, "table3_agreement.csv"), read_report_csv(report, "table3_agreement.csv")
        table3 = (f" Table 3: {int(t3['within'].iloc[0])} of {int(t3['cells'].iloc[0])} validity cells within "
                  f"{float(t3['tolerance'].iloc[0]):.2f} of the final version's (default run: "
                  f"{int(t3_base['within'].iloc[0])})." if t3 is not None and t3_base is not None else "")
        n_seeds = int(t1["n_seeds"].max()) if "n_seeds" in t1 and t1["n_seeds"].notna().any() else 1
        lines += [f"**`fidelity: {name}`** ({n_seeds} training seed{'s' if n_seeds != 1 else ''}, the default run's "
                  f"protocol otherwise): " + "; ".join(counts) + "." + table3, ""]
        col = f"{PRIMARY}_agreement"
        m = base_t1.merge(t1, on=["dataset", "metric"], suffixes=("_default", "_variant"))
        m = m[(m["dataset"] != "Avg.") & (m[f"{col}_default"] != m[f"{col}_variant"])]
        if not len(m):
            lines += ["No cell changes its agreement with the July preprint.", ""]
            continue
        lines += ["| cell | July | default | " + name + " | agreement with July |", "|---|---|---|---|---|"]
        v07 = "preprint_2025_07"
        for _, r in m.iterrows():
            metric = str(r["metric"]).replace("*", "\\*")
            july = _cell(r[f"{v07}_reduction_pct_default"], r[f"{v07}_pm_default"], r[f"{v07}_significant_default"])
            lines.append(
                f"| {r['dataset']} {metric} | {july} "
                f"| {_cell(r['reduction_pct_default'], r['pm_default'], r['significant_default'])} "
                f"| {_cell(r['reduction_pct_variant'], r['pm_variant'], r['significant_variant'])} "
                f"| {r[f'{col}_default']} → {r[f'{col}_variant']} |")
        lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ issue 25's target
def _seed_cause(per_seed: pd.DataFrame | None, dataset: str, metric: str) -> str:
    """'k of n training seeds alone reach July (j the final version's)' when some seed reaches either, else ''."""
    if per_seed is None:
        return ""
    g = per_seed[(per_seed["dataset"] == dataset) & (per_seed["metric"] == metric)]
    g = g[pd.to_numeric(g["reduction_pct"], errors="coerce").notna()]
    if not len(g):
        return ""
    k07 = int((g["verdict_preprint_2025_07"] == REPRODUCED).sum())
    kfin = int((g["verdict_satml_2026"] == REPRODUCED).sum())
    if not (k07 or kfin):
        return ""
    return (f"training-seed variation: {k07} of {len(g)} seeds alone reach July, {kfin} the final version's "
            f"(`table1_seeds.csv`)")


def _variant_causes(variants: list[Path], dataset: str, metric: str) -> list[str]:
    """The variant runs (another fidelity preset, same seeds and protocol) in which the cell agrees with July."""
    out = []
    col = f"{PRIMARY}_agreement"
    for folder in variants:
        t1 = read_report_csv(folder, "table1.csv")
        if t1 is None:
            continue
        row = t1[(t1["dataset"] == dataset) & (t1["metric"] == metric)]
        if len(row) and row[col].iloc[0] == AGREE:
            out.append(f"`fidelity: {folder.name}` (the code of that version, same seeds) gives "
                       f"{_cell(row['reduction_pct'].iloc[0], row['pm'].iloc[0], row['significant'].iloc[0])}, "
                       f"in sign and significance with July")
    return out


def render_table1_causes(report: str | Path, variants_of: str | Path | None = None) -> str:
    """Markdown: issue 25's Table-1 target, judged from the files. Every cell (Avg. excluded) either agrees in sign
    and significance with the July preprint or the final version, or carries a measured cause: some training seed
    alone reaches a published value (``table1_seeds.csv``, the retrain stage's re-runs), or a variant run under
    another version's code agrees with July (``variants/*/table1.csv`` beside ``variants_of``, default ``report``).
    One row per cell that agrees with neither version, then the count and the verdict."""
    report = Path(report)
    t1 = read_report_csv(report, "table1.csv")
    if t1 is None:
        return "*Table 1 has not been computed for this result set.*\n"
    versions = [c for c in (f"{PRIMARY}_agreement", "satml_2026_agreement") if c in t1]
    if len(versions) < 2:
        return "*This result set's Table 1 has no cell compared with the July preprint and the final version.*\n"
    per_seed = read_report_csv(report, CELL_SEEDS_FILE)
    variants = variant_folders(variants_of if variants_of is not None else report)
    cells = t1[(t1["dataset"] != "Avg.") & t1[f"{PRIMARY}_agreement"].notna()]
    agree = cells[(cells[f"{PRIMARY}_agreement"] == AGREE) | (cells["satml_2026_agreement"] == AGREE)]
    rest = cells.drop(agree.index)
    rows, uncaused = [], []
    v07, vfin = "preprint_2025_07", "satml_2026"
    for _, r in rest.iterrows():
        causes = [c for c in [_seed_cause(per_seed, r["dataset"], r["metric"])] if c]
        causes += _variant_causes(variants, r["dataset"], r["metric"])
        metric = str(r["metric"]).replace("*", "\\*")
        if not causes:
            uncaused.append(f"{r['dataset']} {metric}")
        rows.append(f"| {r['dataset']} {metric} | {_cell(r['reduction_pct'], r['pm'], r['significant'])} "
                    f"| {_cell(r[f'{v07}_reduction_pct'], r[f'{v07}_pm'], r[f'{v07}_significant'])} "
                    f"| {_cell(r[f'{vfin}_reduction_pct'], r[f'{vfin}_pm'], r[f'{vfin}_significant'])} "
                    f"| {'; '.join(causes) if causes else 'none measured'} |")
    n, k = len(cells), len(agree)
    text = (f"{k} of the {n} cells agree in sign and significance with the July preprint or the final version; "
            f"{len(rest) - len(uncaused)} of the other {len(rest)} carry a measured cause")
    if uncaused:
        text += f", {len(uncaused)} none ({_join(uncaused)}): the target (every cell agrees or has a measured " \
                "cause) is not met."
    else:
        text += ": the target (every cell agrees or has a measured cause) is met."
    lines = [text, ""]
    if rows:
        lines += ["| cell | ours | July | final | measured cause |", "|---|---|---|---|---|", *rows, ""]
    return "\n".join(lines)


#: issue 25, item 1: CT's mean |IP| and |IP*| on LS within this relative distance of the appendix values
LS_TOLERANCE = 0.05


def _printed_interval(value: float) -> tuple[float, float, int]:
    """The interval of values that print as ``value`` at its own number of decimals (2.51 → [2.505, 2.515))."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    decimals = len(text.split(".")[1]) if "." in text else 0
    half = 0.5 * 10 ** -decimals
    return value - half, value + half, decimals


def render_ls_target(report: str | Path) -> str:
    """Markdown: CT's mean |IP| and |IP*| on LS against the appendix CI table's (``appendix_ci.csv``), relative to
    the printed value and to the interval of values that print as it, with the verdict of issue 25's item 1."""
    ci = read_report_csv(Path(report), "appendix_ci.csv")
    if ci is None:
        return "*The appendix CI table has not been computed for this result set.*\n"
    if not {"dataset", "metric", "ct_mean_abs", "pub_ct_mean_abs"} <= set(ci.columns):
        return "*The appendix CI table of this result set has no published values beside ours.*\n"
    rows = ci[(ci["dataset"] == "LS") & ci["metric"].isin(["IP", "IP*"])].drop_duplicates(["dataset", "metric"])
    rows = rows[pd.to_numeric(rows["pub_ct_mean_abs"], errors="coerce").notna()]
    if not len(rows):
        return "*The appendix CI table has no LS row in this result set.*\n"
    lines = ["| LS, CT | ours | appendix | relative to the printed value | printed interval | relative to its nearest "
             f"end | within {100 * LS_TOLERANCE:.0f}% |", "|---|---|---|---|---|---|---|"]
    verdicts = []
    for _, r in rows.iterrows():
        ours, pub = float(r["ct_mean_abs"]), float(r["pub_ct_mean_abs"])
        lo, hi, d = _printed_interval(pub)
        rel = ours / pub - 1
        nearest = min(max(ours, lo), hi)
        rel_near = ours / nearest - 1
        printed, interval = abs(rel) <= LS_TOLERANCE, abs(rel_near) <= LS_TOLERANCE
        verdicts.append((r["metric"], printed, interval))
        metric = str(r["metric"]).replace("*", "\\*")
        yes = "yes" if printed else ("of the interval only" if interval else "no")
        lines.append(f"| mean \\|{metric}\\| | {ours:.3f} | {pub:.{d}f} | {100 * rel:+.1f}% "
                     f"| [{lo:.{d + 1}f}, {hi:.{d + 1}f}) | {100 * rel_near:+.1f}% | {yes} |")
    met = [m.replace("*", "\\*") for m, p, _ in verdicts if p]
    near = [m.replace("*", "\\*") for m, p, i in verdicts if not p and i]
    far = [m.replace("*", "\\*") for m, p, i in verdicts if not (p or i)]
    text = f"Within {100 * LS_TOLERANCE:.0f}% of the printed appendix value: " + (_join(met) if met else "none") + "."
    if near:
        text += (f" {_join(near)}: outside against the printed value, within against the nearest value that prints "
                 "as it (the appendix rounds its values).")
    if far:
        text += f" {_join(far)}: outside either way."
    return "\n".join(lines) + "\n\n" + text + "\n"
