"""The invoke stage: run(folder, options), and run_all: the checks against one server, each isolated
so one failure never stops the rest."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

from ..rundir import RunFolder
from ..secrets import redact
from ..target import locate as target_mod
from ..target.health import check_server
from ..target.locate import RunHandle, fetch_server_info
from ..target.served_limits import ServedLimits, read_served_limits
from ..target.served_tokenizer import TokenizerChoice, served_tokenizer
from ..target.tls import verified_tls
from .agentic import AGENTIC_CASES
from .checks import CHECKS
from .contracts import CONTRACT_CHECKS
from .image import RECEIPT_ITEM
from .kvv import KVV_CHECKS, stage_tokenizer
from .options import InvokeOptions
from .results import CheckResult, Suite, progress_to, save
from .scripted_checks import SCRIPTED_CHECKS
from .served import ServedModel, checks_for
from .session import CheckFailed, CheckSkipped, Recorder, Session, compact, describe_error
from .structured_checks import STRUCTURED_CHECKS

_BEFORE_LOAD = {name: fn for name, fn in CHECKS.items() if name != "concurrency"}
FEATURE_CHECKS = {**_BEFORE_LOAD, **STRUCTURED_CHECKS, **KVV_CHECKS, "concurrency": CHECKS["concurrency"]}
DEFAULT_NAMES = [*FEATURE_CHECKS, *AGENTIC_CASES]
ALL_NAMES = [*DEFAULT_NAMES, *CONTRACT_CHECKS, *SCRIPTED_CHECKS]


def _run_name(name: str, s: Session) -> list[CheckResult]:
    if name in AGENTIC_CASES:
        case = AGENTIC_CASES[name]
        return _run_one(name, case.run, s, suite="agentic", expected=case.expected)
    return _run_one(name, FEATURE_CHECKS.get(name) or CONTRACT_CHECKS.get(name) or SCRIPTED_CHECKS[name], s)


def _run_one(
    name: str,
    check: Callable[[Session, Recorder], str],
    s: Session,
    *,
    suite: Suite = "feature",
    expected: str | None = None,
) -> list[CheckResult]:
    rec = Recorder(s)
    try:
        status, reason = "pass", check(s, rec)
    except CheckSkipped as exc:
        status, reason = "skip", str(exc)
    except CheckFailed as exc:
        status, reason = "fail", str(exc)
        if s.handle.rehearsal and name not in (*SCRIPTED_CHECKS, *PROTOCOL_CHECKS):
            reason += f" [{MODEL_CAUSE}]"
    except Exception as exc:  # noqa: BLE001 - one broken check must not stop the others
        status, reason = "fail", describe_error(exc, s)
        if rec.exchanges and "response" not in rec.exchanges[-1]:
            rec.exchanges[-1]["error"] = reason
    where = dict(emulated=s.emulated, rehearsal=bool(s.handle.rehearsal), model=s.model, base_url=s.handle.base_url)
    names = [s.handle.api_key_env]
    observed = rec.details.pop("observed", None)
    results = [
        CheckResult(
            name=name,
            status=status,
            reason=redact(reason, names),
            suite=suite,
            expected=expected,
            observed=redact(compact(observed), names) if observed is not None else None,
            latency_ms=rec.latency_ms,
            ttft_ms=rec.ttft_ms,
            prompt_tokens=rec.prompt_tokens,
            completion_tokens=rec.completion_tokens,
            details=redact(compact(rec.details), names),
            transcript=redact(compact(rec.exchanges), names),
            **where,
        )
    ]
    # Sub-verdicts judged on the same exchange (kept there, so tokens are not counted twice).
    for sub, sub_status, sub_reason in rec.extra:
        results.append(
            CheckResult(
                name=sub, status=sub_status, reason=redact(sub_reason, names), details={"judged_on": name}, **where
            )
        )
    return results


def _blocked(name: str, s: Session, reason: str) -> list[CheckResult]:
    return [
        CheckResult(
            name=name,
            status="fail",
            reason=redact(f"not sent: {reason}", [s.handle.api_key_env]),
            suite="agentic" if name in AGENTIC_CASES else "feature",
            expected=AGENTIC_CASES[name].expected if name in AGENTIC_CASES else None,
            emulated=s.emulated,
            model=s.model,
            base_url=s.handle.base_url,
        )
    ]


SLOW_CHECKS = ("long_arguments", "long_arguments_stream", "kvv_params", "long_context", "reasoning_effort")
"""The checks that take longest (a 1.7k-token argument decoded, ~40 requests, a near-limit prompt,
one request per effort level): sent first when checks run side by side, so the many short ones
fill the other slots meanwhile instead of the slow ones running last (the demo's invoke stage,
4 at a time: they were 3 s of its 5.4 s, all after the short ones)."""


def submission_order(names: list[str]) -> list[str]:
    """The order checks run side by side in: SLOW_CHECKS first, the rest as given. Results and
    progress still come in the given order."""
    return sorted(names, key=lambda name: name not in SLOW_CHECKS)


IMAGE_CHECKS = ("image", "image_url", "image_tools")
PROTOCOL_CHECKS = ("models", "kvv_params", "kvv_prompt_tokens", "concurrency")
"""Checks of what the server does with a request, whatever the model answers: their failures are the server's."""
MODEL_CAUSE = (
    "likely cause: the model. A rehearsal's tiny random-weight model writes nonsense, so a check of what the "
    "model answers passes only on the real checkpoint (the scripted_* checks hold SGLang's parsers instead)"
)


def _no_images(name: str, s: Session) -> list[CheckResult]:
    """An image check against a server whose model takes no images: not sent. A rehearsal's tiny
    checkpoint has no vision tower by design (skip); any other server was expected to read images (fail)."""
    said = "; ".join(s.limits.sources) or "the server"
    if s.handle.rehearsal:
        status, reason = "skip", f"the tiny rehearsal checkpoint has no vision tower ({said})"
    else:
        status, reason = (
            "fail",
            (
                f"the server's model takes no image input ({said}), but the plan's model reads images. "
                "Fix: launch the multimodal checkpoint (with its vision tower), or drop the image checks"
            ),
        )
    return [
        CheckResult(
            name=name,
            status=status,
            reason=reason,
            emulated=s.emulated,
            rehearsal=bool(s.handle.rehearsal),
            model=s.model,
            base_url=s.handle.base_url,
        )
    ]


def detect_emulated(handle: RunHandle, timeout: float = 10.0) -> bool:
    """True when the handle says so, or /server_info reports `emulated: true`."""
    if handle.emulated:
        return True
    info = fetch_server_info(handle.base_url, handle.api_key(), timeout)
    return bool((info or {}).get("emulated", False))


def resolve_target(
    folder: RunFolder | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
) -> RunHandle:
    """The server to probe: an explicit base_url (external server) or the run folder's handle."""
    return target_mod.resolve_target(folder, base_url=base_url, model=model, api_key_env=api_key_env)


def unusable_reason(handle: RunHandle, timeout: float = 30.0) -> str | None:
    """The readiness chain up to the key, once, before any check: an unset key variable, a refused
    key, a wrong URL or an unknown host fails every check with the same cause, so each check is
    failed with that cause (naming the fix) instead of sending requests that cannot succeed. A
    model the server does not list is left to the `models` check (some servers answer any name)."""
    result = check_server(
        handle.base_url,
        handle.model or None,
        api_key_env=handle.api_key_env,
        timeout=min(timeout, 60.0),
        health=False,
        model_source="the model the checks send",
    )
    failure = result.failure
    if failure is None or not result.permanent or failure.name == "model":
        return None
    return result.message()


def run(folder: RunFolder, options: InvokeOptions) -> list[CheckResult]:
    """The invoke stage: the checks against the folder's server (or options.base_url), each
    result relayed as it finishes, invoke.json saved in the folder; the results, in order."""
    target = resolve_target(folder, options.base_url, options.model, options.api_key_env)
    folder.add_secret_env(target.api_key_env)
    print(f"server: {target.base_url}  model: {target.model}  key from: ${target.api_key_env or '(none)'}")
    served = ServedModel.of_run(folder)  # the model's own contracts (effort levels, always thinking, video)
    tokenizer = stage_tokenizer(folder, target, options.tokenizer)  # the speed stage's too
    results = run_all(target, options, progress=progress_to(folder), served=served, tokenizer=tokenizer)
    save(results, folder, api_key_env=target.api_key_env)
    return results


def run_all(
    handle: RunHandle,
    options: InvokeOptions | None = None,
    *,
    progress: Callable[[CheckResult], None] | None = None,
    served: ServedModel | None = None,
    tokenizer: TokenizerChoice | str | Path | None = None,
) -> list[CheckResult]:
    """Run the checks in order (options.checks; by default all); each is isolated, so one failure
    never stops the rest.

    options.parallel > 1 runs that many checks at a time (results still in order; the `concurrency`
    check runs alone afterwards, since it measures concurrent requests itself). Latencies are
    then those of a server answering a few requests at once.

    checks names feature checks (CHECKS), agentic cases (AGENTIC_CASES) and contract checks
    (CONTRACT_CHECKS); None runs the feature and agentic ones, or, given ``served`` (the model's
    declared capabilities, ServedModel.from_plan), the ones that apply to it (served.checks_for).
    handle is the server (resolve_target: a run folder's, or a base_url's). When the server
    refuses the key (or cannot be reached at all) every check fails with that cause and its fix,
    without sending anything (unusable_reason). tokenizer is the served model's (a directory, or
    kvv.stage_tokenizer's choice), for the checks that count prompt tokens themselves; None: the handle's.
    """
    options = options or InvokeOptions()
    checks, timeout, parallel = options.checks, options.timeout, options.parallel
    if checks is None:
        names = checks_for(served, DEFAULT_NAMES) if served is not None else list(DEFAULT_NAMES)
        if handle.rehearsal:  # a scriptable tiny model: SGLang's own parsers on Kimi's real output
            names += list(SCRIPTED_CHECKS)
    else:
        names = list(checks)
    unknown = [n for n in names if n not in ALL_NAMES]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}. Fix: choose from {ALL_NAMES} or pass checks=None for all.")
    blocked = unusable_reason(handle, timeout)
    limits = (
        ServedLimits()
        if blocked
        else read_served_limits(handle.base_url, handle.model, handle.api_key(), min(timeout, 10))
    )
    from openai import DefaultHttpxClient, OpenAI  # here: the report imports this package without the client

    client = OpenAI(
        base_url=handle.openai_base_url,
        api_key=handle.api_key(),
        timeout=timeout,
        max_retries=0,
        http_client=DefaultHttpxClient(verify=verified_tls()),
    )
    session = Session(
        client=client,
        handle=handle,
        timeout=timeout,
        max_tokens=limits.completion_budget(options.max_tokens_thinking, rehearsal=bool(handle.rehearsal)),
        limits=limits,
        image_expect=[options.image_expect or RECEIPT_ITEM],
        image_url=options.image_url,
        concurrency=int(options.concurrency or 0),
        emulated=detect_emulated(handle, timeout) if options.emulated is None else options.emulated,
        served=served or ServedModel(),
        video_url=options.video_url,
        tokenizer=tokenizer if isinstance(tokenizer, TokenizerChoice) else served_tokenizer(tokenizer, handle),
    )

    def one(name: str) -> list[CheckResult]:
        if blocked:
            return _blocked(name, session, blocked)
        if name in IMAGE_CHECKS and limits.images is False:
            return _no_images(name, session)
        return _run_name(name, session)

    results: list[CheckResult] = []
    try:
        together = [n for n in names if n != "concurrency"] if parallel > 1 else []
        with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
            futures = {name: pool.submit(one, name) for name in submission_order(together)}
            for name in names:
                if name not in futures and futures:
                    wait(list(futures.values()))  # a check run alone waits until nothing else runs
                for result in futures[name].result() if name in futures else one(name):
                    results.append(result)
                    if progress:
                        progress(result)
    finally:
        client.close()
    return results


def run_agentic(handle: RunHandle, options: InvokeOptions | None = None) -> list[CheckResult]:
    """The agentic suite alone (options.checks names its cases; None: all of them)."""
    options = options or InvokeOptions()
    names = list(AGENTIC_CASES) if options.checks is None else list(options.checks)
    unknown = [n for n in names if n not in AGENTIC_CASES]
    if unknown:
        raise ValueError(f"unknown agentic case(s) {unknown}. Fix: choose from {list(AGENTIC_CASES)}.")
    return run_all(handle, options.model_copy(update={"checks": names}))
