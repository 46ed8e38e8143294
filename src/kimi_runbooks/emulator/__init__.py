"""SGLang emulator: a CPU test double that speaks SGLang 0.5.23's HTTP API as Kimi-K2.6 would.

Other models are data: the params/models entry of ``--model-path`` says what the model does
(capabilities.py: thinking always or optional, reasoning_effort levels, video), and the
``--tool-call-parser`` picks the raw output format and the serving differences SGLang has for it
(formats.py: kimi_k2, kimi_k3). raw.py writes a reply out as the raw text the model generated, which
the contract suite replays through SGLang's own parsers (tests/contract/test_parser_formats.py).

Used by CI and rehearsals in place of a real 1T-parameter deployment. What it answers is held
to SGLang's own code by the contract suite (tests/contract/): status codes, error bodies,
every JSON key and SSE chunk, /server_info and /model_info keys, /generate meta_info keys,
/metrics names, types, labels and buckets, and Kimi's reasoning and tool-call conventions.

How fast it answers comes from the performance model: ``--profile <platform>`` samples
kimi_runbooks.perfmodel's prediction for that platform's plan (TTFT by input length, ITL by
running requests and context, the planned KV pool and running limit; latency.py), so a
rehearsal on any platform, with or without published results, behaves like its prediction.

Allowed deviations, the only differences from SGLang (listed with reasons in deviations.py,
whose ``DEVIATIONS`` the suite reads; ``strict_sglang=True`` / ``--strict-sglang`` turns them off):

1. response header ``X-Emulated: kimi-runbooks`` on every response;
2. ``emulated: true`` in /server_info (and its ``version`` ends in ``-emulated``);
3. ``api_key`` in /server_info is ``"***"`` when a key is set (SGLang prints the key);
4. metric ``sglang:is_emulated`` (gauge, 1);
5. counters ``emulator:schedule_*_total``: how far it fell behind its own latency model (lag.py).
"""

from .app import create_app
from .deviations import DEVIATIONS, Deviation
from .latency import DEFAULT_PROFILE, LatencyProfile, profile_from_references
from .settings import EmulatorSettings, FaultSpec, parse_fault

__all__ = [
    "DEFAULT_PROFILE",
    "DEVIATIONS",
    "Deviation",
    "EmulatorSettings",
    "FaultSpec",
    "LatencyProfile",
    "create_app",
    "parse_fault",
    "profile_from_references",
]
