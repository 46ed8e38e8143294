"""A plan saved in its run folder and loaded back whole, so a run is planned once.

The runbook (or a standalone deploy notebook, at its edge) plans, then `save_plan` writes plan.json:
the readable view (`LaunchPlan.as_dict`, what the report shows) plus, under `saved`, every field of
the plan. Later stages call `load_plan` and launch exactly that plan; none of them plans again.

The shell words the planner generated (`Word`: `${API_KEY}`, `${MODEL_PATH:?...}`) are saved with
their references, so a loaded plan expands what the planner meant and keeps a user's `${...}` literal.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from ..rundir import RunFolder
from .launch_plan import LaunchPlan
from .shell import Ref, Word

SAVED = "saved"
"""plan.json's key holding the whole plan (the other keys are the readable view)."""
SAVED_VERSION = 1
"""Raised when the saved form changes, so an older plan.json is refused with its fix, not misread."""
_WORD = "$word"


class SavedPlanError(ValueError):
    """The run folder holds no plan this version can load; the message says the fix."""


def plan_record(plan: LaunchPlan) -> dict[str, Any]:
    """What plan.json holds: the readable view plus the whole plan under `saved`."""
    return {**plan.as_dict(), SAVED: {"version": SAVED_VERSION, "plan": _encode(plan)}}


def plan_from_record(record: dict[str, Any], where: str = RunFolder.PLAN) -> LaunchPlan:
    """The LaunchPlan a plan_record holds (the inverse of plan_record)."""
    saved = record.get(SAVED) if isinstance(record, dict) else None
    if not isinstance(saved, dict) or saved.get("version") != SAVED_VERSION:
        raise SavedPlanError(
            f"{where} holds no saved plan this version can load (written by an older version, or by hand). "
            "Fix: run the runbook again into a new run_dir, or run the deploy notebook with a new run_dir "
            "so it plans once and saves the plan there."
        )
    try:
        return typing.cast(LaunchPlan, _decode(LaunchPlan, saved["plan"]))
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise SavedPlanError(
            f"{where}: the saved plan cannot be read ({type(exc).__name__}: {exc}). "
            "Fix: run the runbook again into a new run_dir."
        ) from None


def save_plan(folder: RunFolder, plan: LaunchPlan) -> None:
    """Write the plan into the run folder's plan.json (redacted, as every run-folder write)."""
    folder.save_json(folder.plan, plan_record(plan))


def load_plan(folder: RunFolder) -> LaunchPlan:
    """The plan saved in the run folder; SavedPlanError (with its fix) when there is none."""
    if not folder.plan.is_file():
        raise SavedPlanError(f"{folder.plan} does not exist: nothing planned this run yet.")
    return plan_from_record(folder.read_json(folder.plan), str(folder.plan))


# --------------------------------------------------------------------------- the codec


def _encode(value: Any) -> Any:
    if isinstance(value, Word):
        return {_WORD: [{"ref": p.name, "hint": p.hint} if isinstance(p, Ref) else p for p in value.parts]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    return value


def _decode(tp: Any, data: Any) -> Any:
    """`data` (JSON) as the type `tp`, read from the dataclasses' own type hints."""
    if isinstance(data, dict) and _WORD in data:
        return Word(*(Ref(p["ref"], p["hint"]) if isinstance(p, dict) else p for p in data[_WORD]))
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if data is None:
            return None
        return _decode(next(a for a in args if a is not type(None)), data)
    if origin is list:
        return [_decode(args[0], v) for v in data]
    if origin is tuple:
        return tuple(_decode(a, v) for a, v in zip(args, data, strict=True))
    if origin is dict:
        return {k: _decode(args[1], v) for k, v in data.items()}
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp.model_validate(data)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        fields = {f.name for f in dataclasses.fields(tp)}
        return tp(**{k: _decode(hints[k], v) for k, v in data.items() if k in fields})
    return data
