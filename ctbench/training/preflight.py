"""Every setting of a training run checked before it starts, by one function for the API, the CLI and the workflow.

:func:`check_train_config` resolves a ``ctbench train`` config (types and ranges: :mod:`ctbench.checks`; fidelity
switches: :func:`ctbench.fidelity.check_switches`) and checks what the resolved config names: the dataset, the
objective, the generator and model blocks, the search and training parameters, and the device. :func:`check_data`
checks that a dataset's raw files are present and have their checksums. The workflow runs both on every job's
config at start-up (:meth:`ctbench.workflow.Workflow.check`); :func:`ctbench.api.train_from_config` runs them too.
"""

from __future__ import annotations

from typing import Any

from ..config import resolve_train_config
from ..errors import BadFileError, ConfigError
from ..fidelity import Fidelity, resolve_fidelity


def check_device(device: str, setting: str = "device") -> None:
    """``cuda``/``cuda:N`` only where such a device exists (the message says how to fix it)."""
    if not str(device).startswith("cuda"):
        return
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(f"{setting}: {device!r} requested, but this machine has no CUDA device (torch "
                          f"{torch.__version__}, cuda available: False); use {setting}: cpu, or run on a GPU machine")
    index = int(device.split(":", 1)[1]) if ":" in device else 0
    if index >= torch.cuda.device_count():
        raise ConfigError(f"{setting}: {device!r} requested, but this machine has {torch.cuda.device_count()} CUDA "
                          f"device(s) (cuda:0..cuda:{torch.cuda.device_count() - 1})")


def _named(key: str, fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except ConfigError:
        raise
    except (TypeError, ValueError) as err:
        msg = str(err)
        raise ConfigError(msg if msg.startswith(key) else f"{key}: {msg}") from None


def check_train_config(config: dict[str, Any] | None, *, device: bool = True) -> tuple[dict[str, Any], Fidelity]:
    """The resolved config and its fidelity, or :class:`~ctbench.errors.ConfigError` naming the first bad setting.

    ``device=False`` skips the check that a requested CUDA device exists (e.g. to check configs for another
    machine)."""
    from ..data import available
    from ..generators import Convergence, check_generator_spec
    from ..models import check_model_spec
    from .objectives import Objective
    from .trainer import TrainParams

    cfg = resolve_train_config(config)
    fid = resolve_fidelity(cfg["fidelity"], cfg["fidelity_overrides"])
    name = cfg["data"]["name"]
    known = {n: info for n, info in available().items()}
    if not isinstance(name, str) or not any(name == n or name in i["aliases"] for n, i in known.items()):
        from ..data.plugins import HOW_TO

        raise ConfigError(f"data.name: unknown dataset {name!r}; choose one of {sorted(known)}; {HOW_TO}")
    _named("objective", Objective, **cfg["objective"])
    _named("generator", check_generator_spec, cfg["generator"])
    if isinstance(cfg["model"], dict):
        _named("model", check_model_spec, cfg["model"])
    else:
        raise ConfigError(f"model: expected a mapping such as {{type: mlp, hidden: 32}}, got {cfg['model']!r}")
    _named("convergence", Convergence, **cfg["convergence"])
    _named("training", TrainParams, seed=cfg["seed"], **cfg["training"])
    if device:
        check_device(cfg["device"])
    return cfg, fid


def check_data(name: str, params: dict[str, Any] | None = None, fidelity: Any = "reference") -> None:
    """Dataset ``name`` with loader ``params``: the parameters are valid (:func:`ctbench.data.check_params`) and the
    raw files exist with their sha256 (generated data has none); raises ``ConfigError`` / ``BadFileError``."""
    from ..data import check_params, files, raw_files

    params = dict(params or {})
    try:
        check_params(name, params, fidelity)
    except (TypeError, ValueError) as err:
        raise ConfigError(str(err)) from None
    try:
        for f in raw_files(name, params):
            files.raw_path(f, params.get("raw_dir"))
    except PermissionError as err:  # e.g. chmod 000 on the data directory
        raise BadFileError(f"cannot read {err.filename}: permission denied; give the data directory and its files "
                           "read permission (chmod -R u+rX DIR) or point CTBENCH_DATA elsewhere") from None
    except (FileNotFoundError, ValueError) as err:
        raise BadFileError(str(err)) from None


__all__ = ["check_data", "check_device", "check_train_config"]
