"""Datasets of the paper behind one registry (``load_dataset``)."""

from . import synthetic  # noqa: F401,E402  (registers the synthetic datasets)
from .base import Dataset, stratified_val_split
from .registry import available, family, load_dataset, register

__all__ = ["Dataset", "available", "check_params", "family", "load_dataset", "raw_files", "register",
           "stratified_val_split"]
from . import consistency_datasets, tabular, vision  # noqa: F401,E402  (registers the real-data loaders)


def _canonical(name: str) -> str:
    return next((n for n, info in available().items() if name == n or name in info["aliases"]), name)


def check_params(name: str, params: dict | None = None, fidelity: object = "reference") -> None:
    """Loader parameters checked before any job: generated data is generated (milliseconds; the loader checks every
    parameter), for real data the parameter names are checked (their values when the data is loaded)."""
    params = dict(params or {})
    name = _canonical(name)
    if family(name) == "synthetic":
        load_dataset(name, fidelity=fidelity, **params)
        return
    known = {"seed", "raw_dir", "cache_dir", "n_val"}
    if name in tabular.SPECS:
        known |= {"source"}
    elif name == "mnist":
        known |= {"n_per_class", "replace"}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"dataset {name!r}: unknown parameter(s) {unknown}; known: {sorted(known)}")


def raw_files(name: str, params: dict | None = None) -> list[str]:
    """The raw data files (names of ``ctbench.data.files.FILES``) the loader of ``name`` reads with ``params``;
    empty for generated (synthetic) data. Lets a run check its files before the first job."""
    params = dict(params or {})
    name = _canonical(name)
    if name in tabular.SPECS:
        spec = tabular.SPECS[name]
        source = tabular.resolve_source(spec, params.get("source", "auto"), params.get("raw_dir"))
        return [spec.processed_file] if source == "taijadata_processed" else list(spec.raw_files)
    if name in consistency_datasets.SPECS:
        return list(consistency_datasets.SPECS[name].raw_files)
    if name == "mnist":
        return list(vision.MNIST_FILES.values())
    return []
