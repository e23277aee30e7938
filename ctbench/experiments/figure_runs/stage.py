"""The figure-runs stage as jobs: Figure 1 and Black et al.'s Figures 1 and 2 (always, when ``figures`` is enabled) and
the MNIST figures (when the config has MNIST and the mutability experiment, whose first-seed CT and BL models they
search)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..final_training import model_path
from .linear import figure1
from .mnist import mnist_figures


def jobs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """``{"figure": "figure1", "quick", "fidelity", "fidelity_overrides"}`` (quick in the smoke profile; the run's
    fidelity mode and overrides, which shape Figure 1's data and search) and ``{"figure": "mnist", "ct", "bl"}`` (its
    models carry their fidelity)."""
    if not (config.get("figures") or {}).get("enabled", True):
        return []
    out = [{"figure": "figure1", "quick": config.get("profile") == "smoke",
            "fidelity": config.get("fidelity", "reference"),
            "fidelity_overrides": dict(config.get("fidelity_overrides") or {})}]
    out.append({"figure": "black_figure1", "quick": config.get("profile") == "smoke",
                "seed": int(config["seeds"][0]), "fidelity": config.get("fidelity", "reference")})
    out.append({**out[-1], "figure": "black_figure2"})
    if "mnist" in config["datasets"] and "mutability" in config["experiments"]:
        s = int(config["seeds"][0])
        out.append({"figure": "mnist", "ct": model_path(config, "mutability", "mnist", "full", s),
                    "bl": model_path(config, "mutability", "mnist", "vanilla", s)})
    return out


def run(job: dict[str, Any]) -> pd.DataFrame:
    """The figure's table (``figure1.csv`` or ``mnist_counterfactuals.csv``) with what the drawing needs in its
    ``attrs`` (:mod:`ctbench.cli.figure_cmds` draws and writes it)."""
    kw = {k: v for k, v in job.items() if k not in ("figure", "ct", "bl")}
    if job["figure"] == "figure1":
        return figure1(**kw)
    if job["figure"] == "black_figure1":
        from .black import black_figure1
        return black_figure1(**kw)
    if job["figure"] == "black_figure2":
        from .black2 import black_figure2
        return black_figure2(**kw)
    if job["figure"] == "mnist":
        return mnist_figures(job["ct"], job["bl"], **kw)
    raise ValueError(f"figure runs: unknown figure {job['figure']!r}; choose figure1, black_figure1, black_figure2 or "
                     "mnist")
