"""The value of one SGLang flag as params/ spell it, below every module that reads or renders one."""

from __future__ import annotations

ArgValue = bool | int | float | str | list[int | float | str]
"""A flag's value: a switch, a number, a word or a list (`--cuda-graph-bs 1 2 4`)."""
