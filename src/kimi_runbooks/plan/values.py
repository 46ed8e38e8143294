"""What every params model shares (a flag's value, the strict base, the error), below every module
that reads or renders one."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

ArgValue = bool | int | float | str | list[int | float | str]
"""A flag's value: a switch, a number, a word or a list (`--cuda-graph-bs 1 2 4`)."""


class ParamsError(ValueError):
    """A params file is missing or invalid; the message names the file and the field."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
