"""One catalog of the facts that the registry, the workflow, the report, the book and the claims ledger share.

Datasets (family, the paper's label and order, published final hyper-parameters), the paper's experiments and
objectives, the grid names, and the result path templates live here once; everything else imports them. A dataset a
user adds (:mod:`ctbench.data.plugins`) is not listed here: :func:`ctbench.data.registry.family` and ``label`` look
here first, then at what its loader said (``family=``, optionally ``label=``), so adding a dataset never means editing
this file. The catalog imports nothing of ctbench: every layer may read it.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Any

# -- datasets -------------------------------------------------------------------------------------------------------

FAMILIES = ("synthetic", "tabular", "vision")


@dataclass(frozen=True)
class DatasetFacts:
    """What the paper (or Black et al. 2022) says about one dataset."""

    name: str
    family: str
    #: the label of the paper's tables (Table 1's columns), or Black et al.'s for their datasets
    label: str
    #: the name in the appendix's figure titles
    full_name: str
    #: ``ct`` = one of the CT paper's nine; ``black2022`` = Black et al.'s Table 1; ``extra`` = neither
    study: str = "ct"
    #: published final hyper-parameters (appendix "Final hyperparameters", reference §8.3): batch size, the
    #: decision threshold τ of training, nce, λ_reg; ``None`` = :data:`DEFAULT_FINAL`
    final: dict[str, Any] | None = field(default=None, hash=False, compare=False)


def _final(batch_size: int, tau: float, nce: int, lambda_reg: float) -> dict[str, Any]:
    return {"batch_size": batch_size, "tau": tau, "nce": nce, "lambda_reg": lambda_reg}


#: in the paper's order (Table 1), then the datasets outside it
DATASETS: dict[str, DatasetFacts] = {d.name: d for d in [
    DatasetFacts("lin_sep", "synthetic", "LS", "Linearly Separable", final=_final(30, 0.5, 1000, 0.01)),
    DatasetFacts("circles", "synthetic", "Circ", "Circles", final=_final(30, 0.5, 1000, 0.5)),
    DatasetFacts("moons", "synthetic", "Moon", "Moons", final=_final(30, 0.9, 1000, 0.25)),
    DatasetFacts("over", "synthetic", "OL", "Overlapping", final=_final(30, 0.5, 1000, 0.25)),
    DatasetFacts("adult", "tabular", "Adult", "Adult", final=_final(1000, 0.75, 5000, 0.25)),
    DatasetFacts("california_housing", "tabular", "CH", "California Housing", final=_final(1000, 0.5, 5000, 0.25)),
    DatasetFacts("credit_default", "tabular", "Cred", "Credit", final=_final(1000, 0.5, 5000, 0.25)),
    DatasetFacts("gmsc", "tabular", "GMSC", "GMSC", final=_final(1000, 0.5, 5000, 0.5)),
    DatasetFacts("mnist", "vision", "MNIST", "MNIST", final=_final(1000, 0.5, 5000, 0.01)),
    DatasetFacts("gauss10", "synthetic", "gauss10", "10-D Gaussian blobs", "extra"),
    DatasetFacts("german_credit", "tabular", "German Credit", "German Credit", "black2022"),
    DatasetFacts("epileptic_seizure", "tabular", "Seizure", "Epileptic Seizure", "black2022"),
    DatasetFacts("cardiotocography", "tabular", "CTG", "Cardiotocography", "black2022"),
    DatasetFacts("heloc_b22", "tabular", "HELOC", "HELOC", "black2022"),
    DatasetFacts("credit_default_b22", "tabular", "Taiwanese Credit", "Taiwanese Credit", "black2022"),
]}

#: the CT paper's nine datasets, in its order
PAPER_DATASETS = tuple(n for n, d in DATASETS.items() if d.study == "ct")
#: the paper's four synthetic datasets (the appendix grids of Notes 3-7 run on these)
SYNTHETIC = tuple(n for n in PAPER_DATASETS if DATASETS[n].family == "synthetic")
#: the paper's datasets of each family, in its order
PAPER_BY_FAMILY = {f: tuple(n for n in PAPER_DATASETS if DATASETS[n].family == f) for f in FAMILIES}
#: our dataset names → the paper's labels, and the labels in the paper's order
PAPER_LABELS = {n: DATASETS[n].label for n in PAPER_DATASETS}
PAPER_ORDER = tuple(PAPER_LABELS.values())
#: Black et al.'s Table 1 in their order; Warfarin has no loader (not public), its rows stay "not run"
BLACK2022_LABELS = {n: d.label for n, d in DATASETS.items() if d.study == "black2022"}
BLACK2022_ORDER = ("German Credit", "Seizure", "CTG", "Warfarin", "HELOC", "Taiwanese Credit")
#: the label of the rows that average over datasets
AVERAGE = "Avg."

#: the final hyper-parameters of a dataset the paper does not list (the tabular datasets' setting)
DEFAULT_FINAL = _final(1000, 0.5, 5000, 0.25)

#: per family: individuals per evaluation run (§7.1), and the workflow's memory (MB) and run-time (min) per job
FAMILY_FACTS: dict[str, dict[str, int]] = {
    "synthetic": {"n_individuals": 250, "mem_mb": 1000, "runtime_min": 10},
    "tabular": {"n_individuals": 100, "mem_mb": 3000, "runtime_min": 30},
    "vision": {"n_individuals": 25, "mem_mb": 6000, "runtime_min": 90},
}
#: the family of a registered dataset whose loader does not say
DEFAULT_FAMILY = "tabular"


def published_hyperparameters(name: str) -> dict[str, Any]:
    """The published final setting of a dataset (a copy), or :data:`DEFAULT_FINAL`."""
    facts = DATASETS.get(name)
    return dict(facts.final if facts is not None and facts.final is not None else DEFAULT_FINAL)


# -- experiments, objectives, grids ---------------------------------------------------------------------------------

#: objectives trained per experiment (reference §7.1, §7.5)
EXPERIMENTS: dict[str, tuple[str, ...]] = {
    "single": ("full", "vanilla"),
    "mutability": ("full", "vanilla"),
    "ablation": ("full", "energy", "adversarial", "vanilla"),
}
#: the paper's final counterfactual evaluation (reference §7.1): test-time λ_egy and runs per model; individuals per
#: run are the family's (:data:`FAMILY_FACTS`). The defaults of ``EvalProtocol``, ``ctbench evaluate`` and the
#: fidelity study; the paper profiles (``workflow/config/paper*.yaml``, ``verify.yaml``) state the same values
#: (tests/test_facts.py holds them equal)
EVALUATION = {"lambdas": (0.1, 0.5, 1.0, 5.0, 10.0), "n_runs": 100}
#: Table 2's integrated-gradients protocol (reference §7.7): bootstrap rounds, samples per round, path steps; the
#: defaults of ``ctbench attribution``, :func:`ctbench.evaluation.integrated_gradients.ig_rounds` and the workflow
ATTRIBUTION = {"rounds": 100, "samples": 2500, "steps": 50}
#: objectives → the paper's model names
OBJECTIVE_LABELS = {"full": "CT", "vanilla": "BL", "energy": "CD", "adversarial": "AR"}
#: the appendix grid searches (Notes 3, 5, 7) and the key-parameter tuning grids (Notes 9, 11)
GRID_NAMES = ("gen_params", "penalties", "training_params")
TUNING_GRIDS = ("tune", "tune_lr")
#: the two parts of the consistency stage (``ctbench consistency --part``): Black et al.'s protocol, CT × consistency
CONSISTENCY_PARTS = ("black2022", "ct")
#: the published versions of the paper (the first is the one reproduced) and Black et al.'s consistency paper
VERSION_LABELS = {"preprint_2025_07": "July 2025 preprint", "satml_2026": "final (SaTML 2026)",
                  "preprint_2025_03": "March 2025 preprint", "black2022": "Black et al. 2022"}


def model_folder(experiment: str, objective: str) -> str:
    """The folder of a final model: the vanilla baseline is one model shared by every experiment (``baseline``), and
    the ablation's CT model is the single experiment's (the same config: one model, one number)."""
    if objective == "vanilla":
        return "baseline"
    if (experiment, objective) == ("ablation", "full"):
        return "single"
    return experiment


# -- result path templates ------------------------------------------------------------------------------------------

#: every result file (or folder) of a run, under ``{results}``; the other fields are the workflow's wildcards
PATHS: dict[str, str] = {
    "data": "{results}/data/{dataset}.json",
    "model": "{results}/models/{folder}/{dataset}/{objective}_s{seed}.pt",
    "evaluation": "{results}/eval/{experiment}/{dataset}_s{seed}.parquet",
    "robustness": "{results}/robustness/{dataset}_s{seed}.csv",
    "attribution": "{results}/attribution/{dataset}_s{seed}.csv",
    "grid_baseline": "{results}/grids/{grid}/{dataset}/baseline_{key}_s{seed}.pt",
    "grid_chunk": "{results}/grids/{grid}/{dataset}/{key}_c{chunk}_s{seed}.csv",
    "tune_best": "{results}/tune/{dataset}/best.json",
    "consistency": "{results}/consistency/{part}/{dataset}_s{seed}.csv.gz",
    "consistency_shard": "{results}/consistency_shards/{part}/{dataset}_s{seed}_k{shard}of{n}.pt",
    "fidelity_effect": "{results}/fidelity/{switch}/{dataset}.csv",
    "report": "{results}/report",
    "report_index": "{results}/report/index.json",
    "report_figures": "{results}/report/report_figures.json",
    "report_figure": "{results}/report/{name}.png",
    "fidelity_effects": "{results}/report/fidelity_effects.csv",
    "prop31": "{results}/report/prop31",
    "prop31_file": "{results}/report/prop31/prop31_{table}.csv",
    "benchmarks": "{results}/benchmarks",
    "stage_times": "{results}/report/benchmarks.csv",
    "stage_times_jobs": "{results}/report/benchmarks_jobs.csv",
    "report_gallery": "{results}/report_gallery",
    "book": "{results}/book",
    "book_index": "{results}/book/_build/html/index.html",
}


def fields(kind: str) -> set[str]:
    """The named fields of template ``kind``."""
    return {f for _, f, _, _ in string.Formatter().parse(_template(kind)) if f}


def path(kind: str, results: str, **values: Any) -> str:
    """Template ``kind`` with every field filled; a missing or unknown field is an error naming the template."""
    wanted = fields(kind) - {"results"}
    if set(values) != wanted:
        raise ValueError(f"path {kind!r} ({PATHS[kind]}) takes the fields {sorted(wanted)}, got {sorted(values)}")
    return _template(kind).format(results=str(results).rstrip("/"), **values)


def pattern(kind: str, results: str, **values: Any) -> str:
    """Template ``kind`` with ``results`` and the given fields filled and the others left as ``{field}``: the
    Snakemake output pattern whose wildcards are those fields."""
    unknown = set(values) - fields(kind)
    if unknown:
        raise ValueError(f"path {kind!r} ({PATHS[kind]}) has no field(s) {sorted(unknown)}")
    keep = {f: "{" + f + "}" for f in fields(kind)}
    return _template(kind).format_map({**keep, "results": str(results).rstrip("/"), **values})


def _template(kind: str) -> str:
    if kind not in PATHS:
        raise ValueError(f"no result path {kind!r}; known: {sorted(PATHS)}")
    return PATHS[kind]
