"""Structured output (response_format) and forced tool calls on every turn (issue 27), through the openai client.

The contract suite (tests/contract) holds the same behaviour to SGLang's own code and to the
grammar xgrammar builds from SGLang's sampling params; these are the fast checks.
"""

from __future__ import annotations

import json
from enum import StrEnum

import jsonschema
import openai
import pytest
from pydantic import BaseModel

from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.conversation import Conversation, ToolSpec
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.emulator.toolplan import tools_for_turn
from kimi_runbooks.invoke.agentic_tools import function_tool

MODEL = "moonshotai/Kimi-K2.6"
USER = [{"role": "user", "content": "Name two cities in France with their population."}]


class Kind(StrEnum):
    capital = "capital"
    town = "town"


class City(BaseModel):
    name: str
    population: int
    kind: Kind
    tags: list[str]


class Answer(BaseModel):
    cities: list[City]
    capital: City | None
    note: str
    confidence: float


WEATHER = function_tool("get_weather", "Get the weather for a city", {"location": {"type": "string"}}, ["location"])
FINAL = {
    "type": "function",
    "function": {"name": "final_result", "description": "The final answer", "parameters": Answer.model_json_schema()},
}


@pytest.fixture(scope="module")
def client():
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False))
    yield openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
    stop()


def _format(schema: dict, strict: bool | None) -> dict:
    spec = {"name": "Answer", "schema": schema} | ({} if strict is None else {"strict": strict})
    return {"type": "json_schema", "json_schema": spec}


@pytest.mark.parametrize("strict", [True, False, None])
def test_json_schema_content_is_valid_and_reasoning_comes_first(client, strict):
    schema = Answer.model_json_schema()
    resp = client.chat.completions.create(model=MODEL, messages=USER, response_format=_format(schema, strict))
    message = resp.choices[0].message
    jsonschema.validate(json.loads(message.content), schema)
    Answer.model_validate_json(message.content)
    assert message.reasoning_content and resp.choices[0].finish_reason == "stop"
    stream = client.chat.completions.create(
        model=MODEL, messages=USER, response_format=_format(schema, strict), stream=True
    )
    kinds, content = [], ""
    for chunk in stream:
        for choice in chunk.choices:
            if getattr(choice.delta, "reasoning_content", None):
                kinds.append("reasoning")
            if choice.delta.content:
                kinds.append("content")
                content += choice.delta.content
    assert content == message.content
    assert kinds.index("content") > max(i for i, k in enumerate(kinds) if k == "reasoning")


def test_json_object_bare_schema_and_tools_off(client):
    obj = client.chat.completions.create(model=MODEL, messages=USER, response_format={"type": "json_object"})
    assert isinstance(json.loads(obj.choices[0].message.content), dict)
    bare = client.chat.completions.create(
        model=MODEL, messages=USER, response_format={"type": "json_schema", "schema": City.model_json_schema()}
    )
    City.model_validate_json(bare.choices[0].message.content)
    weather = [{"role": "user", "content": "What's the weather in Paris?"}]
    with_tools = client.chat.completions.create(
        model=MODEL, messages=weather, tools=[WEATHER], response_format={"type": "json_object"}
    )
    assert with_tools.choices[0].message.tool_calls is None  # the JSON grammar turns the tool parser off
    assert isinstance(json.loads(with_tools.choices[0].message.content), dict)


def test_structural_tag_content(client):
    fmt = {
        "type": "structural_tag",
        "format": {
            "type": "tag",
            "begin": "<answer>",
            "content": {"type": "json_schema", "json_schema": City.model_json_schema()},
            "end": "</answer>",
        },
    }
    text = client.chat.completions.create(model=MODEL, messages=USER, response_format=fmt).choices[0].message.content
    assert text.startswith("<answer>") and text.endswith("</answer>")
    City.model_validate_json(text[len("<answer>") : -len("</answer>")])


@pytest.mark.parametrize(
    "response_format, message",
    [
        ({"type": "bogus"}, "validation error"),
        ({"type": "json_schema"}, "schema_ is required for json_schema response format request."),
        ({"type": "json_schema", "json_schema": {"name": "A"}}, "schema_ is required"),
        ({"type": "json_schema", "json_schema": {"name": "A", "schema": {}, "strict": "yes"}}, "validation error"),
        ({"type": "structural_tag", "format": {"type": "nope"}}, "validation error"),
    ],
)
def test_invalid_formats_refused_as_sglang_does(client, response_format, message):
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model=MODEL, messages=USER, response_format=response_format)
    assert message in str(err.value)


def test_forced_tool_call_and_output_constraint_conflict(client):
    for choice in ("required", {"type": "function", "function": {"name": "get_weather"}}):
        with pytest.raises(openai.BadRequestError, match="cannot be combined with response_format"):
            client.chat.completions.create(
                model=MODEL, messages=USER, tools=[WEATHER], tool_choice=choice, response_format={"type": "json_object"}
            )
    with pytest.raises(openai.BadRequestError, match="Tools cannot be empty if tool choice is set to required"):
        client.chat.completions.create(model=MODEL, messages=USER, tool_choice="required")
    with pytest.raises(openai.BadRequestError, match="Tool 'nope' not found in tools list"):
        client.chat.completions.create(
            model=MODEL, messages=USER, tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "nope"}}
        )


def _after_result(choice):
    call = {"id": "functions.get_weather:0", "type": "function"}
    call["function"] = {"name": "get_weather", "arguments": '{"location": "Paris"}'}
    return [
        {"role": "user", "content": "What's the weather in Paris? Answer with final_result."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": '{"temp_c": 18}'},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_required_and_named_force_a_call_after_a_tool_result(client, stream):
    """pydantic-ai keeps tool_choice=required with its final_result tool: the follow-up must call it."""
    for choice in ("required", {"type": "function", "function": {"name": "final_result"}}):
        body = dict(model=MODEL, messages=_after_result(choice), tools=[WEATHER, FINAL], tool_choice=choice)
        if stream:
            names, args, finish = [], "", None
            for chunk in client.chat.completions.create(**body, stream=True):
                for c in chunk.choices:
                    for tc in c.delta.tool_calls or []:
                        names += [tc.function.name] if tc.function.name else []
                        args += tc.function.arguments or ""
                    finish = c.finish_reason or finish
        else:
            resp = client.chat.completions.create(**body)
            calls = resp.choices[0].message.tool_calls or []
            names, args, finish = [c.function.name for c in calls], "".join(c.function.arguments for c in calls), None
            finish = resp.choices[0].finish_reason
        assert names == ["final_result"], (choice, names)
        Answer.model_validate_json(args)
        assert finish == "tool_calls"


def test_tool_policy_forces_every_turn():
    tools = [ToolSpec("get_weather", "Get the weather", {}), ToolSpec("final_result", "The final answer", {})]
    follow_up = Conversation(
        tools=tools, last_user_text="weather in Paris", last_role="tool", tool_results=[("get_weather", "{}")]
    )
    follow_up.called_since_user = ["get_weather"]
    assert tools_for_turn(follow_up) == []  # auto: the result is in, answer in text
    follow_up.tool_choice = "required"
    assert [t.name for t in tools_for_turn(follow_up)] == ["final_result"]
    follow_up.tool_choice = {"type": "function", "function": {"name": "get_weather"}}
    assert [t.name for t in tools_for_turn(follow_up)] == ["get_weather"]
