"""The long-lived benchmark worker, run by the bench tool env's python (by path: it imports nothing
of kimi_runbooks, only the standard library and sglang).

It imports SGLang's benchmark module once, then for each request line on stdin
(`{"args": [...], "log": "/path"}`) calls the module's own CLI entry point (`cli_main`, the
function `python -m sglang.bench_serving` runs) with exactly those arguments, its stdout and
stderr sent to the log file, and answers one line (`{"returncode": N}`) on the original stdout. A request
`{"probe": {...}, "script": ".../token_probe.py", "log": ...}` runs the token probe's `run_all`
in this same process (no second import of sglang) and answers `{"results": [...]}`.
A clean return is 0, SystemExit keeps its code (argparse errors: 2), any other exception is 1
with its traceback in the log. A request may carry `env` (set before it runs: the stage's API
key). speed/worker.py drives it over its stdin/stdout, or, started with `--listen PATH` by a
runbook before its stages, over a Unix socket (speed/shared_worker.py).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any


def _load() -> Any:
    t0 = time.monotonic()
    try:
        import sglang.benchmark.serving as serving  # type: ignore[import-not-found]  # SGLang >= 0.5.20
    except ImportError:
        import sglang.bench_serving as serving  # type: ignore[import-not-found]  # older wheels
    if not callable(getattr(serving, "cli_main", None)):
        raise ImportError(f"{serving.__name__} has no cli_main: this SGLang is too old for the worker")
    return serving, time.monotonic() - t0


def _run(serving: Any, args: list[str], log: str) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    saved = os.dup(1), os.dup(2)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.argv = ["bench_serving", *args]
    try:
        serving.cli_main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - any failure of one benchmark is that scenario's result
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    return code


def _probe(loaded: dict[str, Any], request: dict[str, Any]) -> list[dict[str, Any]]:
    """token_probe.run_all for the request, the module loaded once from its path; output to the log."""
    import importlib.util

    script = str(request["script"])
    if script not in loaded:
        spec = importlib.util.spec_from_file_location("token_probe", script)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {script}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        loaded[script] = module
    with open(str(request["log"]), "a", encoding="utf-8") as log, _redirected(log):
        return list(loaded[script].run_all(request["probe"]))


class _redirected:
    """stdout and stderr (file descriptors too) into an open file for the duration."""

    def __init__(self, fh: Any) -> None:
        self.fh = fh

    def __enter__(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self.saved = os.dup(1), os.dup(2)
        os.dup2(self.fh.fileno(), 1)
        os.dup2(self.fh.fileno(), 2)

    def __exit__(self, *exc: object) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        os.close(self.saved[0])
        os.close(self.saved[1])


def _serve(serving: Any, lines: Any, reply: Any) -> None:
    """Answer each request line until the input ends (a pipe closed, a connection closed)."""
    probes: dict[str, Any] = {}
    for line in lines:
        if not line.strip():
            continue
        request = json.loads(line)
        for key, value in (request.get("env") or {}).items():  # e.g. OPENAI_API_KEY, per stage
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = str(value)
        t0 = time.monotonic()
        if "probe" in request:
            reply.write(json.dumps({"results": _probe(probes, request)}) + "\n")
            reply.flush()
            continue
        code = _run(serving, [str(a) for a in request["args"]], str(request["log"]))
        reply.write(json.dumps({"returncode": code, "seconds": round(time.monotonic() - t0, 3)}) + "\n")
        reply.flush()


def _hello(serving: Any, took: float) -> str:
    facts = {
        "ready": True,
        "module": serving.__name__,
        "import_s": round(took, 3),
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "python": sys.executable,
        "offline": os.environ.get("HF_HUB_OFFLINE") == "1",
    }
    return json.dumps(facts) + "\n"


def _listen(serving: Any, took: float, path: str) -> int:
    """Serve one connection at a time on a Unix socket (a runbook starts this before its stages,
    so the speed stage finds sglang already imported). The socket appears once ready."""
    import socket

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = f"{path}.{os.getpid()}"
    server.bind(tmp)
    server.listen(1)
    os.rename(tmp, path)  # atomically visible, and only when it can answer
    while True:
        conn, _ = server.accept()
        with conn, conn.makefile("r", encoding="utf-8") as lines, conn.makefile("w", encoding="utf-8") as reply:
            try:
                reply.write(_hello(serving, took))
                reply.flush()
                _serve(serving, lines, reply)
            except (OSError, ValueError):
                continue  # the client went away; wait for the next one


def main() -> int:
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # stray prints between runs must not corrupt the reply channel
    os.close(devnull)
    try:
        serving, took = _load()
    except Exception as exc:  # noqa: BLE001 - reported to the driver, which falls back to the CLI
        reply.write(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 1
    if len(sys.argv) == 3 and sys.argv[1] == "--listen":
        return _listen(serving, took, sys.argv[2])
    reply.write(_hello(serving, took))
    _serve(serving, sys.stdin, reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
