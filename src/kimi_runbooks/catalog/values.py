"""What every params model shares (a flag's value, the strict base, the error), below every module
that reads or renders one."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict

ArgValue = bool | int | float | str | list[int | float | str]
"""A flag's value: a switch, a number, a word or a list (`--cuda-graph-bs 1 2 4`)."""


class ParamsError(ValueError):
    """A params file is missing or invalid; the message names the file and the field."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""What bash accepts as a variable name (and so as an `export NAME=...`): params files name
environment variables, and the shell renders them."""


def is_env_name(name: str) -> bool:
    return ENV_NAME.fullmatch(name) is not None


def env_names(names: Any) -> Any:
    """Environment names a generated script exports or unsets must be names bash reads as such."""
    bad = [n for n in names if not is_env_name(str(n))]
    if bad:
        raise ValueError(f"{bad} are not environment variable names (letters, digits, _; not starting with a digit)")
    return names


EnvMap = Annotated[dict[str, str], AfterValidator(env_names)]
"""Environment a params file sets: each key a name bash accepts."""
