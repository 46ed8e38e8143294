"""The emulated model's tool policy (toolplan.py) and the tool-calling fault modes (tool_faults.py), directly."""

from __future__ import annotations

import json

import openai
import pytest

from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.content import Reply, ToolCall, json_document, quoted_values
from kimi_runbooks.emulator.conversation import Conversation, ToolSpec
from kimi_runbooks.emulator.events import Event, Plan
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.emulator.tool_faults import LONG_ARGUMENTS, ToolFaults
from kimi_runbooks.emulator.toolplan import tools_for_turn

MODEL = "moonshotai/Kimi-K2.6"


def _tool(name: str, description: str, **props: dict) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": list(props)},
        },
    }


WEATHER = _tool("get_weather", "Get the weather for a city", location={"type": "string"})
TIME = _tool("get_time", "Get the local time in a city", city={"type": "string"})
SAVE = _tool("save_document", "Save a JSON document", path={"type": "string"}, document={"type": "object"})


@pytest.fixture(scope="module")
def client():
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False))
    yield openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
    stop()


def _calls(resp) -> list[tuple[str, str]]:
    return [(c.id, c.function.name) for c in resp.choices[0].message.tool_calls or []]


def _spec(tool: dict) -> ToolSpec:
    fn = tool["function"]
    return ToolSpec(fn["name"], fn["description"], fn["parameters"])


def test_relevant_tools_one_per_turn_in_mention_order_or_all_when_asked():
    tools = [_spec(WEATHER), _spec(TIME)]
    later = Conversation(tools=tools, last_user_text="Get the time in Paris, then the weather in Paris.")
    assert [t.name for t in tools_for_turn(later)] == ["get_time"]
    together = Conversation(tools=tools, last_user_text="In parallel, get the weather and the time in Paris.")
    assert [t.name for t in tools_for_turn(together)] == ["get_weather", "get_time"]
    done = Conversation(
        tools=tools, last_user_text=later.last_user_text, last_role="tool", tool_results=[("get_time", "{}")]
    )
    done.called_since_user = ["get_time"]
    assert [t.name for t in tools_for_turn(done)] == ["get_weather"]
    done.called_since_user = ["get_time", "get_weather"]
    assert tools_for_turn(done) == []
    named = Conversation(tools=tools, last_user_text="hello", tool_choice={"function": {"name": "get_time"}})
    assert [t.name for t in tools_for_turn(named)] == ["get_time"]
    assert tools_for_turn(Conversation(tools=tools, last_user_text=later.last_user_text, tool_choice="none")) == []


def test_chain_counts_earlier_calls_and_reuses_results(client):
    messages = [{"role": "user", "content": "First get the weather in Paris, then get the local time in Paris."}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER, TIME], max_tokens=500)
    assert _calls(first) == [("functions.get_weather:0", "get_weather")]
    call = first.choices[0].message.tool_calls[0]
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"city": "Lyon", "forecast": "clear"})},
    ]
    second = client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER, TIME], max_tokens=500)
    assert _calls(second) == [("functions.get_time:1", "get_time")]
    assert json.loads(second.choices[0].message.tool_calls[0].function.arguments) == {"city": "Lyon"}


def test_pasted_json_document_and_quoted_values_become_arguments(client):
    doc = {"title": 'Q3 "review"', "nested": {"ü": [1, {"x": "a\\b"}]}}
    text = f'Call save_document with path "notes/a.json" and this document:\n```json\n{json.dumps(doc)}\n```'
    assert json_document(text) == doc and quoted_values(text) == {"path": "notes/a.json"}
    resp = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": text}], tools=[SAVE])
    assert json.loads(resp.choices[0].message.tool_calls[0].function.arguments) == {
        "path": "notes/a.json",
        "document": doc,
    }


def _plan_with_long_call() -> Plan:
    call = ToolCall(0, "save_document", json.dumps({"document": "x" * (2 * LONG_ARGUMENTS)}))
    events = [Event("reasoning", "r"), Event("tool_name", call.name, 0)] + [
        Event("tool_args", call.arguments[i : i + 10], 0) for i in range(0, len(call.arguments), 10)
    ]
    return Plan(events, "tool_calls", [call])


def test_fault_transformations_touch_only_their_target():
    call = ToolCall(0, "geo-lookup_v2", '{"city": "Paris"}')
    reply = Reply("thinking", "", [call, ToolCall(1, "get_time", '{"city": "Paris"}')])
    follow_up = Conversation(last_role="tool", tool_results=[("get_time", "{}")])
    first = Conversation(last_role="user")
    assert ToolFaults(None).reply(reply, first, True, 0) is reply
    assert ToolFaults("empty-after-think").reply(reply, follow_up, True, 0) == Reply("thinking", "")
    assert ToolFaults("empty-after-think").reply(reply, first, True, 0) is reply
    leaked = ToolFaults("markers-in-content").reply(reply, first, True, 3)
    assert leaked.tool_calls == [] and "<|tool_call_begin|>functions.get_time:4" in leaked.content
    inside = ToolFaults("call-in-reasoning").reply(reply, first, True, 0)
    assert inside.tool_calls == [] and inside.reasoning.startswith("thinking<|tool_calls_section_begin|>")
    assert ToolFaults("call-in-reasoning").reply(reply, first, False, 0) is reply  # no thinking, no reasoning
    dropped = ToolFaults("hyphen-names-dropped").reply(reply, first, True, 0)
    assert [(c.index, c.name) for c in dropped.tool_calls] == [(0, "get_time")]
    assert ToolFaults(None).call_id("f", 2, 1) == "functions.f:3"
    assert ToolFaults("ids-restart").call_id("f", 2, 1) == "functions.f:1"
    assert ToolFaults("uuid-call-ids").call_id("f", 2, 1).startswith("call_")
    assert ToolFaults("parallel-index-reused").stream_index(1) == 0 and ToolFaults(None).stream_index(1) == 1
    plan = _plan_with_long_call()
    cut = ToolFaults("stream-args-cut").dropped_stream_pieces(plan)
    args = [i for i, e in enumerate(plan.events) if e.kind == "tool_args"]
    assert cut and cut < set(args) and min(cut) > args[len(args) // 3]  # the second half only
    assert ToolFaults(None).dropped_stream_pieces(plan) == set()
    assert ToolFaults.from_settings(EmulatorSettings(fault="no-reasoning")).kind is None
    forced = Conversation(tool_choice="required")
    assert ToolFaults("tool-choice-ignored").conversation(forced).tool_choice == "auto"
    assert ToolFaults(None).conversation(forced) is forced
