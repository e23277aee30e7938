"""The fidelity study's reference setting read from the workflow's own evaluation (issue 21).

Where the reference setting's CT and BL of a training seed are the workflow's final models (``reuse``) and the
protocol and fidelity are Table 1's, the study's reference evaluation is exactly the ``ctbench evaluate`` job of
that experiment, dataset and seed (its rows are keyed by model name and protocol, not by the process), so reading
that job's file gives the same rows and the same metrics bit for bit, without searching them again (about a third
of the stage's CPU in the committed run). A file that does not describe exactly these models, protocol and fidelity
is not used: the study then evaluates, and the sidecar says why.

The other setting of ``ip_star_per_run`` is the same evaluation with the other IP* column chosen
(:func:`derive_ip_star_per_run`): derived from the reference rows, not searched again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd


def _plain(v: Any) -> Any:
    """``v`` as JSON would give it back (tuples → lists), to compare a live dict with a sidecar's."""
    return json.loads(json.dumps(v, sort_keys=True, default=str))


def read_reference(path: str | Path, models: dict[str, Any], protocol: Any, fid: Any,
                   dataset: str) -> tuple[pd.DataFrame, list[dict[str, Any]]] | str:
    """(rows as the study's evaluation gives them, without its ``seed`` column; performance records) of the
    evaluation file ``path`` when it evaluated exactly ``models`` (name → loaded model; compared by the metadata
    ``ctbench evaluate`` records) on ``dataset`` under ``protocol`` and ``fid``; otherwise the reason it does not
    apply."""
    from .evaluation import model_meta

    side_path = Path(f"{path}.json")
    if not Path(path).is_file() or not side_path.is_file():
        return f"{path}: no such evaluation file (or its .json sidecar)"
    side = json.loads(side_path.read_text())
    checks = (("kind", side.get("kind"), "counterfactual_evaluation"), ("dataset", side.get("dataset"), dataset),
              ("protocol", _plain(side.get("protocol")), _plain(protocol.to_dict())),
              ("fidelity", _plain(side.get("fidelity")), _plain(fid.to_dict())),
              ("models", _plain(side.get("models")), _plain(model_meta(models))))
    for what, got, want in checks:
        if got != want:
            return f"{path}: its {what} is not the reference setting's"
    df = pd.read_parquet(path)
    if set(df["model"].unique()) != set(models):
        return f"{path}: it holds models {sorted(df['model'].unique())}, not {sorted(models)}"
    # `ctbench evaluate` adds `experiment` and `seed` to the protocol's frame (the study adds its seed at the end)
    return df.drop(columns=["experiment", "seed"]), list(side.get("performance") or [])


def derive_ip_star_per_run(frame: pd.DataFrame, per_run: bool) -> pd.DataFrame:
    """The rows of the same evaluation under ``protocol.ip_star_per_run = per_run``: that switch only picks which of
    the two IP* columns every evaluation computes (``ip_star_run``, ``ip_star_pooled``) is ``ip_star``, so the
    other setting's search need not run again. Its ``ip_star_raw`` (the unclamped IP* of the chosen grouping) is not
    in the frame of the first and is left out (the study's metrics do not read it)."""
    return frame.drop(columns=["ip_star_raw"]).assign(
        ip_star=frame["ip_star_run" if per_run else "ip_star_pooled"])


__all__ = ["derive_ip_star_per_run", "read_reference"]
