"""ServerHandle.to_run_handle: the handle.json later stages read."""

from __future__ import annotations

from pathlib import Path

from kimi_runbooks.deploy import ServerHandle
from kimi_runbooks.rundir import RunFolder


def test_the_run_handle_carries_every_field_the_server_handle_knows(tmp_path):
    folder = RunFolder.of(tmp_path / "run", create=True)
    handle = ServerHandle(
        launcher="local",
        folder=folder,
        base_url="http://127.0.0.1:30000",
        platform="h200",
        model="kimi-k2.6",
        api_key_env="SGLANG_API_KEY",
        emulated=True,
        pid=12,
        pgid=12,
        container="sglang-1",
        slurm_job_id="99",
        time_scale=0.5,
        log_path=Path("/runs/server.log"),
        readiness={"health_method": "/health"},
        server_info={"max_total_num_tokens": 1000},
        backends=[{"name": "replica-0", "url": "http://127.0.0.1:30001", "role": "replica"}],
        router_policy="round_robin",
    )
    assert handle.to_run_handle().model_dump(mode="json") == {
        "base_url": "http://127.0.0.1:30000",
        "model": "kimi-k2.6",
        "launcher": "local",
        "platform": "h200",
        "api_key_env": "SGLANG_API_KEY",
        "emulated": True,
        "rehearsal": None,
        "max_total_num_tokens": 1000,
        "run_id": "run",
        "time_scale": 0.5,
        "readiness": {"health_method": "/health"},
        "tokenizer": None,
        "backends": [{"name": "replica-0", "url": "http://127.0.0.1:30001", "role": "replica"}],
        "router_policy": "round_robin",
        "pid": 12,
        "pgid": 12,
        "container": "sglang-1",
        "slurm_job_id": "99",
        "log": "/runs/server.log",
    }
