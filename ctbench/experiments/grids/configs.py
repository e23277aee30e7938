"""``ctbench train`` configs of grid points and of their shared vanilla (BL) model.

Kept apart from the runner so the workflow check can build configs without importing torch.
"""

from __future__ import annotations

from typing import Any

from ...paper_settings import model_config
from .definitions import GRIDS, NOTE1, PARAMS, baseline_key, baseline_keys, grid_points


def step_size_applied(apply_step_size: bool | None, fidelity: str, fidelity_overrides: dict[str, Any] | None) -> bool:
    if apply_step_size is not None:
        return bool(apply_step_size)
    from ...fidelity import resolve_fidelity

    return resolve_fidelity(fidelity, fidelity_overrides).mode == "paper"


def _dotted_settings(settings: dict[str, Any], *, step_applied: bool) -> dict[str, Any]:
    out = {}
    for k, v in settings.items():
        if k not in PARAMS:
            continue
        if k == "step_size" and (v is None or not step_applied):
            continue  # generator.step_size stays null → the fidelity's ce_step_size
        out[PARAMS[k][0]] = v
    return out


def point_config(name: str, point: dict[str, Any], dataset: str, seed: int = 0, fidelity: str = "reference",
                 epochs_override: int | None = None, *, objective: str = "full",
                 fidelity_overrides: dict[str, Any] | None = None, data_params: dict[str, Any] | None = None,
                 overrides: dict[str, Any] | None = None, apply_step_size: bool | None = None, threads: int = 1,
                 device: str = "cpu") -> dict[str, Any]:
    """The ``ctbench train`` config of one grid point (CT, or another ``objective``).

    ``epochs_override`` replaces the epochs unless the grid varies them (``training_params``: the point's value
    wins; shrink that grid through its overrides instead). ``overrides`` are extra dotted keys applied last
    (e.g. ``{"vae.epochs": 5}`` for a quick REVISE). ``apply_step_size``: see the module docstring.
    """
    if isinstance(point, str):
        raise TypeError("point_config: pass a point dict (see grid_points / find_points), not an id")
    varied = set(point.get("params", {}))
    settings = dict(point["settings"])
    if epochs_override is not None and "epochs" not in varied:
        settings["epochs"] = int(epochs_override)
    step_applied = step_size_applied(apply_step_size, fidelity, fidelity_overrides)
    dotted = _dotted_settings(settings, step_applied=step_applied)
    dotted.update(overrides or {})
    return model_config(dataset, "single", objective, seed, fidelity=fidelity, fidelity_overrides=fidelity_overrides,
                        data_params=data_params, threads=threads, device=device, overrides=dotted)


def baseline_config(name: str, key_or_point: str | dict[str, Any], dataset: str, seed: int = 0,
                    fidelity: str = "reference", epochs_override: int | None = None, *,
                    grid_overrides: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """The vanilla config for a BL key (or the BL of a point): Note 1 defaults plus only the BL-relevant values.

    The generator is always ECCo here (vanilla training never searches, so no VAE is trained for REVISE points).
    """
    if isinstance(key_or_point, str):
        pts = [p for p in grid_points(name, grid_overrides) if baseline_key(name, p) == key_or_point]
        if not pts:
            raise ValueError(f"grid {name}: no point has baseline key {key_or_point!r}; "
                             f"keys: {baseline_keys(name, grid_overrides)}")
        point = pts[0]
    else:
        point = key_or_point
    relevant = GRIDS[name]["baseline"]
    settings = {**NOTE1, **{k: point["settings"][k] for k in relevant}}
    bl_point = {"grid": name, "id": baseline_key(name, point), "params": {k: settings[k] for k in relevant},
                "settings": settings}
    return point_config(name, bl_point, dataset, seed, fidelity, epochs_override, objective="vanilla", **kw)


def effective_step(cfg: dict[str, Any], fid) -> float:
    s = cfg["generator"].get("step_size")
    return float(s) if s is not None else float(fid.ce_step_size)

