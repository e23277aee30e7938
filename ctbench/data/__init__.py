"""Datasets of the paper behind one registry (``load_dataset``)."""

from .base import Dataset, stratified_val_split
from .registry import available, load_dataset, register
from . import synthetic  # noqa: F401,E402  (registers the synthetic datasets)

__all__ = ["Dataset", "available", "load_dataset", "register", "stratified_val_split"]
