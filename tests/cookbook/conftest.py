"""Shared fixtures of the cookbook tests: the kept pages and the generated recipes under params/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kimi_runbooks.cookbook.kept import load_generated, read_sources
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
