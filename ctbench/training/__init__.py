"""Objectives and the counterfactual-training loop."""

from .health import TrainingDidNotLearnError, TrainingDivergedError, TrainingFailedError
from .objectives import ALIASES, OBJECTIVE_PARTS, CounterfactualGroup, Objective
from .trainer import TrainParams, generate_epoch_counterfactuals, split_obs, train

__all__ = [
    "ALIASES", "OBJECTIVE_PARTS", "CounterfactualGroup", "Objective", "TrainParams", "TrainingDidNotLearnError",
    "TrainingDivergedError", "TrainingFailedError", "generate_epoch_counterfactuals", "split_obs", "train",
]
