"""The appendix grid searches (Notes 3–8) and the tuning stage (Notes 9–12) as library code.

Reference: ``ct_reference.md`` §8.1 (Note 1 defaults), §8.2 (the grids), §7.1 last bullet (grid evaluations), §1.9
(share of mature counterfactuals per epoch).

* :data:`GRIDS` — what each Note varies; everything else is the Note 1 default (:data:`NOTE1`), the batch size is the
  dataset's (``facts.published_hyperparameters``). Values can be replaced from a config dict (smaller grids for
  quick/smoke).
* :func:`grid_points` — the CT points (objective ``full``) of a grid, each with a readable, filesystem-safe id
  (``tau0.75_egy5_T25_ecco``) usable as a Snakemake wildcard.
* :func:`baseline_key` — the vanilla (BL) model does not depend on generator or penalty parameters, so it is trained
  **once** per (dataset, seed, key) and shared by every point; the key holds only the parameters that matter to BL
  (``epochs`` in ``training_params``; nothing elsewhere → ``"bl"``). The reference retrains BL in every cell
  (§11.9); with a shared BL every point of a grid is compared with the same baseline.
* :func:`point_config` / :func:`baseline_config` — ``ctbench train`` configs (built with
  ``paper_settings.model_config``).
* :func:`run_chunk` — trains the CT models of a chunk of points (one process), evaluates each with the shared BL
  under the grid protocol (:data:`GRID_EVAL`: training data = train+val, τ 0.95, T 50, 100 individuals, 5 runs,
  λ_egy ∈ {0.1, 0.5, 1, 5, 10}, test-time ECCo with λ_cst 0) and writes one row per (point, test-time λ_egy) plus a
  long per-epoch CSV of the share of mature CEs.
* :func:`select_best` / :func:`write_best` — the tuning stage's choice of (τ, λ_reg) per dataset (rule below).

CE step size of ``tune_lr`` (Note 11): the reference builds the search optimiser without arguments, so the grid's
learning rate was never used and every point searched with η = 0.1 (§1.7, §11.1). Here the grid value is applied
only when ``apply_step_size`` says so; by default (``None``) that is the case in the ``paper`` fidelity mode, and in
``reference`` mode the step stays the fidelity's ``ce_step_size`` (0.1 unless a fidelity override changes it). Every
row records the nominal ``step_size`` and the ``step_size_effective``.

Modules: :mod:`.definitions` (grids, Note 1 defaults, points, BL keys, chunks), :mod:`.configs` (train configs),
:mod:`.runner` (one chunk: train, evaluate, write), :mod:`.tuning` (selection of the best settings). The commands
(``ctbench grid points | baseline | run | figures``, ``ctbench tune select``) are :mod:`ctbench.cli.grid_cmds`.
"""

from .configs import baseline_config, point_config
from .definitions import (
    ALL_DATASETS,
    GENERATORS,
    GRID_EVAL,
    GRIDS,
    META_KEYS,
    NOTE1,
    PARAMS,
    baseline_key,
    baseline_keys,
    chunks,
    find_points,
    grid_definition,
    grid_points,
    grid_size,
)
from .runner import (
    EPOCH_COLUMNS,
    SUMMARY_COLUMNS,
    epochs_path,
    grid_protocol,
    jobs,
    read_chunks,
    run,
    run_chunk,
    select_jobs,
    summarise_point,
    write,
)
from .tuning import SELECTION_RULE, select_best, write_best

__all__ = [
    "ALL_DATASETS", "EPOCH_COLUMNS", "GENERATORS", "GRIDS", "GRID_EVAL", "META_KEYS", "NOTE1", "PARAMS",
    "SELECTION_RULE", "SUMMARY_COLUMNS", "baseline_config", "baseline_key", "baseline_keys",
    "chunks", "epochs_path", "find_points", "grid_definition", "grid_points", "grid_protocol", "grid_size",
    "jobs", "point_config", "read_chunks", "run", "run_chunk", "select_best", "select_jobs", "summarise_point",
    "write", "write_best",
]
