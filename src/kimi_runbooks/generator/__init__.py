"""The command generator notebook's logic: a plan beside its predicted speed (`form`)."""

from .form import DEFAULT_PREDICT, NOTEBOOK_KNOBS, GeneratorOptions, command_generator, predicted_text

__all__ = ["DEFAULT_PREDICT", "NOTEBOOK_KNOBS", "GeneratorOptions", "command_generator", "predicted_text"]
