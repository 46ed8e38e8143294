"""Shared fixtures of the cookbook tests: the kept pages and the generated recipes under params/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kimi_runbooks.cookbook.kept_files import load_generated, read_sources
from kimi_runbooks.paths import PARAMS_DIR

K3_NEW = "f795573d68a06b095c2605328c8fd000e05eda4b"
K3_SEED = "0722c4c0a72c2b77d0a1b7643724545ba01478a3"
K26 = "1d8c2d380caa32eaa80a7849c86c2267ba589042"


@pytest.fixture(scope="session")
def params_dir() -> Path:
    return PARAMS_DIR


@pytest.fixture(scope="session")
def k3_new() -> dict[str, Any]:
    return load_generated(PARAMS_DIR, "kimi-k3", K3_NEW)


@pytest.fixture(scope="session")
def k26() -> dict[str, Any]:
    return load_generated(PARAMS_DIR, "kimi-k2.6", K26)


@pytest.fixture(scope="session")
def sources() -> dict[str, Any]:
    return read_sources(PARAMS_DIR)


SNIPPETS = {
    "kimi-k2-deployment": "8cdba5e366f06dffbaf422a4d4d558cf9de82c65",
    "kimi-k25-deployment": "fb3022eb21721b1b3f93d915df4ffd8d1c59ea9a",
    "kimi-k26-deployment": "e8037d9a14a6607b95cb481bcb25b97595ff2dfa",
    "kimi-k27-code-deployment": "9d23fe7d96a0be58cc6b5aeb2f5559eca5dedc6a",
}


@pytest.fixture(scope="session")
def snippet_commands() -> dict[str, dict[str, Any]]:
    """The committed commands of each kept deployment snippet, by snippet name."""
    return {name: load_generated(PARAMS_DIR, name, commit) for name, commit in SNIPPETS.items()}
