"""Min-ℓ1/ℓ2 of the consistency study under both elastic-net boxes (issue 27, item 3): the summary table from the
per-counterfactual frames (the chapter's section: :func:`ctbench.report.book.consistency_pages.render_boxes`).

The boxes (fidelity switch ``elastic_net_box``, :mod:`ctbench.generators.elastic_net`): ``art`` is stock ART's
([0, 1] in every shrinkage step, then one scalar ``clip_values`` range), which the authors ran; ``feature`` clamps to
each feature's own domain (the ``paper`` preset; ``art`` is the ``reference`` default). The summary is committed as
``paper/results/consistency_boxes/summary.csv``; the chapter reads it beside the report folder.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from .consistency_tables import read, table1

COLUMNS = ["box", "method", "dataset", "n", "validity", "pub_validity", "iv_loo", "pub_iv_loo", "iv_rs", "pub_iv_rs",
           "cost_l1", "cost_l2", "pub_cost_l2"]


def box_table(files_by_box: dict[str, Iterable[str | Path]], published_dir: str | Path) -> pd.DataFrame:
    """One row per (box, method, dataset): success rate, mean invalidation (LOO, RS) and cost over the valid
    counterfactuals, beside the published values (``pub_validity``: App. B.3 Table 2's success rate, transcribed in
    ``published_dir``/black2022_table2_methods.csv)."""
    parts = []
    for box, files in files_by_box.items():
        df, _ = read(files)
        t = table1(df, published_dir)
        t.insert(0, "box", box)
        parts.append(t)
    return pd.concat(parts, ignore_index=True)[COLUMNS]


__all__ = ["COLUMNS", "box_table"]
