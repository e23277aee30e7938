"""``training_time.csv``: each saved model's training cost from its JSON sidecar (wall seconds and a load-free count of
row-gradient evaluations). A table of its own so that the report's tables and the claims both read it without
importing each other."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..common import dataset_label


def training_times(sidecars: list[str | Path]) -> pd.DataFrame:
    """``training_time.csv`` from saved models' JSON sidecars: dataset, objective, experiment, seed, ``model`` (the
    architecture: mlp, linear, lenet), the wall-clock ``train_seconds`` and ``grad_evals``, a cost that does not
    depend on the machine's load: row-gradient evaluations, i.e. per epoch the training rows of the classifier loss
    plus ``nce`` × the mean number of search steps (CT's extra loss terms on counterfactuals and x⁺ are not counted,
    so CT's cost is a lower bound).

    Wall-clock seconds of population members are their population's wall time divided by its size. Where CT and BL
    trained in one population (result sets before baselines trained on their own) they share that time and cannot
    be told apart; the timing claims say "not computable" there (``must_differ``)."""
    rows = []
    for p in sidecars:
        meta = json.loads(Path(p).read_text())
        log = meta.get("log") or {}
        n_train = ((meta.get("dataset") or {}).get("meta") or {}).get("n_train") if isinstance(
            meta.get("dataset"), dict) else None
        nce = ((meta.get("config") or {}).get("training") or {}).get("nce", 0)
        steps = pd.to_numeric(pd.Series(log.get("mean_steps", []), dtype=float), errors="coerce").fillna(0.0)
        grad_evals = (len(steps) * n_train + float(nce) * float(steps.sum())) if n_train and len(steps) else None
        ds = meta.get("dataset")
        ds = ds.get("name") if isinstance(ds, dict) else ds
        obj = meta.get("objective_effective") or (meta.get("config") or {}).get("objective") or {}
        obj = obj.get("name") if isinstance(obj, dict) else obj
        spec = meta.get("model_spec") or (meta.get("config") or {}).get("model") or {}
        rows.append({"dataset": dataset_label(ds), "objective": obj,
                     "experiment": meta.get("experiment", ""), "seed": meta.get("seed"),
                     "model": spec.get("type", "") if isinstance(spec, dict) else "",
                     "train_seconds": meta.get("train_seconds"), "grad_evals": grad_evals, "path": str(p)})
    return pd.DataFrame(rows, columns=["dataset", "objective", "experiment", "seed", "model", "train_seconds",
                                       "grad_evals", "path"])
