"""One pydantic-ai agent run against an OpenAI-compatible server (the `agents` tool env).

Usage: python agent_loop.py --base-url URL --model NAME --output {tool,native} [--stream]
       python agent_loop.py --version

The agent has one tool, get_weather(city), and must end with a WeatherReport (pydantic model):

* ``--output tool`` is pydantic-ai's default structured output: the report is the arguments of
  its ``final_result`` tool, requested with ``tool_choice="required"`` on every turn (text is
  not an allowed answer). The run is a tool loop: get_weather, its result, then final_result,
  which the server only sends when it honours tool_choice after a tool result.
* ``--output native`` is ``NativeOutput`` (``response_format`` json_schema), the report being the
  message content, which must validate against the schema. SGLang turns the tool-call parser off
  for a request with a JSON response_format (serving_chat.py), so no tool can be called on such a
  turn: the agent first runs the tool loop with text output (tool_choice auto: get_weather, its
  result, a text answer), then asks for the report with that history and NativeOutput, as an
  agent that extracts a structured result after its tools have answered does.

``--stream`` runs the agent with ``run_stream`` (streamed chat completions) instead of ``run``.
Prints one JSON line: ok, output (the report) or error, the tool calls in the history in order,
and what each chat-completions request asked for (stream, tool_choice, response_format type),
recorded on the openai client the agent uses.
"""

import argparse
import asyncio
import json
import sys
from importlib import metadata

from openai import AsyncOpenAI
from pydantic import BaseModel, Field
from pydantic_ai import Agent, NativeOutput, ToolOutput
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

PROMPT = "What is the weather in Paris? Use the get_weather tool, then report it."
REPORT_PROMPT = "Now give the weather report for Paris."


class WeatherReport(BaseModel):
    city: str = Field(description="the city the report is for")
    temperature_c: float = Field(description="temperature in degrees Celsius")
    conditions: str = Field(description="a few words on the sky and rain")


def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    return {"city": city, "temperature_c": 18.5, "conditions": "light rain"}


def recording_client(base_url, api_key, sent):
    """An AsyncOpenAI whose chat.completions.create notes what each request asked for."""
    client = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=120)
    create = client.chat.completions.create

    async def create_and_record(*args, **kwargs):
        fmt = kwargs.get("response_format")
        sent.append(
            {
                "stream": bool(kwargs.get("stream")),
                "tool_choice": kwargs.get("tool_choice") if isinstance(kwargs.get("tool_choice"), str | dict) else None,
                "tools": [t["function"]["name"] for t in kwargs.get("tools") or [] if isinstance(t, dict)],
                "response_format": fmt.get("type") if isinstance(fmt, dict) else None,
            }
        )
        return await create(*args, **kwargs)

    client.chat.completions.create = create_and_record
    return client


def build_agent(args, sent):
    client = recording_client(args.base_url.rstrip("/") + "/v1", args.api_key, sent)
    model = OpenAIChatModel(args.model, provider=OpenAIProvider(openai_client=client))
    return Agent(model, output_type=ToolOutput(WeatherReport), tools=[get_weather], retries=2)


async def one_run(agent, prompt, stream, **kwargs):
    """(output, all messages) of one agent run, streamed or not."""
    if stream:
        async with agent.run_stream(prompt, **kwargs) as result:
            output = await result.get_output()
            return output, result.all_messages()
    result = await agent.run(prompt, **kwargs)
    return result.output, result.all_messages()


async def run(args):
    sent = []
    agent = build_agent(args, sent)
    report = {"framework": "pydantic-ai-slim", "version": metadata.version("pydantic-ai-slim"), "sent": sent}
    report.update(output_mode=args.output, stream=args.stream)
    try:
        if args.output == "native":
            _, history = await one_run(agent, PROMPT, args.stream, output_type=str)
            native = NativeOutput(WeatherReport)
            output, messages = await one_run(
                agent, REPORT_PROMPT, args.stream, output_type=native, message_history=history
            )
        else:
            output, messages = await one_run(agent, PROMPT, args.stream)
    except Exception as exc:  # the report says how the framework failed
        report.update(ok=False, error=f"{type(exc).__name__}: {exc}"[:2000])
        return report
    calls = [
        {"tool": part.tool_name, "args": part.args_as_dict()}
        for msg in messages
        if isinstance(msg, ModelResponse)
        for part in msg.parts
        if isinstance(part, ToolCallPart)
    ]
    report.update(ok=isinstance(output, WeatherReport), output=output.model_dump(), tool_calls=calls)
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="store_true", help="print pydantic-ai-slim's version and exit")
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--api-key", default="EMPTY")
    parser.add_argument("--output", choices=("tool", "native"), default="tool")
    parser.add_argument("--stream", action="store_true")
    args = parser.parse_args(argv)
    if args.version:
        print(metadata.version("pydantic-ai-slim"))
        return 0
    if not args.base_url or not args.model:
        parser.error("--base-url and --model are required")
    report = asyncio.run(run(args))
    print(json.dumps(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
