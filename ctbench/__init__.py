"""ctbench: counterfactual training and the consistency study, as code."""

__version__ = "0.1.0"
