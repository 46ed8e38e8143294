"""What to do next: a failing run's causes, each once with the fix a reviewer can act on.

One line per cause, not per failed unit: a run against a server that is not Kimi behind SGLang fails
some 40 checks for a handful of reasons, and the reviewer reads the list in a minute only when it
names those reasons (at most MAX_STEPS lines). The run-level diagnoses lead (diagnoses.py); the
checks, scenarios and suites they explain are not listed again; fixes name only what this run has
(no server.log for a server the run did not start).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..accuracy.judgement import NEXT_STEP as ACCURACY_NEXT_STEP
from . import causes
from .causes import accuracy_failures, named, speed_failures
from .collect import RunData
from .diagnoses import SERVER_CAUSES, covered, diagnoses, read_log_step
from .verdict import Warning_, accuracy_judgements, warnings

MAX_STEPS = 8
"""Lines of "What to do next" at most; the causes past it are named on the last line."""
WHAT_CHARS = 300
"""A step's problem, cut: the sections below hold every reason in full."""

CHECK_FIXES: dict[str, str] = {
    "models": "set model / served_model_name to the name the server lists under /v1/models",
    "reasoning": "start the server with --reasoning-parser kimi_k2 (reasoning must come back in reasoning_content, "
    "its deltas before content)",
    "instant": "instant mode is chat_template_kwargs={'thinking': False}; check the checkpoint's chat template",
    "tool calls": "start the server with --tool-call-parser kimi_k2 matching the checkpoint (streamed argument "
    "deltas must reassemble; the chat template must accept tool messages)",
    "structured output": "SGLang honours response_format with its grammar backend (xgrammar by default): check "
    "--grammar-backend is not none and that the answers are not cut by max_tokens",
    "tool_choice after a tool result": "SGLang constrains a required or named tool_choice to a call: check "
    "--tool-call-parser kimi_k2 (an agent keeping tool_choice loops otherwise)",
    "agentic cases": "each case's expected behaviour is in the Invoke section; most follow from "
    "--tool-call-parser kimi_k2 and the checkpoint's chat template",
}
LOG_FIXES: dict[str, str] = {
    "chat": "the request's error; check the server is healthy",
    "image": "the image error; serve a multimodal checkpoint (Kimi-K2.5/K2.6) with its vision tower",
    "image_content": "whether the vision tower loaded (the answer did not read the image)",
    "concurrency": "the failed parallel requests; lower load or raise --max-running-requests",
}
"""Checks whose fix starts in the server's log (read_log_step says where that is for this run)."""
FIX_IN_TEXT = re.compile(r"\bFix:\s*(?P<fix>.+)$", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Step:
    what: str
    fix: str
    kind: str  # failure | warning


def _split_fix(text: str, default: str) -> tuple[str, str]:
    """'<problem>. Fix: <fix>' -> (problem, fix); the default fix when the text names none."""
    match = FIX_IN_TEXT.search(text)
    if not match:
        return text.strip(), default
    fix = match.group("fix").strip()
    fix = re.split(r"\.\s+Source:", fix)[0].strip()
    return text[: match.start()].rstrip(" .;"), fix


def _cut(text: str, chars: int = WHAT_CHARS) -> str:
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def _check_fix(data: RunData, group: causes.Group) -> str:
    if group.cause in CHECK_FIXES:
        return CHECK_FIXES[group.cause]
    if group.cause in LOG_FIXES:
        return read_log_step(data, LOG_FIXES[group.cause])
    return read_log_step(data, "the requests' errors")


def _invoke_steps(data: RunData, done: set[tuple[str, str]]) -> list[Step]:
    """One step per family of failed checks (reasoning, tool calls, structured output, ...)."""
    left = [r for r in data.invoke or [] if ("invoke", r.name) not in done]
    steps = []
    for g in causes.groups(left):
        checks = f"invoke check {g.names[0]}" if len(g.names) == 1 else named(g, "invoke check")
        head = checks if len(g.names) == 1 or g.cause == g.names[0] else f"{g.cause}: {checks}"
        steps.append(Step(f"{head} failed: {_cut(g.example, 160)}", _check_fix(data, g), "failure"))
    return steps


def _failure_steps(data: RunData, done: set[tuple[str, str]]) -> list[Step]:
    steps = []
    for state in data.stages.values():
        derived = data.outcomes.get(state.name)
        if derived is not None and state.detail == derived.reason:
            continue  # the failed checks, scenarios and suites follow, one step per cause
        if state.status == "failed":
            notebook = f" (run folder: {state.notebook})" if state.notebook else ""
            what, fix = _split_fix(
                f"stage {state.name} failed: {state.detail}", f"open the executed notebook{notebook}"
            )
            steps.append(Step(_cut(what), fix, "failure"))
    steps += _invoke_steps(data, done)
    for g in speed_failures(data.speed):  # one step per cause, naming every scenario it stopped
        left = [n for n in g.names if ("speed", n) not in done]
        if left:
            group = causes.Group(g.cause, left, g.example)
            steps.append(
                Step(
                    _cut(f"{named(group, 'speed scenario')} failed: {g.example}"),
                    "read its log in logs/ and rerun the speed stage (finished scenarios are kept)",
                    "failure",
                )
            )
    for g in accuracy_failures(data.accuracy):
        left = [n for n in g.names if ("accuracy", n) not in done]
        if left:
            group = causes.Group(g.cause, left, g.example)
            steps.append(
                Step(
                    f"{named(group, 'accuracy suite')} errored",
                    _cut(g.example) or "read the tool's log under accuracy/",
                    "failure",
                )
            )
    for r in data.accuracy or []:
        if r.get("status") == "skipped":
            what, fix = _split_fix(str(r.get("detail") or ""), "stage what the suite needs")
            steps.append(Step(_cut(f"accuracy suite {r.get('suite')} skipped: {what}"), fix, "warning"))
    return steps


def _joined(texts: list[str], each: int = 120) -> str:
    return "; ".join(_cut(t, each) for t in texts)


WARNING_FIXES: dict[str, str] = {
    "regression": "compare the launch flags with the reference's; check clocks and that nothing else shares the "
    "devices",
    "skipped": "each needs what its reason names; run it where it applies",
    "security": "set api_key_env, or bind 127.0.0.1",
    "prediction": "compare the server's launch flags with the plan's (a misconfigured server); if they match, "
    "publish the result in params/references and recalibrate (python -m kimi_runbooks.perfmodel calibrate --write)",
}
GROUPED = {
    "regression": lambda n: f"{n} regression(s) against published references",
    "prediction": lambda n: f"{n} metric(s) outside the predicted band (performance model)",
    "skipped": lambda n: f"{n} item(s) skipped, not failed",
    "not comparable": lambda n: f"{n} speed scenario(s) not comparable",
}
"""Warnings of these kinds are one step each kind (their fix is the same), naming every item."""


def _warning_steps(data: RunData, done: set[tuple[str, str]]) -> list[Step]:
    """The warnings, each text once (a plan warning the deploy stage repeats is one), alike ones on one line."""
    seen: set[str] = set()
    by_kind: dict[str, list[Warning_]] = {}
    for w in warnings(data):
        if w.kind == "emulated" or (w.kind == "prediction" and data.emulated):
            continue  # an emulated result off the prediction is about the emulator's profile, not a server
        if w.text.startswith("speed scenario") and (w.kind == "failed" or _covered_speed(w.text, done)):
            continue  # failed scenarios are above, one step per cause; a diagnosed skip is said there
        if w.text in seen:
            continue
        seen.add(w.text)
        by_kind.setdefault(w.kind, []).append(w)
    steps = []
    judged = [j.text for j in accuracy_judgements(data) if j.status == "fail"]
    below = [w.text for w in by_kind.pop("accuracy", [])]
    if judged or below:
        steps.append(
            Step(
                _cut(_joined(judged + below, 200), 2 * WHAT_CHARS),
                ACCURACY_NEXT_STEP,
                "failure" if judged else "warning",
            )
        )
    for kind, found in by_kind.items():
        label: Callable[[int], str] | None = GROUPED.get(kind)
        if label is not None and len(found) > 1:
            texts = [_split_fix(w.text, "")[0] for w in found]
            if kind == "skipped":  # each skip's reason is its own
                what = f"{label(len(found))}: {_joined(texts)}"
            else:  # the first in full, the rest by scenario and metric
                what = f"{label(len(found))}: {_cut(texts[0], 200)}; also {_by_scenario(texts[1:])}"
            steps.append(Step(_cut(what, 2 * WHAT_CHARS), WARNING_FIXES[kind], "warning"))
            continue
        for w in found:
            what, fix = _split_fix(w.text, WARNING_FIXES.get(kind, "see the detail"))
            steps.append(Step(_cut(what), fix, "warning"))
    return steps


def _by_scenario(texts: list[str]) -> str:
    """'<scenario> <metric>: ...' texts -> 'scenario (metric, metric), scenario (metric)'."""
    metrics: dict[str, list[str]] = {}
    for text in texts:
        scenario, _, metric = text.split(":", 1)[0].partition(" ")
        metrics.setdefault(scenario, []).append(metric)
    return ", ".join(f"{s} ({', '.join(m)})" if any(m) else s for s, m in metrics.items())


def _covered_speed(text: str, done: set[tuple[str, str]]) -> bool:
    scenario = text.removeprefix("speed scenario ").split(":", 1)[0]
    return ("speed", scenario) in done


def _capped(steps: list[Step]) -> list[Step]:
    """At most MAX_STEPS lines; the last one names the causes it leaves to the sections below."""
    if len(steps) <= MAX_STEPS:
        return steps
    kept, rest = steps[: MAX_STEPS - 1], steps[MAX_STEPS - 1 :]
    names = _joined([s.what.split(":", 1)[0] for s in rest], 80)
    kind = "failure" if any(s.kind == "failure" for s in rest) else "warning"
    return [*kept, Step(f"{len(rest)} more: {names}", "see each in the sections below", kind)]


def next_steps(data: RunData) -> list[Step]:
    steps: list[Step] = []
    for error in data.plan_errors:
        what, fix = _split_fix(error, "change the parameter the rule names")
        steps.append(Step(what, fix, "failure"))
    found = diagnoses(data)
    steps += [Step(_cut(d.text), d.fix, "failure") for d in found if d.kind in SERVER_CAUSES]
    failures = _failure_steps(data, covered(found))
    model = [Step(_cut(d.text), d.fix, "failure") for d in found if d.kind not in SERVER_CAUSES]
    harness = [s for s in failures if s.what.startswith("stage ")]
    steps += harness + model + [s for s in failures if s not in harness]
    steps += _warning_steps(data, covered(found))
    return _capped(steps)
