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
key) and `timings` (a path: each request's answer timing is written there as JSON lines, see
`_time_answers`). Both the probe and bench_serving load their tokenizer through SGLang's
`sglang.benchmark.utils.get_tokenizer`; in this process one loaded tokenizer per name (and its
files' modification time) serves the probe and every benchmark after it, instead of a load each.
A benchmark whose trace times its turns (think time, per-turn output lengths, timed session starts)
runs with session_replay.py's patches installed for that run only.
speed/worker.py drives it over its stdin/stdout, or, started with `--listen PATH` by a runbook
before its stages (or a speed notebook's first cell), over a Unix socket (speed/shared_worker.py).
"""

from __future__ import annotations

import contextvars
import json
import os
import sys
import time
import traceback
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # session_replay.py sits beside this script
import session_replay  # type: ignore[import-not-found]  # noqa: E402

READY_CPU_S: list[float] = []
"""The CPU seconds this process had used when it was ready (start-up and imports): with import_s,
how much a busy machine stretched them."""


def _load() -> Any:
    t0 = time.monotonic()
    try:
        import sglang.benchmark.serving as serving  # type: ignore[import-not-found]  # SGLang >= 0.5.20
    except ImportError:
        import sglang.bench_serving as serving  # type: ignore[import-not-found]  # older wheels
    if not callable(getattr(serving, "cli_main", None)):
        raise ImportError(f"{serving.__name__} has no cli_main: this SGLang is too old for the worker")
    _share_tokenizers(serving)
    _time_answers(serving)
    READY_CPU_S.append(time.process_time())
    return serving, time.monotonic() - t0


def _files_mtime(name: str) -> float | None:
    """The newest modification time of a local tokenizer (a file, or the files of a folder)."""
    try:
        if os.path.isdir(name):
            return max((e.stat().st_mtime for e in os.scandir(name) if e.is_file()), default=0.0)
        return os.stat(name).st_mtime if os.path.exists(name) else None
    except OSError:
        return None


def _share_tokenizers(serving: Any) -> None:
    """SGLang's get_tokenizer, loading each tokenizer once for this process (see module doc). Only
    where the module has the function bench_serving calls; other SGLang versions load as before."""
    try:
        import sglang.benchmark.utils as utils  # type: ignore[import-not-found]
    except ImportError:
        return
    original = getattr(utils, "get_tokenizer", None)
    if not callable(original) or getattr(serving, "get_tokenizer", None) is not original:
        return
    loaded: dict[tuple[Any, ...], Any] = {}

    def get_tokenizer(name: Any, *args: Any, **kwargs: Any) -> Any:
        key = (name, _files_mtime(str(name)), args, tuple(sorted(kwargs.items())))
        if key not in loaded:
            loaded[key] = original(name, *args, **kwargs)
        return loaded[key]

    utils.get_tokenizer = get_tokenizer
    serving.get_tokenizer = get_tokenizer


_TIMING: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("answer_timing", default=None)
TIMINGS: list[list[dict[str, Any]]] = []
"""While a benchmark runs with `timings`: one list its requests' records are appended to."""


def _time_answers(serving: Any) -> None:
    """Per request, the moment of its first reasoning token and of its first answer token.

    bench_serving's TTFT is the first streamed token of either kind, and its per-request output
    (--output-details) keeps neither moment: its chat client passes every streamed delta through
    `_combine_openai_chat_content` (reasoning_content or reasoning, then content; benchmark/serving.py,
    0.5.23), so that function is wrapped to note, for the request being streamed, when a delta first
    carries reasoning and when it first carries content. Each request function of ASYNC_REQUEST_FUNCS
    (read when a benchmark starts, and called once per round of a multi-turn conversation) is wrapped
    to give its request its own record (a context variable: requests run as concurrent tasks) and,
    once it returns, to append {ttft, latency, first_reasoning, first_answer (seconds from the
    request's start), success, prompt_len, output_len} to the running benchmark's list. Warm-up
    requests are recorded too; the caller matches records to the measured requests by their TTFT.
    Where SGLang's module lacks these names nothing is wrapped (no timings, the caller says so)."""
    combine = getattr(serving, "_combine_openai_chat_content", None)
    funcs = getattr(serving, "ASYNC_REQUEST_FUNCS", None)
    if not callable(combine) or not isinstance(funcs, dict):
        return

    def noting(message: dict[str, Any]) -> Any:
        record = _TIMING.get()
        if record is not None and isinstance(message, dict):
            now = time.perf_counter()
            if record["first_reasoning"] is None and (message.get("reasoning_content") or message.get("reasoning")):
                record["first_reasoning"] = now
            if record["first_answer"] is None and message.get("content"):
                record["first_answer"] = now
        return combine(message)

    def timed(func: Any) -> Any:
        async def request(request_func_input: Any, pbar: Any = None) -> Any:
            record: dict[str, Any] = {"first_reasoning": None, "first_answer": None}
            token = _TIMING.set(record)
            try:
                output = await func(request_func_input=request_func_input, pbar=pbar)
            finally:
                _TIMING.reset(token)
            if TIMINGS:
                start = float(getattr(output, "start_time", 0.0) or 0.0)
                TIMINGS[-1].append(
                    {
                        "ttft": getattr(output, "ttft", None),
                        "latency": getattr(output, "latency", None),
                        "success": bool(getattr(output, "success", False)),
                        "prompt_len": getattr(output, "prompt_len", None),
                        "output_len": getattr(output, "output_len", None),
                        **{k: (v - start if v is not None and start else None) for k, v in record.items()},
                    }
                )
            return output

        return request

    serving._combine_openai_chat_content = noting
    for name, func in list(funcs.items()):
        if "embedding" not in name:
            funcs[name] = timed(func)


def _write_timings(path: str, records: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record) + "\n")


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
        with session_replay.installed(serving, args):  # think time, per-turn lengths, timed starts
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
        timings = request.get("timings")
        if timings:
            TIMINGS.append([])
        try:
            code = _run(serving, [str(a) for a in request["args"]], str(request["log"]))
        finally:
            if timings:
                _write_timings(str(timings), TIMINGS.pop())
        reply.write(json.dumps({"returncode": code, "seconds": round(time.monotonic() - t0, 3)}) + "\n")
        reply.flush()


def _hello(serving: Any, took: float) -> str:
    facts = {
        "ready": True,
        "module": serving.__name__,
        "import_s": round(took, 3),
        "ready_cpu_s": round(READY_CPU_S[0], 3) if READY_CPU_S else None,
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "python": sys.executable,
        "offline": os.environ.get("HF_HUB_OFFLINE") == "1",
    }
    return json.dumps(facts) + "\n"


def _exit_with_parent(parent: int, path: str) -> None:
    """Exit once the process that started this worker is gone (this one is then re-parented): a
    runbook or a notebook kernel killed before it could stop its worker leaves no listener behind."""
    while os.getppid() == parent:
        time.sleep(1.0)
    try:
        os.unlink(path)
    except OSError:
        pass
    os._exit(0)


def _listen(serving: Any, took: float, path: str, parent: int) -> int:
    """Serve one connection at a time on a Unix socket (a runbook starts this before its stages,
    so the speed stage finds sglang already imported). The socket appears once ready."""
    import socket
    import threading

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = f"{path}.{os.getpid()}"
    server.bind(tmp)
    server.listen(1)
    os.rename(tmp, path)  # atomically visible, and only when it can answer
    threading.Thread(target=_exit_with_parent, args=(parent, path), daemon=True).start()
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
    parent = os.getppid()  # before the imports: a parent that dies during them is noticed too
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
        return _listen(serving, took, sys.argv[2], parent)
    reply.write(_hello(serving, took))
    _serve(serving, sys.stdin, reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
