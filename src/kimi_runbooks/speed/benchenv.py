"""Where bench_serving runs and which tokenizer it reads: the bench tool env's python (unless a
command prefix such as `docker exec` runs it elsewhere) and, offline, a small local tokenizer."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from ..kimi.tokenizer_files import make_offline_tokenizer
from ..rundir import RunFolder
from ..tools.envs import ToolEnvError, tool_env

log = logging.getLogger(__name__)


def default_bench_python(command_prefix: Sequence[str] | None = None) -> str:
    """The `bench` tool env's python (no prefix redirects elsewhere), else python3 with a warning."""
    if command_prefix:
        return "python3"
    try:
        return str(tool_env("bench").python)
    except ToolEnvError as exc:
        log.warning("bench tool env unavailable (%s); using python3", exc)
        return "python3"


def offline_tokenizer(
    folder: RunFolder, tokenizer: str | Path | None = None, offline: bool = True
) -> str | Path | None:
    """The --tokenizer to use: the given one, or (offline) a small local one built in the folder."""
    if tokenizer is not None or not offline:
        return tokenizer
    dest = folder.tokenizer
    if not (dest / "tokenizer.json").exists():
        make_offline_tokenizer(folder.mkdir(dest))
    return dest
