"""Predict a plan's speed before renting the hardware: a calibrated performance model.

`predict(plan, [Scenario(input_len=1000, output_len=1000, concurrency=16)])` returns median
TTFT, median TPOT/ITL, output and total throughput, tok/s per device and per user, each with a
low/high band. First principles (hardware.py, geometry.py, step.py, queueing.py) plus hardware
efficiencies bounded to their datasheet and named software-stack terms (factors.py, stack.py)
fitted on params/references (calibration.py) and validated leaving whole pages out, by a time
split and leaving one run out (validation.py). Predictions are model estimates: never a measurement.
"""

from .beside_measured import (
    PREDICTION_SOURCE,
    compare_to_prediction,
    plan_of_run,
    predicted_beside_measured,
    predicted_beside_references,
    published_for_plan_text,
)
from .predict import Prediction, Predictor, Scenario, predict
from .spec import PredictSpecError, format_predictions, parse_predict_spec

__all__ = [
    "PREDICTION_SOURCE",
    "Prediction",
    "PredictSpecError",
    "Predictor",
    "Scenario",
    "compare_to_prediction",
    "format_predictions",
    "parse_predict_spec",
    "plan_of_run",
    "predict",
    "predicted_beside_measured",
    "predicted_beside_references",
    "published_for_plan_text",
]
