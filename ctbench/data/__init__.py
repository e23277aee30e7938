"""Datasets of the paper behind one registry (``load_dataset``)."""

from . import synthetic  # noqa: F401,E402  (registers the synthetic datasets)
from .base import Dataset, stratified_val_split
from .registry import available, load_dataset, register

__all__ = ["Dataset", "available", "load_dataset", "register", "stratified_val_split"]
from . import consistency, tabular, vision  # noqa: F401,E402  (registers the real-data loaders)
