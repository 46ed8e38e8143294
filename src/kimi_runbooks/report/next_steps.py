"""What to do next: every failure and warning of a run, each with the fix a reviewer can act on."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..accuracy.judgement import NEXT_STEP as ACCURACY_NEXT_STEP
from .causes import NOT_KIMI_FIX, REASONING, TOOLS, accuracy_failures, diagnosis, named, speed_failures
from .collect import RunData
from .verdict import accuracy_judgements, warnings

CHECK_FIXES: dict[str, str] = {
    "models": "set model / served_model_name to the name the server lists under /v1/models",
    "chat": "read server.log in the run folder for the request's error; check the server is healthy",
    "thinking": "start the server with --reasoning-parser kimi_k2 (reasoning must come back in reasoning_content)",
    "thinking_stream": "start the server with --reasoning-parser kimi_k2; reasoning deltas must come before content",
    "instant": "instant mode is chat_template_kwargs={'thinking': False}; check the checkpoint's chat template",
    "tool_call": "start the server with --tool-call-parser kimi_k2 matching the checkpoint",
    "tool_call_stream": "start the server with --tool-call-parser kimi_k2; streamed argument deltas must reassemble",
    "tool_result": "check --tool-call-parser kimi_k2 and that the chat template accepts tool messages",
    "image": "serve a multimodal checkpoint (Kimi-K2.5/K2.6) and check server.log for the image error",
    "image_content": "the answer did not read the image: check the vision tower loaded (server.log)",
    "image_tools": "check image input and --tool-call-parser kimi_k2 together",
    "concurrency": "parallel requests failed: read server.log; lower load or raise --max-running-requests",
}
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


def next_steps(data: RunData) -> list[Step]:
    steps: list[Step] = []
    for error in data.plan_errors:
        what, fix = _split_fix(error, "change the parameter the rule names")
        steps.append(Step(what, fix, "failure"))
    for state in data.stages.values():
        derived = data.outcomes.get(state.name)
        if state.name in ("speed", "accuracy") and derived is not None and state.detail == derived.reason:
            continue  # the failed scenarios / suites follow, one step per cause
        if state.status == "failed":
            notebook = f" (run folder: {state.notebook})" if state.notebook else ""
            what, fix = _split_fix(
                f"stage {state.name} failed: {state.detail}", f"open the executed notebook{notebook}"
            )
            steps.append(Step(what[:400], fix, "failure"))
    shared = diagnosis(data.invoke)
    if shared:  # one cause behind the reasoning and tool-call failures: one step, not one per check
        steps.append(Step(shared, NOT_KIMI_FIX, "failure"))
    covered = set(REASONING + TOOLS) if shared else set()
    for r in data.invoke or []:
        if r.status == "fail" and not (r.name in covered and getattr(r, "suite", "feature") == "feature"):
            steps.append(
                Step(f"invoke check {r.name}: {r.reason[:300]}", CHECK_FIXES.get(r.name, "read server.log"), "failure")
            )
    for g in speed_failures(data.speed):  # one step per cause, naming every scenario it stopped
        steps.append(
            Step(
                f"{named(g, 'speed scenario')} failed: {g.example[:300]}",
                "read its log in logs/ and rerun the speed stage (finished scenarios are kept)",
                "failure",
            )
        )
    for g in accuracy_failures(data.accuracy):
        steps.append(
            Step(
                f"{named(g, 'accuracy suite')} errored",
                g.example[:300] or "read the tool's log under accuracy/",
                "failure",
            )
        )
    for r in data.accuracy or []:
        if r.get("status") == "skipped":
            what, fix = _split_fix(str(r.get("detail") or ""), "stage what the suite needs")
            steps.append(Step(f"accuracy suite {r.get('suite')} skipped: {what[:200]}", fix, "warning"))
    for j in accuracy_judgements(data):
        if j.status == "fail":
            steps.append(Step(j.text[:400], ACCURACY_NEXT_STEP, "failure"))
    for w in warnings(data):
        if w.kind in ("emulated",) or (w.kind == "prediction" and data.emulated):
            continue  # an emulated result off the prediction is about the emulator's profile, not a server
        if w.kind in ("failed", "skipped") and (w.text.startswith("speed scenario") and "failed" in w.text):
            continue  # failed scenarios are above, one step per cause
        default = {
            "accuracy": ACCURACY_NEXT_STEP,
            "regression": "compare the launch flags with the reference's; check clocks and that nothing else "
            "shares the devices",
            "skipped": "see the reason; run it where it applies",
            "security": "set api_key_env, or bind 127.0.0.1",
            "prediction": "compare the server's launch flags with the plan's (a misconfigured server); if they "
            "match, publish the result in params/references and recalibrate (python -m kimi_runbooks.perfmodel "
            "calibrate --write)",
        }.get(w.kind, "see the detail")
        what, fix = _split_fix(w.text, default)
        steps.append(Step(what[:400], fix, "warning"))
    return steps
