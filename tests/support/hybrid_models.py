"""Test stand-ins for models served with other parsers and reasoning controls (issue 24).

Built from the shipped Kimi-K2.6 params with the capability fields changed, so the emulator and
the checks can be tested on what a Kimi-K3-like or Kimi-K2.7-Code-like entry declares without
the real params/models files (written elsewhere). Every value here is a test fixture, not a fact
about those models.
"""

from __future__ import annotations

from typing import Any

import yaml

from kimi_runbooks.catalog import Model
from kimi_runbooks.paths import REPO_ROOT

K26 = REPO_ROOT / "params" / "models" / "kimi-k2.6.yaml"


def _k26() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(K26.read_text())
    return data


def k3_like(**overrides: Any) -> Model:
    """kimi_k3 parsers, always thinking, reasoning_effort low/high/max (default max), video."""
    data = _k26()
    data.update(
        id="test-k3-like",
        hf_id="test/Kimi-K3-like",
        served_name="test/Kimi-K3-like",
        max_context_length=1048576,
        reasoning_parser="kimi_k3",
        tool_call_parser="kimi_k3",
        thinking="always",
        reasoning_effort={"levels": ["low", "high", "max"], "default": "max", "source": "test fixture"},
        video=True,
    )
    data.update(overrides)
    return Model.model_validate(data)


def k27_code_like(**overrides: Any) -> Model:
    """kimi_k2 parsers, thinking forced on, no effort control."""
    data = _k26()
    data.update(id="test-k27-code-like", hf_id="test/Kimi-K2.7-Code-like", served_name="test/Kimi-K2.7-Code-like")
    data.update(thinking="always", video=True, **overrides)
    return Model.model_validate(data)
