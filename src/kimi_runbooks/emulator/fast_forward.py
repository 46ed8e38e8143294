"""A rehearsal's request can ask the emulator to run its own emulated time faster.

The emulator sleeps `time_scale` x what its latency model says a request takes. Some checks need
a request the model says is long but do not check how long it takes: the invoke stage's
long_context check sends a prompt of 3/4 of the context length to see it accepted and counted,
and at the demo's time scale (0.05) the modelled ~200 s prefill of 196k tokens still sleeps 10 s.
Such a request sends FAST_FORWARD_HEADER: N, and its own prefill and decode steps sleep 1/N of
the server's scaled time. The latency model is unchanged (the same prefill is booked on the same
lane, stalling the requests beside it for the time it sleeps); only this request's clock runs
faster, and the check says so in its result. Real SGLang ignores the header.
"""

from __future__ import annotations

from starlette.requests import Request

from ..target.emulated_time import FAST_FORWARD_HEADER
from .error_answers import ApiError

MAX_FAST_FORWARD = 1000.0


def fast_forward(request: Request) -> float:
    """The request's fast-forward factor (1: none); a value that is not a number from 1 to
    MAX_FAST_FORWARD is refused with a 400 naming the rule."""
    raw = request.headers.get(FAST_FORWARD_HEADER)
    if raw is None:
        return 1.0
    try:
        factor = float(raw)
    except ValueError:
        factor = float("nan")
    if not 1.0 <= factor <= MAX_FAST_FORWARD:  # also refuses nan
        raise ApiError(
            f"header {FAST_FORWARD_HEADER}: {raw!r} is not a number from 1 to {MAX_FAST_FORWARD:g}. "
            "Fix: send how many times faster this request's emulated time should run, e.g. 10"
        )
    return factor
