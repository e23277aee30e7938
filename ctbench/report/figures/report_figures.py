"""The report's figures that need none of its tables, drawn apart from them (issue 21: drawing and writing them, PNG
and PDF, was about a third of the ``report`` job's CPU, and no table or verdict reads them).

* the grid searches' figures (``grids/``, :mod:`.grid_figures`) and the tuning stage's appendix figures and their
  numbers (``tuning/``, :mod:`.tuning_figures`), from the grid chunk CSVs;
* the robustness figure (``robustness.png``/``.pdf``), from the ``ctbench robustness`` files.

:func:`write_report_figures` writes them into the report folder, where the book and the gallery read them, and
``report_figures.json`` (:data:`MANIFEST`) listing them. The workflow runs it as a job of its own
(``ctbench report-figures``, rule ``report_figures``) beside ``ctbench report --no-figures``; a report run by hand
draws them itself through the same function. :data:`FILES`: the folder's files this function owns.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ...facts import OBJECTIVE_LABELS
from ...io import atomic_write_json, provenance
from ..tables.relabel import labelled
from ..tables.tidy_files import read_frames

#: the list of what one run wrote (the workflow rule's declared output)
MANIFEST = "report_figures.json"
#: the report folder's files written here (patterns relative to the folder)
FILES = ("grids/*", "tuning/*", "robustness.png", "robustness.pdf", MANIFEST)


def robustness_figure(robust: pd.DataFrame, path: Path) -> list[Path]:
    """One panel per dataset, one colour per objective (CT, CD, AR, BL), FGSM solid and PGD dashed, mean over seeds."""
    from .robustness_figures import plot_robustness

    df = labelled(robust)
    df["objective"] = df["objective"].map(OBJECTIVE_LABELS).fillna(df["objective"])
    return plot_robustness(df, path, hue="objective", col="dataset", col_wrap=3,
                           title="Accuracy under attack (mean over training seeds, band: min–max)")


def write_report_figures(out: str | Path, *, grids: Iterable[str | Path] = (),
                         robustness: Iterable[str | Path] = ()) -> dict[str, list[str]]:
    """Draw every figure the inputs support into the report folder ``out``; returns kind → files written (relative
    to ``out``), also written, with the code's provenance, to ``out/report_figures.json``. ``grids``: chunk CSVs of
    ``ctbench grid run`` (the tuning grids' chunks get the paper's own figures under ``tuning/``, the others the
    grid figures under ``grids/``); ``robustness``: outputs of ``ctbench robustness``."""
    from .grid_figures import write_grid_figures
    from .tuning_figures import split_tuning, write_tuning_figures

    out = Path(out)
    robust = read_frames(robustness, "robustness file", ("dataset", "model"))  # a bad file: refused before drawing
    written: dict[str, list[str]] = {}
    searches, tunes = split_tuning(grids)
    if searches:
        written["grids"] = [p.relative_to(out).as_posix() for p in write_grid_figures(searches, out / "grids")]
    if tunes:
        written["tuning"] = [p.relative_to(out).as_posix() for p in write_tuning_figures(tunes, out / "tuning")]
    if not robust.empty:
        written["robustness_figure"] = [p.relative_to(out).as_posix()
                                        for p in robustness_figure(robust, out / "robustness")]
    atomic_write_json(out / MANIFEST, {"written": written, "provenance": provenance()})
    return written


__all__ = ["FILES", "MANIFEST", "robustness_figure", "write_report_figures"]
