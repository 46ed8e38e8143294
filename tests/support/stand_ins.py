"""Small helpers shared by several test modules (imported like seedcmd: tests/ is on sys.path)."""

from __future__ import annotations

import socket


def ipv6_loopback() -> bool:
    """Whether this machine can bind ::1 (IPv6 tests skip on machines without it)."""
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


def k2vv_stand_in(*, max_tokens: str = "a.max_tokens", record_calls: bool = False) -> str:
    """Source of a stand-in `tool_calls_eval.py`: K2-Vendor-Verifier's CLI, backed by the built-in
    eval (the real repository is not reachable here). `record_calls` appends each call's argv and
    sample count to calls.jsonl next to --output."""
    record = (
        'with open(Path(a.output).parent / "calls.jsonl", "a") as fh:\n'
        '    fh.write(json.dumps({"argv": sys.argv[1:], "samples": sum(1 for _ in open(a.file_path))}) + "\\n")\n'
        if record_calls
        else ""
    )
    return f"""
import argparse, json, sys
from pathlib import Path
from kimi_runbooks.accuracy.toolcall_eval import ToolcallRequests, ToolcallServer, run_toolcall_eval
p = argparse.ArgumentParser()
p.add_argument("file_path")
for flag in ("--model", "--base-url", "--api-key", "--output", "--summary"):
    p.add_argument(flag)
for flag in ("--concurrency", "--max-tokens"):
    p.add_argument(flag, type=int)
p.add_argument("--temperature", type=float)
a = p.parse_args()
{record}run_toolcall_eval(a.file_path, ToolcallServer(a.base_url, a.model), a.output,
                  ToolcallRequests(concurrency=a.concurrency, temperature=a.temperature, max_tokens={max_tokens}),
                  summary_path=a.summary)
"""
