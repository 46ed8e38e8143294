"""A bad runbook parameter, shown in the notebook as its message alone.

Papermill ends its own traceback with the failing cell's error output, and a PlanInvalid raised
from `run_runbook` brings the cell's frames and the package's with it: some 20 lines before the one
that says what to do. The message already names the field, the rule and the fix, and nothing was
started, so the frames help no one. The runbook notebook installs an IPython handler for
PlanInvalid that shows only the message lines, as the cell's one error output; the cell still
fails, so papermill still exits 1 and a caller still gets PapermillExecutionError(ename
"PlanInvalid").
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from .params import PlanInvalid


def brief_parameter_errors(shell: Any = None) -> bool:
    """Show PlanInvalid in this IPython kernel without its traceback; False outside IPython."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:  # plain Python: exceptions print as usual
            return False
        shell = get_ipython()
    if shell is None:
        return False
    shell.set_custom_exc((PlanInvalid,), _show_message)
    return True


def message_lines(etype: type[BaseException], value: BaseException) -> list[str]:
    """What the error output holds: the error's name and message, line by line."""
    return f"{etype.__name__}: {value}".splitlines()


def _show_message(
    shell: Any, etype: type[BaseException], value: BaseException, tb: TracebackType | None, tb_offset: Any = None
) -> list[str]:
    lines = message_lines(etype, value)
    shell._showtraceback(etype, value, lines)  # ipykernel: the cell's error output (and its reply's traceback)
    return lines
