"""Numerical check of Proposition 3.1 (protecting immutable features) on linear-Gaussian simulations.

The proposition (paper §3.4, proof in appendix B.2): for a linear softmax classifier trained with the contrastive-
divergence penalty, on Gaussian classes with a common diagonal covariance, protecting an immutable feature
(x⁺[d] := x'[d]) lowers the classifier's sensitivity to it relative to the others, provided another feature is
discriminative and mutable. Two arms answer it, each training unprotected CT, protected CT and a baseline on the
same data and start (paired runs):

* :mod:`.closed_form` (K = D = 2, the proof's own setting, exact closed-form gradients; :mod:`.grid` runs it over
  the grids of :mod:`.simulation`);
* :mod:`.trainer_arm` (ctbench's population trainer and ``Constraints.protect_positive``, the paper runs' code
  path; K ∈ {2, 3}, D ∈ {2, 3, 4} settings of :mod:`.general`), with negative controls where the proviso fails.

:mod:`.stats` turns runs into shares with Wilson intervals and per-setting verdicts; :mod:`.study` runs the check
(:func:`check`); ``ctbench prop31`` (:mod:`ctbench.cli.study_cmds`) writes its files, drawn by
:mod:`ctbench.report.figures.prop31_figures`.
"""

from __future__ import annotations

from .closed_form import (
    ARMS,
    TARGETS,
    FitResult,
    TrainConfig,
    baseline_config,
    coefficient_paths,
    fit,
    gradients,
    losses,
    relative_sensitivity,
    search,
)
from .general import GeneralSetting, sensitivities, simulate_general
from .grid import run_grid, torch_threads
from .simulation import (
    ASSUMPTIONS,
    FEATURES,
    IMM,
    MUT,
    NEG,
    POS,
    VIOLATIONS,
    Setting,
    SimData,
    check_assumptions,
    default_grid,
    simulate,
    violation_grid,
)
from .stats import HOLDS_ABOVE, setting_row, summary, wilson_interval
from .study import CHECKPOINTS, check, jobs, run, settings_table, variants
from .trainer_arm import NoProtection, TrainerArmConfig, default_settings, run_trainer_arm

__all__ = ["ARMS", "ASSUMPTIONS", "CHECKPOINTS", "FEATURES", "HOLDS_ABOVE", "IMM", "MUT", "NEG", "POS", "TARGETS",
           "VIOLATIONS", "FitResult", "GeneralSetting", "NoProtection", "Setting", "SimData", "TrainConfig",
           "TrainerArmConfig", "baseline_config", "check", "check_assumptions", "coefficient_paths", "default_grid",
           "default_settings", "fit", "gradients", "jobs", "losses", "relative_sensitivity", "run", "run_grid",
           "run_trainer_arm", "search", "settings_table", "setting_row", "simulate", "simulate_general",
           "sensitivities", "summary", "torch_threads", "variants", "violation_grid", "wilson_interval"]
