"""How robust a claim is to retraining: from the per-seed verdicts (:mod:`.seeds`), each claim's share of training
seeds under which it holds, and those columns beside the pooled verdict. Apart from :mod:`.seeds` so that the
ledger writer (:func:`ctbench.report.claims.write_verdicts`) uses them without importing the per-seed judging, which
imports the ledger's own :func:`~ctbench.report.claims.evaluate_claim`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from .schema import NOT_REPRODUCED, PARTLY, REPRODUCED

#: a claim that holds under at least this share of the seeds that judged it is robust to retraining
ROBUST_SHARE = 0.8
#: the labels of :func:`robustness_label`
ROBUST, HANGS, NEVER = "robust", "hangs on the seed", "holds on no seed"
#: verdicts that count as judged on a seed (not computable / not yet run are not)
JUDGED = (REPRODUCED, PARTLY, NOT_REPRODUCED)
#: a seed that lacks the claim's inputs (another dataset or experiment than the seeds that judged it: the retrain
#: stage's seeds have no MNIST model); the note says which (:mod:`.seed_gaps`); not counted as judged
NOT_JUDGED = "not judged"
SEED_COLUMNS = ["seed_share", "seeds_held", "seed_robustness", "seed_note"]
#: why a per-seed training time is left out (members of one population read its wall time divided by its size)
SHARED_TIME = ("not judged per seed: the training seeds of a model share one measured time (one population's wall "
               "time divided by its size), so the seeds were not timed apart")



def robustness_label(share: float) -> str:
    """:data:`ROBUST` (holds under at least :data:`ROBUST_SHARE` of the seeds), :data:`NEVER` (under none) or
    :data:`HANGS` (in between: which models were trained decides); '' when no seed judged the claim."""
    if share is None or not np.isfinite(share):
        return ""
    return ROBUST if share >= ROBUST_SHARE else NEVER if share == 0 else HANGS


def _seed_list(seeds: Iterable[Any]) -> str:
    return ", ".join(str(int(s)) for s in sorted(seeds))


def seed_shares(long: pd.DataFrame) -> pd.DataFrame:
    """Per claim (index): ``seed_share`` (the share of judging seeds under which it is reproduced), ``seeds_held``
    ("3 of 5"), ``seed_robustness`` (:func:`robustness_label`) and ``seed_note`` (which seeds gave which verdict)."""
    rows = {}
    for cid, g in long.groupby("claim", sort=False):
        judged = g[g["verdict"].isin(JUDGED)]
        held = judged[judged["verdict"] == REPRODUCED]
        share = len(held) / len(judged) if len(judged) else float("nan")
        parts = []
        for v in dict.fromkeys(g["verdict"]):
            if v == NOT_JUDGED and "note" in g:  # seeds without the claim's inputs: one part per reason
                for why, on in g[g["verdict"] == v].groupby("note", sort=False)["seed"]:
                    if why == SHARED_TIME:  # the same for every seed of the claim: said once, below
                        continue
                    reason = str(why).removeprefix(f"{NOT_JUDGED}: ")
                    parts.append(f"{v} on seed{'s' if len(on) > 1 else ''} {_seed_list(on)}: {reason}")
                continue
            on = g.loc[g["verdict"] == v, "seed"]
            parts.append(f"{v} on seed{'s' if len(on) > 1 else ''} {_seed_list(on)}")
        note = "per training seed: " + "; ".join(parts)
        if judged.empty and "note" in g:  # no seed could judge it: say why (the not-judged reasons are said above)
            why = list(dict.fromkeys(str(n) for n, v in zip(g["note"], g["verdict"], strict=True)
                                     if str(n) and (v != NOT_JUDGED or n == SHARED_TIME)))
            note = why[0] if why == [SHARED_TIME] else f"{note} ({'; '.join(why)})" if why else note
        rows[cid] = {"seed_share": share,
                     "seeds_held": f"{len(held)} of {len(judged)}" if len(judged) else "",
                     "seed_robustness": robustness_label(share), "seed_note": note}
    return pd.DataFrame.from_dict(rows, orient="index", columns=SEED_COLUMNS)


def with_seed_shares(verdicts: pd.DataFrame, long: pd.DataFrame | None) -> pd.DataFrame:
    """``verdicts`` with the :data:`SEED_COLUMNS` right after ``verdict`` (empty for claims no seed judged)."""
    out = verdicts.copy()
    shares = seed_shares(long) if long is not None and not long.empty else pd.DataFrame(columns=SEED_COLUMNS)
    for c in SEED_COLUMNS:
        out[c] = out["claim"].map(shares[c]) if len(shares) else np.nan
        if c != "seed_share":
            out[c] = out[c].fillna("")
    cols = list(verdicts.columns)
    at = cols.index("verdict") + 1 if "verdict" in cols else len(cols)
    return out[[*cols[:at], *SEED_COLUMNS, *cols[at:]]]


__all__ = ["HANGS", "JUDGED", "NEVER", "NOT_JUDGED", "ROBUST", "ROBUST_SHARE", "SEED_COLUMNS", "SHARED_TIME",
           "robustness_label",
           "seed_shares", "with_seed_shares"]
