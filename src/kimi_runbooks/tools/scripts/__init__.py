"""Scripts the tool environments run with their own interpreters (not imported by the package).

`script(name)` is the path to pass to a tool env's python.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def script(name: str) -> Path:
    path = HERE / name
    if not path.is_file():
        raise FileNotFoundError(f"tool script {path} is missing from this checkout")
    return path
