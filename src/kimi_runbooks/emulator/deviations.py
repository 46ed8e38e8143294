"""The emulator's allowed deviations from SGLang 0.5.23: the one place that lists them.

Everything else the emulator answers is held to SGLang's own code by the contract suite
(tests/contract/), which reads ``DEVIATIONS`` and lets exactly these differences through.
Each one is a marker that lets a runbook, a report or a reader tell a rehearsal from a real
server; ``EmulatorSettings(strict_sglang=True)`` (CLI ``--strict-sglang``) switches all of
them off, so a client can be checked against a server that looks like SGLang and nothing else.

Strict mode therefore also echoes the API key in /server_info, as SGLang 0.5.23 does
(``ServerArgs.resolved_dict`` in sglang/srt/server_args.py redacts only watermark secrets): a
runbook pointed at a strict emulator sees the key come back exactly as a real server sends it,
and tests/contract/test_strict_runbook.py checks that none of it reaches a run folder.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .lag import FAMILIES as LAG_FAMILIES


@dataclass(frozen=True)
class Deviation:
    kind: str  # "header" | "server_info" (a key) | "server_info_value" (a key's value) | "metric"
    name: str
    value: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


EMULATED_HEADER = ("X-Emulated", "kimi-runbooks")
EMULATED_METRIC = "sglang:is_emulated"

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "header",
        EMULATED_HEADER[0],
        EMULATED_HEADER[1],
        "on every response, so a captured response says it came from the emulator",
    ),
    Deviation(
        "server_info",
        "emulated",
        "true (and version ends in '-emulated')",
        "what deploy/bench/report read to label every number EMULATED",
    ),
    Deviation(
        "server_info_value",
        "api_key",
        '"***" when a key is set (SGLang prints the key itself)',
        "a rehearsal's server never hands its key to a log, a manifest or a report",
    ),
    Deviation(
        "metric", EMULATED_METRIC, "gauge 1", "so a Prometheus scrape of the emulator cannot pass for a real server"
    ),
    *(
        Deviation(
            "metric",
            family,
            "counter",
            "how far the emulator fell behind its own latency model (emulator/lag.py): the speed stage marks "
            "a scenario the host could not keep up with as not representative",
        )
        for family in LAG_FAMILIES
    ),
)
