"""SGLang's Kimi parsers as one table (kimi/parsers.py), read by the emulator and the checks alike."""

from __future__ import annotations

import pytest

from kimi_runbooks.emulator.formats import FORMATS
from kimi_runbooks.invoke.served import ServedModel
from kimi_runbooks.kimi.parsers import PARSERS, parser_format


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_an_id_the_emulator_gives_is_one_the_checks_accept(name: str) -> None:
    """The id a server gives a call and the pattern the agentic judge holds it to are one entry."""
    call_id = FORMATS[name].tool_call_id("get.weather-v2", history_calls=2, position=1)
    match = ServedModel(tool_call_parser=name).ids.pattern.match(call_id)
    assert match and match.group("name") == "get.weather-v2" and match.group("index") == "3"


def test_the_checks_read_the_parser_of_the_plan_and_fall_back_to_kimi_k2() -> None:
    k3 = ServedModel(tool_call_parser="kimi_k3", reasoning_parser="kimi_k3")
    assert k3.think_markers == (PARSERS["kimi_k3"].think_open, PARSERS["kimi_k3"].think_close)
    assert not k3.streams_tool_arguments and k3.ids.spelled == "<name>:<idx>"
    unknown = ServedModel(tool_call_parser="qwen25", reasoning_parser=None)
    assert unknown.ids is PARSERS["kimi_k2"].ids and unknown.think_markers == ("<think>", "</think>")


def test_an_unknown_parser_is_refused_with_the_choices() -> None:
    assert parser_format(None) is PARSERS["kimi_k2"]
    with pytest.raises(ValueError, match=r"kimi_k2, kimi_k3; got 'qwen25' \(use --tool-call-parser"):
        parser_format("qwen25")
