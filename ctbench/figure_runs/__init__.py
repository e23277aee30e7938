"""The runs behind the paper's qualitative figures (experiment layer): Figure 1 (:mod:`.linear`: linear classifiers
on LS, trained here) and the MNIST counterfactuals, attributions and 10×10 grids (:mod:`.mnist`: saved models
loaded and searched here). The drawing is :mod:`ctbench.report.figures` and :mod:`ctbench.report.mnist_grid`,
which see only arrays and tables; :mod:`.cli` registers ``ctbench figure1`` and ``ctbench mnist-figures``.
"""

from __future__ import annotations

from .cli import add_cli
from .linear import FIG1, PANELS, figure1
from .mnist import grid_searches, mnist_figures, pick_factuals

__all__ = ["FIG1", "PANELS", "add_cli", "figure1", "grid_searches", "mnist_figures", "pick_factuals"]
