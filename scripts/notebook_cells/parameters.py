"""Parameters cells written from option models: every name, type, default and comment comes from a
pydantic model's fields (PlanConfig, RunbookOptions, DeployOptions, ...), none typed by hand."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo


def annotation(tp: Any) -> str:
    """A field's type as papermill's parameter parser reads it (`Optional[int]`, `list`, ...), so
    `papermill --help-notebook` lists every parameter with its type."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return f"Optional[{annotation(args[0])}]"
    if origin in (list, dict):
        return origin.__name__
    if origin is typing.Literal:
        return type(args[0]).__name__
    return tp.__name__ if isinstance(tp, type) else "Any"


def first_line(field: FieldInfo) -> str:
    """A field's docstring as one comment line."""
    return " ".join((field.description or "").split())


def comment(text: str) -> str:
    return f"  # {text}" if text else ""


def field_lines(
    model: type[BaseModel], values: dict[str, tuple[Any, str]] | None = None, names: Iterable[str] | None = None
) -> list[str]:
    """`name: Type = default  # docstring` for each field of `model` (or those in `names`); `values`
    gives a field another value with the reason (a platform recipe's), else the model's default."""
    fields = model.model_fields
    lines = []
    for name in names if names is not None else fields:
        field = fields[name]
        value, why = (values or {}).get(name, (field.get_default(call_default_factory=True), ""))
        lines.append(f"{name}: {annotation(field.annotation)} = {value!r}{comment(why or first_line(field))}")
    return lines
