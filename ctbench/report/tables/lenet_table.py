"""Table-1-style rows of the LeNet pair (the lenet stage; beyond the paper, which reports no LeNet result).

The CT paper trains a LeNet-5 on MNIST only in its tuning runs and for the compute remarks of appendix F.1.2. The
lenet stage trains one CT and one BL LeNet at the final MNIST settings and evaluates them as the single experiment's
MNIST models are evaluated; this table puts their % reductions beside the MLP's, cell by cell, so the ledger can ask
whether the paper's MNIST findings carry over to a CNN.

Each row is one metric of one dataset: IP and IP* as in Table 1, and the cost of the unconstrained evaluation (the
appendix's "cost without mutability constraints"; Table 1's Cost column needs a CT trained with the protected pixels
immutable, which the stage does not train). The recipe, ± and star are Table 1's (:func:`.table1.table1_part`, the
same NaN-group switch and flags). Beside each LeNet cell: ``mlp_*``, our MLP's cell of this report (``table1.csv``,
``appendix_cost_unconstrained.csv``), and per published version the paper's MLP value with the agreement category of
the LeNet cell against it (``<version>_*``; ``pub_*`` = the July 2025 preprint's, as in ``table1.csv``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ..settings import ReportSettings
from .table1 import PRIMARY, VERSIONS, agreement, published_versions, table1_from_parts, table1_part

#: (metric column, paper_value kind, label, the report table holding the MLP's cell, its label there)
SPECS = (("ip", "ip", "IP", "table1.csv", "IP"), ("ip_star", "ip_star", "IP*", "table1.csv", "IP*"),
         ("cost", "cost", "Cost (unconstrained)", "appendix_cost_unconstrained.csv", "Cost"))
#: the published unconstrained costs (final appendix and July preprint; reference §9.6, §9.8)
COST_FILE = "appendix_cost_unconstrained.csv"
MODEL = "LeNet"
NOTE = "beyond the paper: no published LeNet result; the published and mlp columns are the MLP's"


def lenet_rows(evaluations: Iterable[str | Path], settings: ReportSettings | None = None) -> pd.DataFrame:
    """The LeNet cells of the ``single`` rows of ``evaluations`` (Table 1's recipe and flags, no Avg. row)."""
    from ..common import with_labels
    from .eval_frames import read_report_evaluations
    from .paper_tables import EVAL_KEYS

    f = read_report_evaluations(list(evaluations), (*EVAL_KEYS, "ip", "ip_star", "cost"), experiments=("single",),
                                keep_experiment=False)
    if f.empty:
        return pd.DataFrame()
    labelled = with_labels(f)
    parts = [table1_part(labelled, metric, kind, label) for metric, kind, label, _, _ in SPECS]
    t = table1_from_parts(parts, settings)
    t = t[t["dataset"] != "Avg."].reset_index(drop=True)
    t.insert(0, "model", MODEL)
    return t


def _published(published_dir: str | Path | None) -> pd.DataFrame:
    """Every published MLP value by (version, dataset, LeNet metric label): Table 1's IP and IP*, the appendix's
    unconstrained cost."""
    cols = ["version", "dataset", "metric", "reduction_pct", "pm", "significant"]
    if published_dir is None:
        return pd.DataFrame(columns=cols)
    pdir = Path(published_dir)
    parts = []
    if (pdir / "table1_reductions.csv").exists():
        t1 = published_versions(pdir)
        parts.append(t1[t1["metric"].isin(["IP", "IP*"])])
    if (pdir / COST_FILE).exists():
        cost = pd.read_csv(pdir / COST_FILE)
        cost["significant"] = cost["significant"].map({1: True, 0: False}).astype("boolean")
        parts.append(cost.assign(metric=SPECS[2][2]))
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def _mlp(report_dir: Path, written: Iterable[str]) -> pd.DataFrame:
    """Our MLP's cell of each LeNet metric from this report's tables (those it wrote this run)."""
    rows = []
    for _, _, label, name, mlp_label in SPECS:
        p = report_dir / name
        if name.removesuffix(".csv") not in written or not p.exists():
            continue
        t = pd.read_csv(p)
        t = t[t["metric"] == mlp_label]
        for _, r in t.iterrows():
            rows.append({"dataset": r["dataset"], "metric": label, "mlp_reduction_pct": r["reduction_pct"],
                         "mlp_pm": r.get("pm", np.nan), "mlp_significant": r.get("significant", pd.NA)})
    return pd.DataFrame(rows, columns=["dataset", "metric", "mlp_reduction_pct", "mlp_pm", "mlp_significant"])


def lenet_table(rows: pd.DataFrame, mlp: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """The LeNet cells with our MLP's and every published version's MLP value beside them."""
    if rows.empty:
        return rows
    out = rows.merge(mlp, on=["dataset", "metric"], how="left")
    for v in VERSIONS:
        p = published[published["version"] == v][["dataset", "metric", "reduction_pct", "pm", "significant"]]
        out = out.merge(p.rename(columns={c: f"{v}_{c}" for c in ("reduction_pct", "pm", "significant")}),
                        on=["dataset", "metric"], how="left")
        out[f"{v}_agreement"] = [agreement(r["reduction_pct"], r.get("significant"), r[f"{v}_reduction_pct"],
                                           r[f"{v}_significant"]) for _, r in out.iterrows()]
    for c in ("reduction_pct", "pm", "significant"):
        out[f"pub_{c}"] = out[f"{PRIMARY}_{c}"]
    out["pub_version"] = PRIMARY
    out["diff_mlp_pct"] = out["reduction_pct"] - out["mlp_reduction_pct"]
    out["note"] = NOTE
    return out


def write_lenet_table(out: str | Path, evaluations: Iterable[str | Path], written: dict,
                      published_dir: str | Path | None, settings: ReportSettings | None = None) -> dict:
    """``table1_lenet.csv`` / ``.md`` from the LeNet evaluations, beside the MLP tables this report wrote
    (``written``: the report's index so far); returns the index entries it adds (none without LeNet rows)."""
    from .paper_tables import write_table

    evaluations = list(evaluations)
    added: dict = {}
    if not evaluations:
        return added
    rows = lenet_rows(evaluations, settings)
    table = lenet_table(rows, _mlp(Path(out), written), _published(published_dir))
    write_table(table, Path(out), "table1_lenet", added)
    return added


__all__ = ["COST_FILE", "MODEL", "NOTE", "SPECS", "lenet_rows", "lenet_table", "write_lenet_table"]
