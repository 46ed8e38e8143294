"""The Kimi Vendor Verifier's pre-flight set, as invoke checks (MoonshotAI/Kimi-Vendor-Verifier).

Its README ("Pre-flight Validation") asks a vendor to pass three checks before any benchmark:

* ``kvv_params`` -- MoonshotAI/Kimi-Vendor-Verifier ``tests/params/test_params.py``: a request
  without sampling parameters succeeds, thinking on and off (``--think-mode opensource``:
  ``chat_template_kwargs.thinking``), and each parameter at its default value is accepted. The
  verifier also expects a vendor API to *reject* other values of these fixed parameters; SGLang
  0.5.23 has no such rule (any valid temperature is accepted), so those answers are recorded,
  not failed: an SGLang deployment can never pass that part, whatever its configuration.
* ``kvv_tool_schema`` / ``kvv_tool_schema_stream`` -- ``tests/tool_call_json_schema/
  test_tool_call_json_schema.py`` with ``validator.py``: each schema is a tool's ``parameters``,
  the call is forced (``tool_choice="required"``, tool ``kvv_walle_case``), and the returned
  arguments must validate (Draft 2020-12), whole and reassembled from a stream. The schemas here
  are written for this project in the shapes of the verifier's walle cases (``$defs``/``$ref``,
  ``anyOf``, ``additionalProperties``, enums, nested arrays, ranges), not copied from them.
* ``kvv_prompt_tokens`` -- ``tests/prompt_tokens/test_prompt_tokens.py``: streamed requests whose
  ``usage.prompt_tokens`` must lie in [expected, expected + 3]. The verifier's expected values are
  constants for Kimi's own tokenizer; here the expected value is counted with the run's tokenizer
  and chat template (the one the speed stage uses, target.served_tokenizer: the tokenizer parameter, the
  handle's, the deployed model_path; in the bench env), or the emulator's own when the target is the
  emulator; without either the check is skipped and says what to pass.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..kimi.chat_template import render
from ..kimi.parsers import parser_format
from ..kimi.tokenizer import count_tokens
from ..rundir import RunFolder
from ..target.served_tokenizer import PASS_IT, TokenizerChoice, served_tokenizer
from .checks import _validator_for
from .session import CheckFailed, CheckSkipped, Recorder, Session

KVV = "MoonshotAI/Kimi-Vendor-Verifier"
TOOL_NAME = "kvv_walle_case"  # validator.py TOOL_NAME
OVERCOUNT = 3  # test_prompt_tokens.py MAX_PROMPT_TOKEN_OVERCOUNT
PARAM_DEFAULTS = {"temperature": (0.6, 0.0, 1.0), "top_p": (0.95,), "presence_penalty": (0,), "frequency_penalty": (0,)}
PARAM_WRONG = {
    "temperature": (1.1, 2.0, -0.1),
    "top_p": (0.8,),
    "presence_penalty": (0.5,),
    "frequency_penalty": (0.5,),
}
PROMPT = "Say 'OK' and nothing else."  # test_params.py's prompt

SCHEMAS: list[dict[str, Any]] = [
    {
        "$defs": {"User": {"properties": {"name": {"type": "string"}}, "type": "object"}},
        "type": "object",
        "properties": {"owner": {"$ref": "#/$defs/User"}},
        "required": ["owner"],
    },
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["mode", "count"],
        "properties": {
            "mode": {"enum": ["read", "write", "admin"]},
            "count": {"type": "integer", "minimum": 3, "maximum": 9},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        },
    },
    {
        "type": "object",
        "required": ["target"],
        "properties": {
            "target": {"anyOf": [{"type": "string", "minLength": 4}, {"type": "integer"}]},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2, "uniqueItems": True},
        },
    },
    {
        "$defs": {
            "priv": {"enum": ["select", "insert", "update"], "type": "string"},
            "grants": {"type": "object", "additionalProperties": {"type": "array", "items": {"$ref": "#/$defs/priv"}}},
        },
        "type": "object",
        "required": ["grants", "nested"],
        "properties": {
            "grants": {"$ref": "#/$defs/grants"},
            "nested": {
                "type": "object",
                "required": ["level"],
                "properties": {
                    "level": {
                        "type": "object",
                        "required": ["depth"],
                        "properties": {"depth": {"type": "integer", "const": 3}},
                    }
                },
            },
        },
    },
]


def _thinking(on: bool) -> dict[str, Any]:
    return {"chat_template_kwargs": {"thinking": on}}


PARAMS_MAX_TOKENS = 32
"""kvv_params asks whether a parameter is accepted, not what comes back: ~40 requests of a few tokens each
(at the full budget, 132 s against a CPU rehearsal)."""


def check_kvv_params(s: Session, rec: Recorder) -> str:
    problems, accepted_wrong = [], []
    s = replace(s, max_tokens=min(s.max_tokens, PARAMS_MAX_TOKENS))
    for on in (False, True):
        try:
            rec.chat({**s.body(PROMPT), **_thinking(on)})
        except Exception as exc:  # noqa: BLE001 - the verdict names what the server said
            problems.append(f"no optional parameters, thinking={on}: {type(exc).__name__}: {exc}"[:300])
        for name, values in PARAM_DEFAULTS.items():
            for value in values:
                try:
                    rec.chat({**s.body(PROMPT), **_thinking(on), name: value})
                except Exception as exc:  # noqa: BLE001
                    problems.append(f"{name}={value} (a default) refused, thinking={on}: {exc}"[:300])
    for name, values in PARAM_WRONG.items():
        for value in values:
            try:
                rec.chat({**s.body(PROMPT), name: value})
                accepted_wrong.append(f"{name}={value}")
            except Exception:  # noqa: BLE001 - a refusal is what the verifier wants; recorded
                pass
    rec.details["accepted_non_default"] = accepted_wrong
    if problems:
        raise CheckFailed(f"{KVV} tests/params/test_params.py: " + "; ".join(problems))
    note = (
        f"; non-default values accepted ({', '.join(accepted_wrong)}): SGLang does not fix Kimi's sampling "
        "parameters, so the verifier's test_wrong_param_rejected fails on any SGLang deployment"
        if accepted_wrong
        else "; non-default values refused, as the verifier expects"
    )
    return f"requests without parameters and with each default value accepted, thinking on and off{note}"


def _tool_body(s: Session, schema: dict[str, Any]) -> dict[str, Any]:
    tool = {"type": "function", "function": {"name": TOOL_NAME, "description": "Validate the arguments.",
                                             "parameters": schema}}  # fmt: skip
    text = f"Call the {TOOL_NAME} tool exactly once with minimum valid arguments."
    return {**s.body(text), "tools": [tool], "tool_choice": "required"}


def _schema_check(s: Session, rec: Recorder, stream: bool) -> str:
    problems = []
    for i, schema in enumerate(SCHEMAS):
        body = _tool_body(s, schema)
        if stream:
            out = rec.stream(body)
            calls = [out.tool_calls[k] for k in sorted(out.tool_calls)]
            pairs = [(c.get("name"), c.get("arguments") or "") for c in calls]
        else:
            message = rec.chat(body).message
            pairs = [(c.function.name, c.function.arguments or "") for c in message.tool_calls or []]
        named = [args for name, args in pairs if name == TOOL_NAME]
        if not named:
            problems.append(f"schema {i}: no {TOOL_NAME} call although tool_choice is required (got {pairs})"[:300])
            continue
        try:
            value = json.loads(named[0])
        except ValueError as exc:
            problems.append(f"schema {i}: arguments are not JSON ({exc}): {named[0][:120]!r}")
            continue
        errors = sorted(_validator_for(schema)(schema).iter_errors(value), key=lambda e: list(e.path))
        if errors:
            where = "/".join(str(p) for p in errors[0].path) or "(root)"
            problems.append(f"schema {i}: {where}: {errors[0].message}"[:300])
    if problems:
        raise CheckFailed(
            f"{KVV} tests/tool_call_json_schema ({'stream' if stream else 'non-stream'}): " + "; ".join(problems)
        )
    return f"{len(SCHEMAS)} forced {TOOL_NAME} calls, every argument document valid against its schema"


def check_kvv_tool_schema(s: Session, rec: Recorder) -> str:
    return _schema_check(s, rec, stream=False)


def check_kvv_tool_schema_stream(s: Session, rec: Recorder) -> str:
    return _schema_check(s, rec, stream=True)


PROMPT_CASES: list[dict[str, Any]] = [
    {"messages": [{"role": "user", "content": "Hello"}]},
    {
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "你好, naïve café? 12345"},
        ]
    },
    {
        "messages": [{"role": "user", "content": "Weather?"}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather for a city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            }
        ],
    },
]


def stage_tokenizer(
    folder: RunFolder | None, target: Any, tokenizer: str | Path | None = None
) -> TokenizerChoice | None:
    """The invoke stage's tokenizer: the one the speed stage counts with (target.served_tokenizer)."""
    choice = served_tokenizer(tokenizer, target, folder=folder)
    print(f"tokenizer: {choice or '(none known: the prompt-token check counts only against the emulator)'}")
    return choice


def expected_prompt_tokens(s: Session, cases: list[dict[str, Any]]) -> tuple[list[int], str]:
    """Prompt tokens by the run's tokenizer and chat template: (counts, where they came from)."""
    if s.tokenizer is not None:
        counted = _count_in_bench_env(s.tokenizer.path, cases)
        return counted, f"the run's tokenizer {s.tokenizer.path}, from {s.tokenizer.source}"
    if s.emulated:
        # a parser's prompt stub usage leaves out (kimi_k3: 3 tokens, kimi/parsers.py) is not counted either
        unreported = parser_format(s.served.tool_call_parser if s.served else None).unreported_prompt_tokens
        counts = [count_tokens(render(c["messages"], c.get("tools"))) - unreported for c in cases]
        return counts, "the emulator's tokenizer and chat template"
    raise CheckSkipped(
        f"no tokenizer of the served model is known to count the expected prompt tokens with. Fix: {PASS_IT}"
    )


def _count_in_bench_env(tokenizer: str, cases: list[dict[str, Any]]) -> list[int]:
    from ..tools.envs import OFFLINE_ENV, tool_env
    from ..tools.scripts import script

    env = tool_env("bench")
    proc = subprocess.run(
        [str(env.python), str(script("chat_tokens.py")), tokenizer],
        input=json.dumps(cases), capture_output=True, text=True, timeout=300, env={**os.environ, **OFFLINE_ENV},
    )  # fmt: skip
    if proc.returncode != 0:
        raise CheckSkipped(f"could not count with {tokenizer} in the bench env: {proc.stderr.strip()[-300:]}")
    counts: list[int] = json.loads(proc.stdout.strip().splitlines()[-1])
    return counts


def check_kvv_prompt_tokens(s: Session, rec: Recorder) -> str:
    expected, origin = expected_prompt_tokens(s, PROMPT_CASES)
    problems, seen = [], []
    for i, (case, want) in enumerate(zip(PROMPT_CASES, expected)):
        body = {"model": s.model, "max_tokens": 8, **case}
        out = rec.stream(body)
        got = (out.usage or {}).get("prompt_tokens")
        seen.append(got)
        if got is None:
            problems.append(f"case {i}: the stream's usage chunk has no prompt_tokens (stream_options.include_usage)")
        elif not want <= got <= want + OVERCOUNT:
            problems.append(f"case {i}: usage.prompt_tokens {got}, expected {want} (to {want + OVERCOUNT}) by {origin}")
    rec.details["prompt_tokens"] = {"reported": seen, "expected": expected, "counted_by": origin}
    if problems:
        raise CheckFailed(f"{KVV} tests/prompt_tokens/test_prompt_tokens.py: " + "; ".join(problems))
    return f"usage.prompt_tokens {seen} within [expected, +{OVERCOUNT}] of {expected}, counted by {origin}"


KVV_CHECKS = {
    "kvv_params": check_kvv_params,
    "kvv_tool_schema": check_kvv_tool_schema,
    "kvv_tool_schema_stream": check_kvv_tool_schema_stream,
    "kvv_prompt_tokens": check_kvv_prompt_tokens,
}
