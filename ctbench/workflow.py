"""The library side of the Snakemake workflow: an index over the stages' own plans.

Every decision about a job (which jobs exist, their wildcards, input files, settings and arguments) is made once, by
the stage's ``jobs(config)`` in :mod:`ctbench.experiments` (:data:`PLANS` names which). :class:`Workflow` only runs
those planners once per Snakemake start-up and looks a job up by its wildcards, so that a rule's ``params`` (the
job's full resolved settings) and inputs come from the same dict the Python API sees. The DAG itself (which rule
consumes which rule's files) is written in ``workflow/rules/*.smk``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import facts
from .data.registry import family
from .facts import FAMILY_FACTS


def _grid_chunks(config: dict[str, Any]) -> list[dict[str, Any]]:
    from .experiments.grids import jobs

    return jobs(config)


def _grid_baselines(config: dict[str, Any]) -> list[dict[str, Any]]:
    """One job per grid baseline model: the settings of the first chunk that uses it (the chunks of one key share
    every setting but their points)."""
    out: dict[tuple, dict[str, Any]] = {}
    for j in _grid_chunks(config):
        out.setdefault((j["grid"], j["dataset"], j["key"], j["seed"]), {k: v for k, v in j.items()
                                                                         if k not in ("chunk", "points")})
    return list(out.values())


def _stage(name: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    def plan(config: dict[str, Any]) -> list[dict[str, Any]]:
        from .experiments import stage

        return stage(name).jobs(config)

    return plan


def _final(per_seed: bool) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """The final-training jobs of the datasets trained all seeds at once (``per_seed`` False) or one job per seed
    (True; :mod:`ctbench.experiments.final_split`)."""

    def plan(config: dict[str, Any]) -> list[dict[str, Any]]:
        from .experiments import stage
        from .experiments.final_split import split_jobs

        return [j for j in split_jobs(config, stage("final").jobs(config)) if ("seed" in j) == per_seed]

    return plan


def _tune_select(config: dict[str, Any]) -> list[dict[str, Any]]:
    from .experiments.grids import select_jobs

    return select_jobs(config)


def _retrain(planner: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """A planner of :mod:`ctbench.experiments.retrain` (no command imports it: not a stage of STAGES)."""

    def plan(config: dict[str, Any]) -> list[dict[str, Any]]:
        from .experiments import retrain

        return getattr(retrain, planner)(config)

    return plan


def _lenet(planner: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """A planner of :mod:`ctbench.experiments.lenet` (no command imports it: not a stage of STAGES)."""

    def plan(config: dict[str, Any]) -> list[dict[str, Any]]:
        from .experiments import lenet

        return getattr(lenet, planner)(config)

    return plan


def _seed_groups(kind: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """The per-seed jobs of a plan grouped per dataset (:mod:`ctbench.experiments.seed_groups`; no command imports
    it)."""

    def plan(config: dict[str, Any]) -> list[dict[str, Any]]:
        from .experiments.seed_groups import GROUPED, groups

        return groups(kind, config, PLANS[GROUPED[kind][0]][0](config))

    return plan


#: job kind → (planner, the wildcards that name one job). A kind that is a result template of
#: :data:`ctbench.facts.PATHS` has that template's fields as wildcards.
PLANS: dict[str, tuple[Callable[[dict[str, Any]], list[dict[str, Any]]], tuple[str, ...]]] = {
    "final": (_final(False), ("group", "dataset")),
    "final_seed": (_final(True), ("group", "dataset", "seed")),
    "evaluation": (_stage("evaluation"), ("experiment", "dataset", "seed")),
    "robustness": (_stage("robustness"), ("dataset", "seed")),
    "attribution": (_stage("attributions"), ("dataset", "seed")),
    "grid_baseline": (_grid_baselines, ("grid", "dataset", "key", "seed")),
    "grid_chunk": (_grid_chunks, ("grid", "dataset", "key", "chunk", "seed")),
    "tune_best": (_tune_select, ("dataset",)),
    "fidelity_effect": (_stage("fidelity"), ("switch", "dataset")),
    "consistency": (_stage("consistency"), ("part", "dataset", "seed")),
    "figures": (_stage("figures"), ("figure",)),
    "prop31": (_stage("prop31"), ()),
    "retrain_final": (_retrain("train_jobs"), ("dataset",)),
    "retrain_evaluation": (_retrain("evaluation_jobs"), ("experiment", "dataset", "seed")),
    "lenet": (_lenet("jobs"), ("dataset", "objective", "seed")),
    "lenet_evaluation": (_lenet("evaluation_jobs"), ("experiment", "dataset", "seed")),
    "evaluation_group": (_seed_groups("evaluation_group"), ("experiment", "dataset")),
    "retrain_evaluation_group": (_seed_groups("retrain_evaluation_group"), ("experiment", "dataset")),
    "robustness_group": (_seed_groups("robustness_group"), ("dataset",)),
    "attribution_group": (_seed_groups("attribution_group"), ("dataset",)),
}


def _paths(kind: str) -> Any:
    """The module whose templates hold result file ``kind``: :mod:`ctbench.facts`, or that of a stage no command
    imports (retrain, lenet), whose templates stay out of facts so that adding them moved no code fingerprint."""
    if kind in facts.PATHS:
        return facts
    from .experiments import lenet, retrain

    for module in (retrain, lenet):
        if kind in module.PATHS:
            return module
    return facts  # its error names the known templates


@dataclass
class Workflow:
    """The jobs of a (validated) workflow config, by kind (:data:`PLANS`), planned once and looked up by wildcard."""

    config: dict[str, Any]
    _plans: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)
    _index: dict[str, dict[tuple[str, ...], dict[str, Any]]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # the config's `plugins:` (user datasets) are imported here and exported to every job's `ctbench` process
        from .data.plugins import export_plugins

        export_plugins(self.config.get("plugins"))

    @property
    def results(self) -> str:
        return str(self.config["results"]).rstrip("/")

    @property
    def datasets(self) -> list[str]:
        return list(self.config["datasets"])

    @property
    def seeds(self) -> list[int]:
        return [int(s) for s in self.config["seeds"]]

    @property
    def experiments(self) -> list[str]:
        return list(self.config["experiments"])

    def check(self, schema_path: str | None = None, *, jobs_run_here: bool = True) -> None:
        """Every setting of every job checked before the first one runs (:mod:`ctbench.workflow_check`).

        ``jobs_run_here=False`` (a cluster executor: the jobs run on other nodes) leaves out the check that this
        machine has the CUDA device a ``device: cuda`` run asks for; each job's ``ctbench`` checks its own node."""
        from .workflow_check import check_workflow

        check_workflow(self, schema_path, jobs_run_here=jobs_run_here)

    # -- paths (templates: ctbench.facts.PATHS; the retrain and lenet stages' own, see _paths) ------------------
    def path(self, kind: str, **fields: Any) -> str:
        """Result file ``kind`` of this run, every field filled."""
        return _paths(kind).path(kind, self.results, **fields)

    def pattern(self, kind: str, **fields: Any) -> str:
        """Result file ``kind`` with the fields not given left as Snakemake wildcards (the rules' outputs)."""
        return _paths(kind).pattern(kind, self.results, **fields)

    # -- the stages' plans -------------------------------------------------------------------------------------------
    def jobs(self, kind: str) -> list[dict[str, Any]]:
        """The jobs of ``kind`` (a key of :data:`PLANS`), as the stage's ``jobs(config)`` plans them (once)."""
        if kind not in PLANS:
            raise ValueError(f"no plan of {kind!r} jobs; plans: {', '.join(PLANS)}")
        if kind not in self._plans:
            self._plans[kind] = PLANS[kind][0](self.config)
        return self._plans[kind]

    def job(self, kind: str, wildcards: Any = None, **fixed: Any) -> dict[str, Any]:
        """The one job of ``kind`` named by ``wildcards`` (Snakemake's wildcards object, or a mapping) and ``fixed``
        fields (e.g. the final-training ``group`` a rule stands for)."""
        fields = PLANS[kind][1] if kind in PLANS else ()
        if kind not in self._index:
            self._index[kind] = {tuple(str(j[f]) for f in fields): j for j in self.jobs(kind)}
        given = {**dict(wildcards.items() if hasattr(wildcards, "items") else (wildcards or {})), **fixed}
        try:
            key = tuple(str(given[f]) for f in fields)
        except KeyError as err:
            raise ValueError(f"{kind} job: wildcard {err} missing; a {kind} job is named by {list(fields)}") from None
        if key not in self._index[kind]:
            raise ValueError(f"no {kind} job {dict(zip(fields, key, strict=True))} in this profile")
        return self._index[kind][key]

    def wildcards(self, kind: str) -> dict[str, list]:
        """The wildcards of every job of ``kind`` as parallel lists: ``expand(rules.X.output, zip,
        **W.wildcards(kind))``."""
        fields = PLANS[kind][1]
        return {f: [j[f] for j in self.jobs(kind)] for f in fields}

    def outputs(self, kind: str) -> list[str]:
        """The result files of ``kind`` (a template of :data:`ctbench.facts.PATHS`) this run makes."""
        fields = sorted(_paths(kind).fields(kind) - {"results"})
        return [self.path(kind, **{f: j[f] for f in fields}) for j in self.jobs(kind)]

    def final_members(self, group: str | None = None, per_seed: bool = False) -> dict[str, list]:
        """``folder``, ``objective``, ``seed`` of every final model of one dataset in ``group`` (parallel lists, for
        the output of the training rules, ``expand(..., zip, ...)``); ``per_seed``: ``folder`` and ``objective`` of
        one seed's models (the per-seed rules leave ``seed`` a wildcard)."""
        from .experiments.final_training import members

        triples = members(self.config, group)
        if per_seed:
            pairs = list(dict.fromkeys((t[0], t[1]) for t in triples))
            return {"folder": [p[0] for p in pairs], "objective": [p[1] for p in pairs]}
        return {"folder": [t[0] for t in triples], "objective": [t[1] for t in triples],
                "seed": [t[2] for t in triples]}

    def final_datasets(self, per_seed: bool) -> list[str]:
        """The datasets whose final models train one job per seed (``per_seed``), or all seeds in one job."""
        from .experiments.final_split import per_seed_datasets

        split = per_seed_datasets(self.config)
        return [d for d in self.datasets if (d in split) == per_seed]

    def seed_groups(self, kind: str) -> tuple[list[str], list[str], list[int]]:
        """For a per-seed plan (``evaluation``, ``retrain_evaluation``, ``robustness``, ``attribution``): the datasets
        it runs one job per seed, those it runs as one job per dataset (``evaluation.group_seeds``), and the seeds of
        such a job (:mod:`ctbench.experiments.seed_groups`)."""
        from .experiments.seed_groups import grouped_datasets, seeds_of

        grouped = grouped_datasets(self.config, kind)
        planned = list(dict.fromkeys(j["dataset"] for j in self.jobs(kind)))
        return ([d for d in planned if d not in grouped], [d for d in planned if d in grouped],
                seeds_of(self.jobs(f"{kind}_group")))

    def retrain_members(self) -> dict[str, list]:
        """``folder``, ``objective``, ``seed`` of every retrained model of one dataset (parallel lists, as
        :meth:`final_members`)."""
        from .experiments.retrain import members

        triples = members(self.config)
        return {"folder": [t[0] for t in triples], "objective": [t[1] for t in triples],
                "seed": [t[2] for t in triples]}

    def final_models(self) -> list[str]:
        """Every final model of this run, each once (in the order of the evaluations that read them)."""
        from .experiments.final_training import models_of

        paths = [p for e in self.experiments for d in self.datasets for s in self.seeds
                 for p in models_of(self.config, e, d, s).values()]
        return list(dict.fromkeys(paths))

    # -- resources ---------------------------------------------------------------------------------------------------
    def mem_mb(self, dataset: str, stage: str = "train") -> int:
        return FAMILY_FACTS[family(dataset)]["mem_mb"] * (2 if stage == "evaluate" else 1)

    def runtime_min(self, dataset: str, stage: str = "train") -> int:
        return FAMILY_FACTS[family(dataset)]["runtime_min"] * (2 if stage == "evaluate" else 1)
