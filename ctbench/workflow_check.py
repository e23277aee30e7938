"""The workflow's start-up check: every setting of every job, checked before the first job runs.

The Snakefile calls :func:`typed_config` (the one YAML 1.2 reader types the config files and the ``--config``
values, which Snakemake itself leaves as text) and then :func:`check_workflow`, which runs

1. the schema (``workflow/schemas/config.schema.yaml``), with messages that name the setting (``training.epochs:
   -5 is less than the minimum of 1``);
2. the fidelity mode and switches (types from :class:`ctbench.fidelity.Fidelity`), the device (a CUDA device must
   exist), each dataset's loader parameters (``data_params``) and the raw files of the real datasets (present, with
   their sha256);
3. the train config of every final, retrained and LeNet model, grid point, grid baseline and tuning point through
   :func:`ctbench.training.preflight.check_train_config` — the very check ``ctbench train`` and the Python API
   run — so a misspelt switch, a bad override or an out-of-range grid value (``tau: [1.5]``) stops the workflow at
   once;
4. the evaluation protocol of each experiment and grid.

Every failure is a :class:`~ctbench.errors.ConfigError` whose message starts with the workflow setting.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from .errors import BadFileError, ConfigError, UserInputError
from .yaml12 import load_file, parse_value


def _retype(value: Any) -> Any:
    if isinstance(value, str):
        return parse_value(value, "--config")
    if isinstance(value, dict):
        return {k: _retype(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_retype(v) for v in value]
    return value


def _update(base: dict[str, Any], new: dict[str, Any]) -> None:
    """Snakemake's ``update_config``: nested mappings merge, everything else replaces."""
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _update(base[k], v)
        else:
            base[k] = copy.deepcopy(v)


def typed_config(configfiles: list[str | Path], cli: dict[str, Any] | None) -> dict[str, Any]:
    """The workflow config as Snakemake merges it (``configfiles`` in order, then ``--config``), but typed by YAML
    1.2: in the files ``1e-3`` is a number (Snakemake's YAML 1.1 reads it as text), and a ``--config`` value, which
    Snakemake passes as text (``training='{epochs: 5}'`` gives ``{'epochs': '5'}``), gets the type it is written
    with. Quoted text stays text (``'false'`` is not a boolean)."""
    config: dict[str, Any] = {}
    for f in configfiles:
        data = load_file(f, "workflow config file") or {}
        if not isinstance(data, dict):
            raise ConfigError(f"workflow config file {f}: the top level must be a mapping of settings")
        _update(config, data)
    _update(config, _retype(dict(cli or {})))
    return config


def snakemake_config(workflow: Any) -> dict[str, Any]:
    """:func:`typed_config` of a running Snakefile's ``workflow`` object: the ``configfile:`` directive's files
    (unless ``--replace-workflow-config``), then the ``--configfile`` files, then the ``--config`` values, in the
    order Snakemake applies them."""
    settings = workflow.config_settings
    cli_files = [Path(f).resolve() for f in settings.configfiles]
    directive = [] if getattr(settings, "replace_workflow_config", False) else \
        [f for f in workflow.configfiles if Path(f).resolve() not in cli_files]
    return typed_config([*directive, *cli_files], dict(settings.config))


def check_schema(config: dict[str, Any], schema_path: str | Path) -> None:
    """The JSON schema of the workflow config; the message names the setting, the value and the rule."""
    import jsonschema

    schema = load_file(schema_path, "workflow schema")
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        where = ".".join(str(p) for p in err.absolute_path) or "config"
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        # a regular expression or a type alone does not say what to write: the setting's description does
        hint = f" ({err.schema['description']})" if err.validator in ("pattern", "type") and isinstance(
            err.schema, dict) and err.schema.get("description") else ""
        raise ConfigError(f"{where}: {err.message}{hint}{more}. The allowed settings are described in "
                          f"{schema_path}.")


def _checked(where: str, fn, *args, **kw):
    """``fn(*args, **kw)``; an error is re-raised with ``where`` (the workflow setting) in front of its message."""
    try:
        return fn(*args, **kw)
    except (ValueError, TypeError) as err:
        msg = str(err)
        kind = type(err) if isinstance(err, UserInputError) else ConfigError
        raise kind(msg if msg.startswith(where) else f"{where}: {msg}") from None


def _dataset_lists(c: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(setting, dataset names) of every config list besides ``datasets``."""
    cons = c.get("consistency") or {}
    lists = [("robustness.datasets", (c.get("robustness") or {}).get("datasets")),
             ("grids.datasets", (c.get("grids") or {}).get("datasets")),
             ("tune.datasets", (c.get("tune") or {}).get("datasets")),
             ("consistency.datasets", cons.get("datasets")),
             ("consistency.ct.datasets", (cons.get("ct") or {}).get("datasets")),
             ("training.per_seed", (c.get("training") or {}).get("per_seed"))]
    return [(where, list(names)) for where, names in lists if names]


#: config lists whose entries name things (a repeated entry would be merged without a word)
_NAMED_LISTS = ("seeds", "datasets", "experiments", "names", "methods", "switches", "lambdas", "plugins",
                "per_seed")


def check_lists(config: dict[str, Any], where: str = "") -> None:
    """No list of names, seeds or λ's repeats an entry (``seeds: [0, 0]`` would silently run one seed), and no
    ``datasets:`` list is empty (``grids.datasets: []`` would silently mean every dataset: write null for that)."""
    for key, value in config.items():
        setting = f"{where}{key}"
        if isinstance(value, dict) and key != "data_params":
            check_lists(value, f"{setting}.")
        if key not in _NAMED_LISTS or not isinstance(value, list):
            continue
        if key == "datasets" and not value:
            raise ConfigError(f"{setting}: [] names no dataset; leave the setting out (or write null) to use every "
                              "dataset of `datasets:`, or name the datasets")
        seen: set[Any] = set()
        for v in value:
            k = repr(v) if isinstance(v, (list, dict)) else v
            if k in seen:
                raise ConfigError(f"{setting}: {value!r} lists {v!r} twice; give each entry once")
            seen.add(k)


def check_present_files(dataset: str, params: dict[str, Any] | None, where: str) -> None:
    """The raw files of ``dataset`` that are present have their sha256 (absent ones are left to the job)."""
    from .data import files, raw_files

    params = dict(params or {})
    try:
        for f in raw_files(dataset, params):
            if files.is_present(f, params.get("raw_dir")):
                files.raw_path(f, params.get("raw_dir"))
    except PermissionError as err:
        raise BadFileError(f"{where}: cannot read {err.filename}: permission denied; give the data directory and its "
                           "files read permission (chmod -R u+rX DIR) or point CTBENCH_DATA elsewhere") from None
    except (OSError, ValueError) as err:
        raise BadFileError(f"{where}: {err}") from None


def check_split_size(dataset: str, params: dict[str, Any] | None, fidelity: Any, protocol: Any) -> None:
    """The evaluation split of a generated dataset has at least ``n_individuals`` rows (a larger request ran for
    minutes without output)."""
    from .data import load_dataset

    ds = load_dataset(dataset, fidelity=fidelity, **dict(params or {}))
    n = len(ds.y_test) if protocol.split == "test" else len(ds.y_train) + len(ds.y_val)
    if protocol.n_individuals > n:
        raise ConfigError(f"evaluation.n_individuals: {protocol.n_individuals} individuals per run, but the "
                          f"{protocol.split} split of {dataset!r} has {n} rows (data_params.{dataset}); give "
                          f"n_individuals ≤ {n}")


def check_workflow(workflow: Any, schema_path: str | Path | None = None, *, jobs_run_here: bool = True) -> None:
    """All checks of the module docstring for a :class:`ctbench.workflow.Workflow`; raises :class:`ConfigError`.

    ``jobs_run_here=False``: the jobs run on other machines (a cluster executor), so whether *this* one has the
    CUDA device of ``device`` says nothing; the value itself is still checked (schema), and ``ctbench`` checks the
    device in each job before it starts."""
    from .data import available
    from .data.plugins import HOW_TO
    from .data.registry import family
    from .evaluation.settings import EvalProtocol
    from .experiments.consistency import resolve_settings
    from .experiments.grids import baseline_config, grid_points, grid_protocol, point_config
    from .fidelity import resolve_fidelity
    from .training.preflight import check_data, check_device, check_train_config

    c = workflow.config
    if schema_path is not None:
        check_schema(c, schema_path)
    check_lists(c)
    fid = _checked("fidelity_overrides", resolve_fidelity, c["fidelity"], c.get("fidelity_overrides") or {})
    if jobs_run_here:
        check_device(c.get("device", "cpu"))
    names = {alias for n, info in available().items() for alias in (n, *info["aliases"])}
    for ds in (c.get("data_params") or {}):
        if ds not in names:
            raise ConfigError(f"data_params.{ds}: {ds!r} is not a dataset; known: {sorted(available())}")
    # the other lists of dataset names (the schema leaves names open: a user's dataset needs no schema edit)
    for where, chosen in _dataset_lists(c):
        for ds in chosen:
            if ds not in names:
                raise ConfigError(f"{where}: unknown dataset {ds!r}; known: {sorted(available())}; {HOW_TO}")
    for ds in (c.get("grids") or {}).get("datasets") or []:
        if family(ds) != "synthetic":
            raise ConfigError(f"grids.datasets: {ds!r} is a {family(ds)} dataset; the appendix grids (Notes 3-7) "
                              "run on synthetic datasets only")
    for ds in workflow.datasets:
        if ds not in names:
            raise ConfigError(f"datasets: unknown dataset {ds!r}; known: {sorted(available())}; {HOW_TO}")
        try:
            check_data(ds, (c.get("data_params") or {}).get(ds), fid)
        except BadFileError as err:
            raise BadFileError(f"datasets: {ds}: {err}") from None
        except ConfigError as err:
            raise ConfigError(f"data_params.{ds}: {err}") from None
    # the consistency study's raw files: a job whose files are absent is skipped (it says so), but a present file
    # must have its checksum (a corrupt one would fail after the other jobs ran)
    for ds in dict.fromkeys(j["dataset"] for j in workflow.jobs("consistency")):
        check_present_files(ds, (c.get("data_params") or {}).get(ds), f"consistency.datasets: {ds}")
    # the study's settings as each job will resolve them (e.g. sns.norm_eps: .inf passes the schema's minimum)
    for part, settings in {(j["part"], json.dumps(j["settings"], sort_keys=True)): j["settings"]
                           for j in workflow.jobs("consistency")}.items():
        _checked("", resolve_settings, settings, part[0])
    # every final model's train config (training, training_overrides, fidelity, data_params, device), as planned
    final = [*_checked("training", workflow.jobs, "final"), *_checked("training", workflow.jobs, "final_seed")]
    for job in final:
        for m in job["members"]:
            where = (f"final model {m['out']} (settings training, training_overrides, fidelity_overrides, "
                     "data_params)")
            _checked(where, check_train_config, m["config"], device=False)
    # the retrain stage's models (the final models' configs with other seeds; its block is checked by its planner)
    for job in _checked("retrain", workflow.jobs, "retrain_final"):
        for m in job["members"]:
            _checked(f"retrained model {m['out']} (settings retrain, training, training_overrides)",
                     check_train_config, m["config"], device=False)
    for job in _checked("lenet", workflow.jobs, "lenet"):
        _checked(f"LeNet model {job['out']} (settings lenet, training, training_overrides)", check_train_config,
                 job["config"], device=False)
    # the evaluation protocol of every evaluation job (the family `ctbench evaluate` reads from the registry), and
    # for generated datasets (their size costs ms) whether the test split can give the individuals asked for
    seen = set()
    for job in workflow.jobs("evaluation"):
        key = (family(job["dataset"]), job["constrained"], repr(sorted(job["settings"].items())))
        if key not in seen:
            seen.add(key)
            proto = _checked("evaluation", EvalProtocol.reference, key[0], constrained=job["constrained"],
                             **job["settings"])
            if key[0] == "synthetic":
                check_split_size(job["dataset"], (c.get("data_params") or {}).get(job["dataset"]), fid, proto)
    # grids and tuning: values (types, ranges), every point's train config, the grid evaluation protocol
    by_grid: dict[str, list[dict[str, Any]]] = {}
    for job in _checked("", workflow.jobs, "grid_chunk"):  # grid_points names the setting of a bad value
        by_grid.setdefault(job["grid"], []).append(job)
    for grid, chunk_jobs in by_grid.items():
        first = chunk_jobs[0]
        block, overrides, epochs = first["section"], first["grid_overrides"], first["epochs"]
        where = f"{block}.overrides.{grid}"
        points = _checked(where, grid_points, grid, overrides, where)
        _checked(f"{block}.evaluation", grid_protocol, first["evaluation"])
        for ds in dict.fromkeys(j["dataset"] for j in chunk_jobs):
            kw = dict(fidelity_overrides=c.get("fidelity_overrides") or {},
                      data_params=(c.get("data_params") or {}).get(ds, {}), device=c.get("device", "cpu"))
            for p in points:
                cfg = _checked(f"{where} point {p['id']}", point_config, grid, p, ds, 0, c["fidelity"], epochs, **kw)
                _checked(f"{where} point {p['id']} on {ds}", check_train_config, cfg, device=False)
            bl = _checked(f"{where} baseline", baseline_config, grid, points[0], ds, 0, c["fidelity"], epochs, **kw)
            _checked(f"{where} baseline on {ds}", check_train_config, bl, device=False)


__all__ = ["check_lists", "check_schema", "check_workflow", "snakemake_config", "typed_config"]
