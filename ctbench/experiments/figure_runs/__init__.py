"""The runs behind the paper's qualitative figures (experiment layer): Figure 1 (:mod:`.linear`: linear classifiers
on LS, trained here) and the MNIST counterfactuals, attributions and 10×10 grids (:mod:`.mnist`: saved models
loaded and searched here). The drawing is :mod:`ctbench.report.figures.paper_figures` and
:mod:`ctbench.report.figures.mnist_grid`,
which see only arrays and tables; :mod:`ctbench.cli.figure_cmds` (``ctbench figure1``, ``ctbench mnist-figures``)
draws and writes them. :mod:`.stage`: the stage's ``jobs(config)`` and ``run(job)``.
"""

from __future__ import annotations

from .linear import FIG1, PANELS, figure1
from .mnist import grid_searches, mnist_figures, pick_factuals
from .stage import jobs, run

__all__ = ["FIG1", "PANELS", "figure1", "grid_searches", "jobs", "mnist_figures", "pick_factuals", "run"]
