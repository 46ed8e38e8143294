"""Contract: the emulator's sglang:gen_throughput follows SGLang 0.5.23's SchedulerMetricsReporter (issue 25 item 10).

Read in the bench tool env's real sglang package: the decode-stats interval (--decode-log-interval,
srt/arg_groups/fields/observability.py), the staleness after which the gauge reads 0
(GEN_THROUGHPUT_STALENESS_SECONDS), and the formula in report_decode_stats (the batch's generated
tokens since the last tick over the time since it) and in the idle report (the exported gauge is 0
once nothing runs). The emulator's behaviour under those rules is tests/emulator/test_gen_throughput.py.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from kimi_runbooks.emulator.prometheus import DECODE_LOG_INTERVAL, GEN_THROUGHPUT_STALENESS_S

pytestmark = pytest.mark.heavy

PROBE = r"""
import inspect, json, msgspec
from sglang.srt.arg_groups.fields.observability import Observability
from sglang.srt.managers.scheduler_components import metrics_reporter as m
decode = inspect.getsource(m.SchedulerMetricsReporter.report_decode_stats)
idle = inspect.getsource(m.SchedulerMetricsReporter._maybe_log_idle_metrics)
print(json.dumps({
    "interval": {f.name: f.default for f in msgspec.structs.fields(Observability)}["decode_log_interval"],
    "staleness": m.GEN_THROUGHPUT_STALENESS_SECONDS,
    "ticks_every_interval": "self.forward_ct_decode % self.decode_log_interval != 0" in decode,
    "formula": "self.last_gen_throughput = self.num_generated_tokens / gap_latency" in decode,
    "resets_tokens": "self.num_generated_tokens = 0" in decode,
    "idle_zero": "self.stats.gen_throughput = 0" in idle,
}))
"""


def test_gen_throughput_rules_are_sglangs(require_tool_env) -> None:
    env = require_tool_env("bench")
    proc = subprocess.run([str(env.python), "-c", PROBE], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found == {
        "interval": DECODE_LOG_INTERVAL,
        "staleness": GEN_THROUGHPUT_STALENESS_S,
        "ticks_every_interval": True,
        "formula": True,
        "resets_tokens": True,
        "idle_zero": True,
    }
