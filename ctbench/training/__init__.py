"""Objectives and the counterfactual-training loop."""

from .objectives import ALIASES, OBJECTIVE_PARTS, CounterfactualGroup, Objective
from .trainer import TrainingDivergedError, TrainParams, generate_epoch_counterfactuals, split_obs, train

__all__ = [
    "ALIASES", "OBJECTIVE_PARTS", "CounterfactualGroup", "Objective", "TrainParams", "TrainingDivergedError",
    "generate_epoch_counterfactuals", "split_obs", "train",
]
