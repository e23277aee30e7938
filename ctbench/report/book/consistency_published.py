"""The consistency chapter against Black et al.'s appendix (issue 25, item 3): per method and dataset our success
rate, ℓ2 and ℓ1 cost and invalidation rates beside App. B.3 Table 2, B.5 Table 3 and B.6 Table 4, and the largest
differences in words.

Ours come from the report's ``consistency_table1.csv``; the published values are read again from the transcribed
tables (:mod:`..tables.black2022_published`), so a report written before they were transcribed compares too. The
thresholds below decide what "differs" means; every number in the text is read from those files.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..common import not_run_note, read_report_csv
from ..tables.black2022_published import KEYS, published
from ..tables.consistency_tables import DATASET_ORDER, METHOD_ORDER
from ..tables.paper_tables import PUBLISHED_DIR

#: a success rate differs when ours is further than this from Table 2's
SUCCESS_TOL = 0.10
#: a mean cost differs when ours is more than this factor above or below the paper's
COST_FACTOR = 2.0
#: a mean invalidation rate differs when ours lies more than this many of the paper's SDs (over its 100 models)
#: from its mean
IV_SDS = 2.0
#: the smallest SD used for that test: a printed 0.00 is anything below 0.005
SD_FLOOR = 0.005
#: how many of the largest differences the text names per quantity
TOP = 4


def compare(report: Path | None, published_dir: str | Path = PUBLISHED_DIR) -> pd.DataFrame | None:
    """Our per-(method, dataset) values beside every published one, with the differences and the flags the chapter
    shows; None when the report has no ``consistency_table1.csv``."""
    t = read_report_csv(report, "consistency_table1.csv")
    if t is None:
        return None
    ours = t[[c for c in t.columns if not c.startswith(("pub_", "diff_"))]]
    out = ours.merge(published(published_dir), on=KEYS, how="left")
    for c in ("sd_cost_l1", "sd_cost_l2"):  # reports written before the cost SDs were added
        if c not in out:
            out[c] = math.nan
    out["diff_validity"] = out["validity"] - out["pub_validity"]
    out["flag_validity"] = out["diff_validity"].abs() > SUCCESS_TOL
    for c in ("cost_l2", "cost_l1"):
        out[f"ratio_{c}"] = out[c] / out[f"pub_{c}"]
        out[f"flag_{c}"] = (out[f"ratio_{c}"] > COST_FACTOR) | (out[f"ratio_{c}"] < 1 / COST_FACTOR)
    for s in ("loo", "rs"):
        out[f"diff_iv_{s}"] = out[f"iv_{s}"] - out[f"pub_iv_{s}"]
        out[f"gap_iv_{s}"] = out[f"diff_iv_{s}"].abs() / out[f"pub_sd_{s}"].clip(lower=SD_FLOOR)
        out[f"flag_iv_{s}"] = out[f"gap_iv_{s}"] > IV_SDS
    rank_m, rank_d = {m: i for i, m in enumerate(METHOD_ORDER)}, {d: i for i, d in enumerate(DATASET_ORDER)}
    key = out["method"].map(lambda m: rank_m.get(m, 99)) * 100 + out["dataset"].map(lambda d: rank_d.get(d, 99))
    return out.assign(_k=key).sort_values("_k", kind="stable").drop(columns="_k").reset_index(drop=True)


def _f(v: Any) -> str:
    return "–" if v is None or pd.isna(v) else f"{float(v):.2f}"


def _pm(mean: Any, sd: Any) -> str:
    return _f(mean) + ("" if pd.isna(mean) or pd.isna(sd) else f" ± {_f(sd)}")


def _cell(ours: str, pub: str, flag: bool) -> str:
    return f"{f'**{ours}**' if flag and ours != '–' else ours} ({pub})"


def render_table(report: Path | None, published_dir: str | Path = PUBLISHED_DIR) -> str:
    """One row per (method, dataset): ours, the paper's in parentheses, bold where they differ."""
    c = compare(report, published_dir)
    if c is None:
        return not_run_note("consistency_table1.csv", "part `black2022`", stage="consistency")
    header = ["method", "dataset", "success", "L2 cost", "L1 cost", "IV LOO", "IV RS"]
    rows = [[r["method"], r["dataset"],
             _cell(_f(r["validity"]), _f(r["pub_validity"]), bool(r["flag_validity"])),
             _cell(_pm(r["cost_l2"], r["sd_cost_l2"]), _pm(r["pub_cost_l2"], r["pub_cost_l2_sd"]),
                   bool(r["flag_cost_l2"])),
             _cell(_pm(r["cost_l1"], r["sd_cost_l1"]), _pm(r["pub_cost_l1"], r["pub_cost_l1_sd"]),
                   bool(r["flag_cost_l1"])),
             _cell(_f(r["iv_loo"]), _pm(r["pub_iv_loo"], r["pub_sd_loo"]), bool(r["flag_iv_loo"])),
             _cell(_f(r["iv_rs"]), _pm(r["pub_iv_rs"], r["pub_sd_rs"]), bool(r["flag_iv_rs"]))]
            for _, r in c.iterrows()]
    legend = (f"Ours, and in parentheses the paper's: success rate over the factuals (App. B.3 Table 2; a + SNS row "
              f"repeats its base method's, as SNS starts only from valid counterfactuals), mean ± SD of the ℓ2 and "
              f"ℓ1 cost over the valid counterfactuals (Tables 1 and 4), and the mean invalidation rate with the "
              f"paper's SD over its 100 retrained models (Tables 1 and 3). **Bold**: ours differs — success rate "
              f"by more than {SUCCESS_TOL:.2f}, cost by more than a factor {COST_FACTOR:g}, invalidation by more "
              f"than {IV_SDS:g} of the paper's SDs (at least {SD_FLOOR:g}). \"–\": no value (the paper prints "
              f"none, or the text lost it: Pawelczyk et al.'s ℓ1 row; see ctbench/report/published/README.md).\n\n")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return legend + "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def _top(c: pd.DataFrame, flag: str, size: pd.Series, text) -> str:
    g = c[c[flag]].assign(_s=size[c[flag]]).sort_values("_s", ascending=False).head(TOP)
    return "; ".join(text(r) for _, r in g.iterrows())


def _of(c: pd.DataFrame, flag: str, have: pd.Series) -> str:
    return f"{int(c.loc[have, flag].sum())} of {int(have.sum())}"


def render_text(report: Path | None, published_dir: str | Path = PUBLISHED_DIR) -> str:
    """The largest differences per quantity, counted and named from :func:`compare`."""
    c = compare(report, published_dir)
    if c is None:
        return not_run_note("consistency_table1.csv", "part `black2022`", stage="consistency")
    base = c[~c["method"].str.endswith("+ SNS")]
    lines = []
    have = base["validity"].notna() & base["pub_validity"].notna()
    named = _top(base, "flag_validity", base["diff_validity"].abs(),
                 lambda r: f"{r['method']} on {r['dataset']} {_f(r['validity'])} against {_f(r['pub_validity'])}")
    lines.append(f"- **Success rate** (Table 2): ours is more than {SUCCESS_TOL:.2f} from the paper's in "
                 f"{_of(base, 'flag_validity', have)} (method, dataset) cells without SNS (with SNS the rate is the "
                 f"base method's){'; furthest: ' + named if named else ''}.")
    for cost, label, tables in (("cost_l2", "ℓ2 cost", "Tables 1 and 4"), ("cost_l1", "ℓ1 cost", "Table 4")):
        have = c[cost].notna() & c[f"pub_{cost}"].notna()
        ratio = c[f"ratio_{cost}"]
        named = _top(c, f"flag_{cost}", ratio.where(ratio >= 1, 1 / ratio),
                     lambda r, k=cost: f"{r['method']} on {r['dataset']} {_f(r[k])} against {_f(r[f'pub_{k}'])}")
        lo, hi = int((have & (ratio < 1 / COST_FACTOR)).sum()), int((have & (ratio > COST_FACTOR)).sum())
        lines.append(f"- **{label}** ({tables}): ours is below half the paper's mean in {lo} and above twice it in "
                     f"{hi} of {int(have.sum())} cells{'; furthest: ' + named if named else ''}.")
    parts, named = [], []
    for s in ("loo", "rs"):
        have = c[f"iv_{s}"].notna() & c[f"pub_iv_{s}"].notna()
        parts.append(f"{_of(c, f'flag_iv_{s}', have)} cells under {s.upper()}")
        g = c[c[f"flag_iv_{s}"]]
        named += [(abs(r[f"diff_iv_{s}"]), f"{r['method']} on {r['dataset']} under {s.upper()} {_f(r[f'iv_{s}'])} "
                                           f"against {_pm(r[f'pub_iv_{s}'], r[f'pub_sd_{s}'])}")
                  for _, r in g.iterrows()]
    top = [t for _, t in sorted(named, key=lambda x: -x[0])[:TOP]]
    lines.append(f"- **Invalidation rate** (Tables 1 and 3): our mean lies more than {IV_SDS:g} of the paper's SDs "
                 f"from its mean in {' and '.join(parts)}{'; furthest: ' + '; '.join(top) if top else ''}.")
    lines.append("- The paper's SD of an invalidation rate is its spread over the retrained models; "
                 "`ctbench consistency` keeps each counterfactual's rate over the models, not each model's rate over "
                 "the counterfactuals, so that spread is not in our files (`sd_loo` and `sd_rs` of the report are "
                 "over counterfactuals, a different quantity). App. B.2 gives the base models' architecture, epochs "
                 "and batch sizes but no accuracy, so our base models' accuracy has nothing to compare with.")
    return "\n".join(lines) + "\n"


__all__ = ["COST_FACTOR", "IV_SDS", "SUCCESS_TOL", "compare", "render_table", "render_text"]
