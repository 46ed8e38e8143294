"""Which attempt of a bench.jsonl row counts: the latest of each (scenario, repeat).

Here, below speed and perfmodel, because both read a run's results this way (the speed tables and a
measured run turned into a reference)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def latest_by_repeat(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """The latest attempt of each (scenario, repeat) of a bench.jsonl, in the order of those attempts
    (rows without a repeat, written before repeats existed, are repeat 1)."""
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for row in rows:
        key = (str(row["scenario"]), int(row.get("repeat") or 1))
        latest.pop(key, None)
        latest[key] = row
    return latest
