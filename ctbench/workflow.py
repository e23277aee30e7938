"""The library side of the Snakemake workflow: which files the paper needs and how each job is configured.

The Snakefile only names rules and calls ``ctbench``; every decision (targets per stage, the config of each model,
the evaluation settings per experiment) lives here, where it is tested.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from . import facts
from .data.registry import family
from .facts import EXPERIMENTS, FAMILY_FACTS, TUNING_GRIDS, model_folder
from .paper_settings import model_config

#: final models trained by one job per dataset and group. The ablation's CD and AR models are a job of their own so
#: that adding the ablation to a finished run (or dropping it) never retrains the main models: Snakemake reruns a
#: job whole when one of its outputs is missing.
FINAL_GROUPS = {"main": ("baseline", "single", "mutability"), "ablation": ("ablation",)}


@dataclass
class Workflow:
    """Paths and job settings derived from a (validated) workflow config."""

    config: dict[str, Any]

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

    def check(self, schema_path: str | None = None) -> None:
        """Every setting of every job checked before the first one runs (:mod:`ctbench.workflow_check`)."""
        from .workflow_check import check_workflow

        check_workflow(self, schema_path)

    # -- paths (templates: ctbench.facts.PATHS) ----------------------------------------------------------------
    def path(self, kind: str, **fields: Any) -> str:
        """Result file ``kind`` of this run, every field filled."""
        return facts.path(kind, self.results, **fields)

    def pattern(self, kind: str, **fields: Any) -> str:
        """Result file ``kind`` with the fields not given left as Snakemake wildcards (the rules' outputs)."""
        return facts.pattern(kind, self.results, **fields)

    def model_path(self, experiment: str, dataset: str, objective: str, seed: int) -> str:
        """Where a final model lives. The vanilla baseline ignores counterfactual and mutability settings, so one
        BL per dataset and seed (``models/baseline/``) serves the single, mutability and ablation experiments; the
        ablation's full CT model has exactly the config of the single experiment's, so it is that model (one model,
        one number)."""
        return self.path("model", folder=model_folder(experiment, objective), dataset=dataset, objective=objective,
                         seed=seed)

    def eval_path(self, experiment: str, dataset: str, seed: int) -> str:
        return self.path("evaluation", experiment=experiment, dataset=dataset, seed=seed)

    def wildcards(self, kind: str) -> dict[str, list]:
        """The wildcards of every file of ``kind`` (a template of :data:`ctbench.facts.PATHS`) this run makes, as
        parallel lists: the rules' ``expand(rules.X.output, zip, **W.wildcards(kind))``."""
        records = self._records(kind)
        return {k: [r[k] for r in records] for k in sorted(facts.fields(kind) - {"results"})}

    def outputs(self, kind: str) -> list[str]:
        """The files of ``kind`` this run makes, in the order of :meth:`wildcards`."""
        return [self.path(kind, **r) for r in self._records(kind)]

    def _records(self, kind: str) -> list[dict[str, Any]]:
        seeds = self.seeds
        if kind == "evaluation":
            return [{"experiment": e, "dataset": d, "seed": s} for e in self.experiments for d in self.datasets
                    for s in seeds]
        if kind in ("robustness", "attribution"):
            chosen = self.robustness_datasets() if kind == "robustness" else self.attribution_datasets()
            return [{"dataset": d, "seed": s} for d in chosen for s in seeds]
        if kind == "grid_chunk":  # every enabled grid, the tuning grids included (the appendix's tuning figures)
            return [{"grid": g, "dataset": d, "key": k, "chunk": i, "seed": s} for g in self.grid_names()
                    for d in self.grid_datasets(g) for (k, i, _) in self.grid_chunks(g) for s in self.grid_seeds()]
        if kind == "tune_best":
            return [{"dataset": d} for d in self.tune_datasets()]
        if kind == "fidelity_effect":
            return [{"switch": sw, "dataset": ds} for sw, ds in self.fidelity_pairs()]
        if kind == "consistency":
            return [{k: j[k] for k in ("part", "dataset", "seed")} for j in self.consistency_jobs()]
        raise ValueError(f"no list of {kind!r} files; lists: evaluation, robustness, attribution, grid_chunk, "
                         "tune_best, fidelity_effect, consistency")

    def robustness_datasets(self) -> list[str]:
        rob = self.config.get("robustness", {})
        if not rob.get("enabled", True):
            return []
        chosen = rob.get("datasets") or self.datasets
        return [d for d in chosen if d in self.datasets]

    def attribution_datasets(self) -> list[str]:
        att = self.config.get("attribution", {})
        if not att.get("enabled", True) or "mutability" not in self.experiments:
            return []
        return self.datasets

    def robustness_experiment(self) -> str:
        return "ablation" if "ablation" in self.experiments else self.experiments[0]

    def final_models(self) -> list[str]:
        paths = [p for e in self.experiments for d in self.datasets for s in self.seeds
                 for p in self.eval_models(e, d, s).values()]
        return list(dict.fromkeys(paths))

    def evaluations(self) -> list[str]:
        return self.outputs("evaluation")

    # -- grid searches and tuning ----------------------------------------------------------------------------------
    def _grid_block(self, grid: str) -> dict[str, Any]:
        return self.config.get("tune" if grid in TUNING_GRIDS else "grids", {}) or {}

    def grid_names(self) -> list[str]:
        g, t = self.config.get("grids", {}) or {}, self.config.get("tune", {}) or {}
        names = list(g.get("names", [])) if g.get("enabled", False) else []
        return names + (list(t.get("names", [])) if t.get("enabled", False) else [])

    def grid_datasets(self, grid: str) -> list[str]:
        block = self._grid_block(grid)
        chosen = block.get("datasets") or self.datasets
        return [d for d in chosen if d in self.datasets]  # `datasets:` limits every stage

    def grid_overrides(self, grid: str) -> dict[str, Any]:
        return dict((self._grid_block(grid).get("overrides") or {}).get(grid, {}))

    def grid_chunks(self, grid: str) -> list[tuple[str, int, list[str]]]:
        """(baseline key, chunk index within that key, point ids): a chunk shares one BL model."""
        from .experiments.grids import baseline_key, chunks, grid_points

        size = int(self._grid_block(grid).get("chunk_size", 9))
        by_key: dict[str, list[str]] = {}
        for p in grid_points(grid, self.grid_overrides(grid)):
            by_key.setdefault(baseline_key(grid, p), []).append(p["id"])
        return [(key, i, c) for key, ids in by_key.items() for i, c in enumerate(chunks(ids, size))]

    def grid_chunk_ids(self, grid: str, key: str, chunk: int) -> list[str]:
        for k, i, ids in self.grid_chunks(grid):
            if k == key and i == int(chunk):
                return ids
        raise ValueError(f"grid {grid}: no chunk {chunk} for baseline key {key}")

    def grid_common_args(self, grid: str, dataset: str) -> str:
        block = self._grid_block(grid)
        args = [f"--dataset {dataset}", f"--fidelity {self.config['fidelity']}"]
        for flag, value in (("--fidelity-overrides", self.config.get("fidelity_overrides") or {}),
                            ("--data-params", (self.config.get("data_params") or {}).get(dataset, {})),
                            ("--overrides", self.grid_overrides(grid))):
            if value:
                args.append(f"{flag} {shlex.quote(json.dumps(value, sort_keys=True))}")
        if block.get("epochs"):
            args.append(f"--epochs {int(block['epochs'])}")
        return " ".join(args)

    def grid_eval_arg(self, grid: str) -> str:
        ev = self._grid_block(grid).get("evaluation") or {}
        return f"--eval {shlex.quote(json.dumps(ev, sort_keys=True))}" if ev else ""

    def grid_outputs(self) -> list[str]:
        return self.outputs("grid_chunk")

    def grid_seeds(self) -> list[int]:
        """Seeds of the grid searches and tuning: the first training seed (the authors' grids ran one seed each);
        more training seeds add uncertainty to the final models' tables, not to the hyper-parameter choice."""
        return self.seeds[:1]

    def tune_chunk_wildcards(self) -> dict[str, list]:
        """The chunks one ``tune_select`` job reads, less its dataset (the tuning grids share the ``tune`` block's
        datasets), for ``expand(rules.grid_chunk.output, zip, allow_missing=True, ...)``."""
        rec = [{"grid": g, "key": k, "chunk": i, "seed": s} for g in self.grid_names() if g in TUNING_GRIDS
               for (k, i, _) in self.grid_chunks(g) for s in self.grid_seeds()]
        return {k: [r[k] for r in rec] for k in ("grid", "key", "chunk", "seed")}

    def tune_chunks(self, dataset: str) -> list[str]:
        w = self.tune_chunk_wildcards() if dataset in self.tune_datasets() else {}
        return [self.path("grid_chunk", dataset=dataset, **dict(zip(w, v, strict=True)))
                for v in zip(*w.values(), strict=True)]

    def tune_datasets(self) -> list[str]:
        names = [g for g in self.grid_names() if g in TUNING_GRIDS]
        return sorted({d for g in names for d in self.grid_datasets(g)})

    def tune_outputs(self) -> list[str]:
        return self.outputs("tune_best")

    def prop31_outputs(self) -> list[str]:
        if not self.config.get("prop31", {}).get("enabled", True):
            return []
        # every output the report reads is requested, so a run that lacks one (e.g. made before it existed) makes it
        return [self.path("prop31_file", table=t) for t in ("summary", "settings")]

    # -- figures and the fidelity study (written straight into the report folder) --------------------------------
    def figure_outputs(self) -> list[str]:
        if not self.config.get("figures", {}).get("enabled", True):
            return []
        out = [self.path("report_figure", name="figure1")]
        if self.mnist_figures():
            out += [self.path("report_figure", name=n)
                    for n in ("mnist_counterfactuals", "mnist_grid_ct", "mnist_grid_bl")]
        return out

    def mnist_figures(self) -> bool:
        return bool(self.config.get("figures", {}).get("enabled", True)) and "mnist" in self.datasets \
            and "mutability" in self.experiments

    def fidelity_pairs(self) -> list[tuple[str, str]]:
        from .experiments.fidelity import default_plan

        study = self.config.get("fidelity_study", {}) or {}
        if not study.get("enabled", False):
            return []
        switches = study.get("switches")
        # a pair runs when its dataset is part of this profile (`datasets:` limits every stage)
        return [(sw, ds) for sw, ds in default_plan() if (switches is None or sw in switches) and ds in self.datasets]

    def fidelity_seeds(self) -> list[int]:
        """Training seeds of the fidelity study: ``fidelity_study.seeds``, or null = the profile's seeds, so each
        switch's effect carries the same seed-level uncertainty as Table 1."""
        seeds = (self.config.get("fidelity_study", {}) or {}).get("seeds")
        return [int(s) for s in seeds] if seeds else list(self.seeds)

    def fidelity_reuse(self, switch: str, dataset: str) -> dict[str, str]:
        """The final models a fidelity effect may reuse (``<objective>_s<seed>`` → path): those this profile trains
        for the switch's experiment; the study loads one only where its config is exactly the one it would train."""
        from .experiments.fidelity import SWITCHES

        finals = set(self.final_models())
        exp = SWITCHES[switch].experiment
        return {f"{obj}_s{s}": p for s in self.fidelity_seeds() for obj in ("full", "vanilla")
                if (p := self.model_path(exp, dataset, obj, s)) in finals}

    def fidelity_reuse_args(self, switch: str, dataset: str) -> str:
        reuse = self.fidelity_reuse(switch, dataset)
        return " ".join(["--reuse", *(shlex.quote(f"{k}={v}") for k, v in reuse.items())]) if reuse else ""

    def fidelity_outputs(self) -> list[str]:
        return self.outputs("fidelity_effect")

    # -- the consistency study (Black et al. 2022; its tables are written by the report) -------------------------
    def consistency_jobs(self) -> list[dict[str, Any]]:
        from .experiments.consistency import jobs

        return jobs(self.config)

    def consistency_outputs(self) -> list[str]:
        return self.outputs("consistency")

    def consistency_settings(self, part: str, dataset: str, seed: int | str) -> str:
        """The ``--settings`` JSON of one consistency job (shell-quoted)."""
        for j in self.consistency_jobs():
            if (j["part"], j["dataset"], j["seed"]) == (part, dataset, int(seed)):
                return shlex.quote(json.dumps(j["settings"], sort_keys=True))
        raise ValueError(f"consistency: no job for part {part}, dataset {dataset}, seed {seed} in this profile")

    def book_inputs(self) -> list[str]:
        extra = [self.path("fidelity_effects")] if self.fidelity_pairs() else []
        return [self.report_index(), *self.figure_outputs(), *extra]

    def report_index(self) -> str:
        return self.path("report_index")

    def book_index(self) -> str:
        return self.path("book_index")

    def final_targets(self) -> list[str]:
        """What ``rule all`` asks for: the report (and the book when enabled)."""
        targets = [self.report_index()]
        if self.config.get("book", {}).get("enabled", True):
            targets.append(self.book_index())
        return targets

    # -- job settings --------------------------------------------------------------------------------------------
    def best_json(self, dataset: str) -> list[str]:
        """The tuning stage's choice as an input of final training, only when ``tune.select`` is on."""
        tune = self.config.get("tune", {})
        tuned = self.path("tune_best", dataset=dataset)
        if tune.get("enabled", False) and tune.get("select", False) and tuned in self.tune_outputs():
            return [tuned]
        return []

    def train_config(self, experiment: str, dataset: str, objective: str, seed: int) -> dict[str, Any]:
        c = self.config
        if experiment == "baseline":
            if objective != "vanilla":
                raise ValueError(f"models/baseline/ holds vanilla models only, not {objective!r}")
            experiment = "single"
        overrides = dict(c.get("training_overrides") or {})
        return model_config(dataset, experiment, objective, int(seed), fidelity=c["fidelity"],
                            fidelity_overrides=c.get("fidelity_overrides") or {},
                            data_params=(c.get("data_params") or {}).get(dataset, {}),
                            epochs=(c.get("training") or {}).get("epochs"), threads=int(c.get("threads_per_job", 1)),
                            device=c.get("device", "cpu"), overrides=overrides)

    def train_config_json(self, experiment: str, dataset: str, objective: str, seed: int) -> str:
        return json.dumps(self.train_config(experiment, dataset, objective, seed), sort_keys=True)

    def final_members(self, group: str | None = None) -> tuple[list[str], list[str], list[int]]:
        """(experiment folder, objective, seed) of every final model of one dataset, as three parallel lists (for
        ``expand(..., zip, ...)``); the shared vanilla baseline appears once per seed, under ``baseline``.
        ``group`` (a key of :data:`FINAL_GROUPS`) keeps one training job's members; ``None`` keeps all."""
        if group is not None and group not in FINAL_GROUPS:
            raise ValueError(f"final training group {group!r} not in {sorted(FINAL_GROUPS)}")
        triples = []
        for e in self.experiments:
            for o in EXPERIMENTS[e]:
                for s in self.seeds:
                    folder = model_folder(e, o)
                    if group is None or folder in FINAL_GROUPS[group]:
                        triples.append((folder, o, s))
        triples = list(dict.fromkeys(triples))
        return [t[0] for t in triples], [t[1] for t in triples], [t[2] for t in triples]

    def final_train_args(self, dataset: str, outputs: list[str], group: str | None = None) -> str:
        """``--config-json C --out M.pt`` for every final model of ``dataset`` in ``group``: one ``ctbench train``
        call trains them all, as populations (models that share constraints share one tensor program). ``outputs``
        are the rule's output files, in the order of :meth:`final_members`."""
        outputs = [str(o) for o in outputs]
        members = list(zip(*self.final_members(group), strict=True))
        if len(outputs) != len(members):
            raise ValueError(f"{len(outputs)} outputs for {len(members)} final models of {dataset}")
        args = []
        for (experiment, objective, seed), out in zip(members, outputs, strict=True):
            expected = self.model_path(experiment, dataset, objective, seed)
            if out != expected:
                raise ValueError(f"output {out} is not the model path {expected}")
            cfg = self.train_config_json(experiment, dataset, objective, seed)
            args.append(f"--config-json {shlex.quote(cfg)} --out {shlex.quote(out)}")
        return " ".join(args)

    def data_params_json(self, dataset: str) -> str:
        return json.dumps((self.config.get("data_params") or {}).get(dataset, {}), sort_keys=True)

    def eval_models(self, experiment: str, dataset: str, seed: int) -> dict[str, str]:
        return {o: self.model_path(experiment, dataset, o, seed) for o in EXPERIMENTS[experiment]}

    def evaluated_models(self, experiment: str, dataset: str, seed: int) -> dict[str, str]:
        """The models one evaluation job searches. The ablation leaves out CT and BL when the ``single`` evaluation
        has them: the protocol keys every random stream by the model's name, so their rows would be identical, and
        the report takes them from ``single``."""
        models = self.eval_models(experiment, dataset, seed)
        if experiment == "ablation" and "single" in self.experiments:
            models = {o: p for o, p in models.items() if o not in EXPERIMENTS["single"]}
        return models

    def model_args(self, models: dict[str, str]) -> str:
        return " ".join(f"--model {shlex.quote(f'{name}={path}')}" for name, path in models.items())

    def eval_settings(self, dataset: str) -> dict[str, Any]:
        """The protocol overrides of ``ctbench evaluate`` for ``dataset`` (the ``evaluation`` block; null = the
        paper's value)."""
        ev = self.config.get("evaluation", {}) or {}
        sets = {"n_runs": ev.get("n_runs"), "lambdas": ev.get("lambdas"), "seed": ev.get("seed")}
        n_ind = ev.get("n_individuals")
        if isinstance(n_ind, dict):
            n_ind = n_ind.get(family(dataset))
        sets["n_individuals"] = n_ind
        return {k: v for k, v in sets.items() if v is not None}

    def eval_args(self, experiment: str, dataset: str) -> str:
        args = ["--constrained"] if experiment == "mutability" else []
        for k, v in self.eval_settings(dataset).items():
            args.append(f"--set {shlex.quote(f'{k}={json.dumps(v)}')}")
        return " ".join(args)

    def attribution_args(self) -> str:
        a = self.config.get("attribution", {})
        return (f"--rounds {int(a.get('rounds', 100))} --samples {int(a.get('samples', 2500))} "
                f"--steps {int(a.get('steps', 50))}")

    def mem_mb(self, dataset: str, stage: str = "train") -> int:
        return FAMILY_FACTS[family(dataset)]["mem_mb"] * (2 if stage == "evaluate" else 1)

    def runtime_min(self, dataset: str, stage: str = "train") -> int:
        return FAMILY_FACTS[family(dataset)]["runtime_min"] * (2 if stage == "evaluate" else 1)
