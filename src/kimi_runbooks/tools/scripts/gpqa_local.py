"""GPQA-format CSV run with inspect_evals' gpqa_diamond record mapping, solver and scorer.

Copied into the run folder by kimi_runbooks.accuracy.inspect_eval for a staged CSV that is not the
official file; run by `inspect eval` in the inspect tool env (not imported by the package).
"""

from inspect_ai import Task, task
from inspect_ai.dataset import csv_dataset
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice
from inspect_evals.gpqa.gpqa import DEFAULT_EPOCHS, DEFAULT_SHUFFLE_SEED, record_to_sample


@task
def gpqa_local(csv: str, cot: bool = True, shuffle_choices: int = DEFAULT_SHUFFLE_SEED) -> Task:
    dataset = csv_dataset(csv, sample_fields=record_to_sample, shuffle_choices=shuffle_choices)
    return Task(dataset=dataset, solver=multiple_choice(cot=cot), scorer=choice(), epochs=DEFAULT_EPOCHS)
