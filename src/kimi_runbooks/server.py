"""Turn a validated plan into a running server, say why it did not start, and always clean up.

`launch(plan, launcher=...)` returns a `ServerHandle` (a context manager). Launchers:
emulator (the project's SGLang emulator), local (`sglang serve` in its own process group),
docker (`docker run`, named container), external (attach to someone else's server; never started
or stopped), multi-node (per-node scripts written to the run folder, steps printed) and slurm
(sbatch + srun). Server output passes through a small redacting log pump (this module's
`__main__`) into run_dir/server.log, so a key never lands in the run folder even when the server
outlives the notebook that started it (`keep_running`; stop it later with `teardown_run`).
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import httpx

from . import manifest as manifest_mod
from . import slurm
from .diagnose import Diagnosis, diagnose, tail
from .preflight import PreflightReport, run_preflight, socket_family
from .recipes import LaunchPlan, shell_command, shell_word
from .runinfo import RunHandle, fetch_server_info, run_dir as make_run_dir, write_handle
from .secrets import redact

LAUNCHERS = ("emulator", "local", "docker", "external", "multi-node", "slurm")
LOG_FILE = "server.log"
PROCESS_FILE = "process.json"
STOP_GRACE_SECONDS = 10.0
POLL_INTERVAL = 0.25
HEARTBEAT_SECONDS = 30.0

PHASES: list[tuple[str, str]] = [
    ("fired up and ready to roll", "ready"),
    ("Capture cuda graph end", "CUDA graphs captured"),
    ("Capture cuda graph begin", "capturing CUDA graphs"),
    ("KV Cache is allocated", "KV cache allocated"),
    ("Load weight end", "weights loaded"),
    ("Load weight begin", "loading weights"),
    ("Init torch distributed", "initialising distributed"),
    ("server_args=", "parsing server args"),
]
"""Log markers (SGLang's wording) -> start-up phase shown while waiting; latest first."""


class DeployError(RuntimeError):
    """The server did not start; `diagnosis` says why in one sentence, `excerpt` shows the log tail."""

    def __init__(self, message: str, diagnosis: Diagnosis | None = None, excerpt: str = "") -> None:
        self.diagnosis = diagnosis
        self.excerpt = excerpt
        text = message + (f"\n--- last lines of the server log ---\n{excerpt}" if excerpt else "")
        super().__init__(text)


class PlanError(DeployError):
    """The plan has validation errors: nothing was started."""


class PreflightError(DeployError):
    """A preflight check failed: nothing was started."""

    def __init__(self, report: PreflightReport) -> None:
        self.report = report
        lines = "\n".join(f"  - {c}" for c in report.failures)
        super().__init__(f"launch refused: {len(report.failures)} preflight check(s) failed\n{lines}")


class DeployTimeout(DeployError):
    """The server did not become ready in time."""


# --------------------------------------------------------------------------- the handle


@dataclass
class ServerHandle:
    """A launched (or attached) server. Stop it with `stop()` or by leaving the `with` block."""

    launcher: str
    run_dir: Path
    run_id: str
    base_url: str
    platform: str
    model: str
    api_key_env: str | None = None
    emulated: bool = False
    owns: bool = True
    process: subprocess.Popen | None = field(default=None, repr=False)
    pid: int | None = None
    pgid: int | None = None
    container: str | None = None
    slurm_job_id: str | None = None
    command: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    scripts: list[Path] = field(default_factory=list)
    started_at: str = ""
    ready_at: str | None = None
    server_info: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    preflight: PreflightReport | None = None
    stopped: bool = False
    plan: LaunchPlan | None = field(default=None, repr=False)

    # ---- talking to it
    def api_key(self) -> str | None:
        """The key's value from the environment (None without one); never stored on the handle."""
        return (os.environ.get(self.api_key_env) or None) if self.api_key_env else None

    def headers(self) -> dict[str, str]:
        key = self.api_key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    @property
    def max_total_num_tokens(self) -> int | None:
        return (self.server_info or {}).get("max_total_num_tokens")

    def log_text(self) -> str:
        if self.log_path and self.log_path.exists():
            return self.log_path.read_text(errors="replace")
        return ""

    def exit_code(self) -> int | None:
        """None while the server runs (or is not ours to watch); its exit code once it has exited."""
        if self.process is not None:
            return self.process.poll()
        if self.slurm_job_id:
            return None if slurm.is_active(self.slurm_job_id) else -1
        return None

    # ---- lifecycle
    def wait_ready(self, timeout: float = 600.0, progress: bool = True) -> "ServerHandle":
        wait_ready(self, timeout=timeout, progress=progress)
        return self

    def stop(self) -> None:
        """Stop the process group / container / job; safe to call any number of times."""
        _unregister(self)
        if self.stopped or not self.owns:
            self.stopped = True
            return
        if self.container:
            _docker_rm(self.container)
        if self.slurm_job_id:
            slurm.cancel(self.slurm_job_id)
        if self.pgid:
            _kill_group(self.pgid, self.process)
        self.stopped = True
        _update_process_file(self.run_dir, stopped_at=manifest_mod.now_iso())

    def detach(self) -> None:
        """Leave the server running after this Python process exits (teardown_run stops it later)."""
        _unregister(self)

    def to_run_handle(self) -> RunHandle:
        return RunHandle(
            base_url=self.base_url, model=self.model, launcher=self.launcher, platform=self.platform,
            api_key_env=self.api_key_env, emulated=self.emulated,
            max_total_num_tokens=self.max_total_num_tokens, run_id=self.run_id,
            pid=self.pid, pgid=self.pgid, container=self.container, slurm_job_id=self.slurm_job_id,
            log=str(self.log_path) if self.log_path else None,
        )

    def summary(self) -> dict[str, Any]:
        info = self.server_info or {}
        return redact({
            "base_url": self.base_url, "model": self.model, "launcher": self.launcher,
            "emulated": self.emulated or bool(info.get("emulated")),
            "sglang_version": info.get("version"), "max_total_num_tokens": self.max_total_num_tokens,
            "tp_size": info.get("tp_size"), "dp_size": info.get("dp_size"),
            "kv_cache_dtype": info.get("kv_cache_dtype"), "context_length": info.get("context_length"),
            "mem_fraction_static": info.get("mem_fraction_static"), "run_dir": str(self.run_dir),
        }, [self.api_key_env])

    def __enter__(self) -> "ServerHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------- teardown registry

_LIVE: dict[int, ServerHandle] = {}
_PREVIOUS: dict[int, Any] = {}
_HOOKED = False
_LOCK = threading.Lock()


def _register(handle: ServerHandle) -> None:
    global _HOOKED
    with _LOCK:
        _LIVE[id(handle)] = handle
        if _HOOKED:
            return
        _HOOKED = True
    atexit.register(stop_all)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                _PREVIOUS[sig] = signal.signal(sig, _on_signal)
            except (ValueError, OSError):
                pass


def _unregister(handle: ServerHandle) -> None:
    with _LOCK:
        _LIVE.pop(id(handle), None)


def stop_all() -> None:
    """Stop every server this process launched and has not detached (atexit and signals)."""
    for handle in list(_LIVE.values()):
        try:
            handle.stop()
        except Exception:  # teardown must never raise on the way out
            pass


def _on_signal(signum: int, frame: Any) -> None:
    stop_all()
    previous = _PREVIOUS.get(signum)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _has_live_member(pgid)


def _has_live_member(pgid: int) -> bool:
    """killpg(0) also succeeds for zombies; look for a member that is not one."""
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _kill_group(pgid: int, process: subprocess.Popen | None, grace: float = STOP_GRACE_SECONDS) -> None:
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(pgid, process)
            if not _group_alive(pgid):
                break
            time.sleep(0.05)
        else:
            continue
        break
    _reap(pgid, process)


def _reap(pid: int, process: subprocess.Popen | None) -> None:
    if process is not None:
        process.poll()
        return
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _docker_rm(name: str) -> None:
    try:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        pass


def _update_process_file(folder: Path, **values: Any) -> None:
    path = folder / PROCESS_FILE
    data = json.loads(path.read_text()) if path.exists() else {}
    data.update(values)
    path.write_text(json.dumps(data, indent=2))


def teardown_run(run_dir: str | Path) -> list[str]:
    """Stop a server a previous notebook left running in `run_dir`; idempotent. Returns what it did."""
    folder = Path(run_dir)
    info: dict[str, Any] = {}
    for name in ("handle.json", PROCESS_FILE):
        path = folder / name
        if path.exists():
            info.update({k: v for k, v in json.loads(path.read_text()).items() if v is not None})
    done: list[str] = []
    if info.get("launcher") == "external":
        return ["external server: not ours to stop"]
    pgid = info.get("pgid")
    if pgid and _is_our_pump(int(pgid)) and _group_alive(int(pgid)):
        _kill_group(int(pgid), None)
        done.append(f"stopped process group {pgid}")
    if info.get("container"):
        _docker_rm(info["container"])
        done.append(f"docker rm -f {info['container']}")
    if info.get("slurm_job_id") and slurm.is_active(str(info["slurm_job_id"])):
        slurm.cancel(str(info["slurm_job_id"]))
        done.append(f"scancel {info['slurm_job_id']}")
    if info:
        _update_process_file(folder, stopped_at=manifest_mod.now_iso())
    return done


def _is_our_pump(pid: int) -> bool:
    """Guard against a recycled pid: the group leader must be this module's log pump."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return _group_alive(pid)  # no /proc: trust the record
    return b"kimi_runbooks.server" in cmdline


# --------------------------------------------------------------------------- launch


def _is_local(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` now; IPv6 loopback (::1) is bound with an IPv6 socket."""
    host = host.strip("[]")
    try:
        with socket.socket(socket_family(host), socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            return sock.getsockname()[1]
    except OSError as exc:
        raise DeployError(f"cannot bind {host} to find a free port ({exc}). "
                          "Fix: use host 127.0.0.1 (::1 needs IPv6 enabled on this machine).") from None


def _url_host(host: str) -> str:
    """A host as it goes into a URL: IPv6 literals in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def served_name(plan: LaunchPlan) -> str:
    """The name clients send: --served-model-name, else the model path (SGLang's default)."""
    return plan.config.served_model_name or plan.config.model_path or plan.model.served_name


def _server_args(plan: LaunchPlan) -> list[str]:
    """The plan's SGLang flags without the entrypoint."""
    argv = plan.argv
    start = next((i for i, a in enumerate(argv) if a.startswith("--")), len(argv))
    return argv[start:]


def emulator_argv(
    plan: LaunchPlan,
    *,
    host: str,
    port: int,
    time_scale: float = 1.0,
    startup_seconds: float = 0.0,
    fault: str | None = None,
    python: str = sys.executable,
) -> list[str]:
    """`python -m kimi_runbooks.emulator` with the platform's profile and the plan's SGLang flags
    (reported back in /server_info). The key is never put on the command line: --api-key-env."""
    rename = {"--tp": "--tp-size", "--dp": "--dp-size", "--ep": "--ep-size"}  # as /server_info names them
    skip_with_value = {"--api-key", "--host", "--port", "--model-path", "--served-model-name", "--model"}
    args, rest = [], _server_args(plan)
    i = 0
    while i < len(rest):
        flag = rest[i]
        has_value = i + 1 < len(rest) and not rest[i + 1].startswith("--")
        if flag in skip_with_value:
            i += 2 if has_value else 1
            continue
        args.append(rename.get(flag, flag))
        i += 1
        while i < len(rest) and not rest[i].startswith("--"):
            args.append(rest[i])
            i += 1
    argv = [python, "-m", "kimi_runbooks.emulator", "--host", host, "--port", str(port),
            "--profile", plan.platform.id, "--model", served_name(plan),
            "--model-path", plan.config.model_path or plan.model.hf_id,
            "--time-scale", f"{time_scale:g}", "--startup-seconds", f"{startup_seconds:g}"]
    if plan.memory.kv_pool_tokens > 0:
        # the emulated KV pool is the planner's estimate, so capacity skips follow the plan
        argv += ["--max-total-num-tokens", str(plan.memory.kv_pool_tokens)]
    if fault:
        argv += ["--fault", fault]
    if plan.config.api_key_env:
        argv += ["--api-key-env", plan.config.api_key_env]
    return argv + args


def local_command(plan: LaunchPlan, environ: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """argv (the key filled in from `environ`) and the full child env for launcher='local'."""
    try:
        argv = plan.resolved_argv(environ)
    except KeyError as exc:
        raise DeployError(f"cannot launch: {exc.args[0]}. Fix: export {plan.config.api_key_env}=... "
                          "(the API key) before launching.") from None
    return argv, {**environ, **plan.env}


def docker_command(plan: LaunchPlan, environ: dict[str, str]) -> tuple[list[str], str]:
    """The plan's `docker run` argv with ${HOME} filled in, and the container name.

    The key never appears in it: `-e NAME` hands the variable to the container and the server
    command runs as `sh -c 'exec sglang serve ... --api-key "$NAME"'`, expanded inside, so
    neither the `docker run` process (`ps`) nor the container's Cmd/Args (docker inspect) show
    the value. Limits: Config.Env holds it, as for any `-e`, and SGLang takes the key only as
    --api-key, so the server process inside has it in its own argv (`docker top`).
    """
    if not plan.docker_argv:
        raise DeployError(f"platform {plan.platform.id} has no docker image in params/platforms; "
                          "Fix: use launcher='local'.")
    argv = list(plan.docker_argv)
    key_env = plan.config.api_key_env
    try:
        if key_env:
            if not environ.get(key_env):
                raise KeyError(f"environment variable {key_env} is not set")
            image = argv.index(plan.platform.docker_image or "", argv.index("--name"))
            head, inner = argv[:image + 1], _drop_flag(argv[image + 1:], "--api-key")
            head, inner = _expand_all(plan, head, environ), _expand_all(plan, inner, environ)
            argv = head + ["sh", "-c", f'exec {shlex.join(inner)} --api-key "${key_env}"']
        else:
            argv = _expand_all(plan, argv, environ)
    except KeyError as exc:
        raise DeployError(f"cannot launch: {exc.args[0]}. Fix: export it before launching.") from None
    name = argv[argv.index("--name") + 1]
    return argv, name


def _expand_all(plan: LaunchPlan, argv: list[str], environ: dict[str, str]) -> list[str]:
    return dataclasses.replace(plan, argv=argv).resolved_argv(environ)


def _drop_flag(argv: list[str], flag: str) -> list[str]:
    """argv without `flag` and its value."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == flag:
            i += 2 if i + 1 < len(argv) and not argv[i + 1].startswith("--") else 1
            continue
        out.append(argv[i])
        i += 1
    return out


def _pump_argv(argv: list[str], log: Path, secret_env: str | None) -> list[str]:
    return slurm.pump_command(argv, log, secret_env)


def _start_pumped(argv: list[str], env: dict[str, str], log: Path, secret_env: str | None) -> subprocess.Popen:
    """Start argv behind the log pump, in a new session (its own process group)."""
    return subprocess.Popen(_pump_argv(argv, log, secret_env), env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def launch(
    plan: LaunchPlan,
    launcher: str = "emulator",
    run_dir: str | Path | None = None,
    *,
    base_url: str | None = None,
    port: int | None = None,
    startup_timeout: float = 1800.0,
    time_scale: float = 1.0,
    startup_seconds: float = 0.0,
    fault: str | None = None,
    emulate: bool = False,
    preflight: bool = True,
    wait: bool | None = None,
    progress: bool = True,
    environ: dict[str, str] | None = None,
    slurm_options: Sequence[str] = (),
) -> ServerHandle:
    """Launch `plan` and wait until it is ready; see the module docstring for the launchers.

    emulate=True runs the emulator instead of SGLang under launcher='slurm' (CI rehearsal).
    On any failure the server is stopped before DeployError is raised.
    """
    if launcher not in LAUNCHERS:
        raise DeployError(f"unknown launcher '{launcher}'. Fix: use one of {', '.join(LAUNCHERS)}.")
    require_valid(plan)
    env = dict(os.environ if environ is None else environ)
    secret_env = plan.config.api_key_env
    if secret_env and launcher != "external" and not env.get(secret_env):
        raise DeployError(f"api_key_env={secret_env} but ${secret_env} is not set. "
                          f"Fix: export {secret_env}=<key> before launching.")
    folder = make_run_dir(run_dir, label=plan.platform.id)
    emulated = launcher == "emulator" or emulate
    warnings = [str(w) for w in plan.warnings]
    for w in warnings:
        print(f"WARNING: {w}")
    handle = ServerHandle(
        launcher=launcher, run_dir=folder, run_id=folder.name, base_url=plan.base_url,
        platform=plan.platform.id, model=served_name(plan), api_key_env=secret_env, emulated=emulated,
        started_at=manifest_mod.now_iso(), warnings=warnings, plan=plan,
        log_path=folder / LOG_FILE,
    )
    if launcher == "external":
        if not base_url:
            raise DeployError("launcher='external' needs base_url. Fix: pass base_url='http://host:port'.")
        handle.base_url, handle.owns, handle.log_path = base_url.rstrip("/"), False, None
        return _finish(handle, wait is not False, startup_timeout, progress, env)

    if (plan.nodes and launcher in ("multi-node", "slurm") and not emulate) or launcher == "multi-node":
        return _launch_multinode(handle, plan, launcher, wait, startup_timeout, progress, env, slurm_options)

    host = plan.serve_host
    if launcher == "emulator":
        # The emulator always runs on this machine: node addresses (deployments, `${NODE0_IP}`)
        # and wildcard binds become loopback.
        host = "127.0.0.1" if host in ("0.0.0.0", "::") or "${" in host or not _is_local(host) else host
        port = port or free_port(host)
    else:
        port = port or plan.serve_port
    if preflight:
        handle.preflight = run_preflight(plan, "emulator" if emulated else launcher, host=host, port=port,
                                         environ=env)
        (folder / "preflight.json").write_text(json.dumps(handle.preflight.as_rows(), indent=2))
        if progress:
            print(handle.preflight)
        if not handle.preflight.ok:
            raise PreflightError(handle.preflight)
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    handle.base_url = f"http://{_url_host(shown_host)}:{port}"

    if emulated:
        argv = emulator_argv(plan, host=host, port=port, time_scale=time_scale,
                             startup_seconds=startup_seconds, fault=fault)
        child_env = {**env, "PYTHONUNBUFFERED": "1"}
        handle.command = argv
    elif launcher == "local":
        if port != plan.serve_port:
            raise DeployError("port= differs from the plan's port. Fix: set port in the PlanConfig.")
        argv, child_env = local_command(plan, env)
        handle.command, handle.env = plan.argv, dict(plan.env)
    elif launcher == "docker":
        argv, handle.container = docker_command(plan, env)
        child_env = env
        handle.command = list(plan.docker_argv or [])
    else:  # slurm, single node
        argv, child_env = local_command(plan, env)
        handle.command, handle.env = plan.argv, dict(plan.env)

    try:
        if launcher == "slurm":
            _start_slurm(handle, argv, child_env, secret_env, slurm_options)
        elif launcher == "docker":
            _start_docker(handle, argv, child_env, secret_env)
        else:
            handle.process = _start_pumped(argv, child_env, handle.log_path, secret_env)  # type: ignore[arg-type]
            handle.pid = handle.pgid = handle.process.pid
        _register(handle)
        _write_process_file(handle)
    except BaseException:
        handle.stop()
        raise
    return _finish(handle, wait is not False, startup_timeout, progress, env)


def _start_docker(handle: ServerHandle, argv: list[str], env: dict[str, str], secret_env: str | None) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode:
        err = redact(proc.stderr.strip(), [secret_env])
        handle.container = None
        raise DeployError(f"docker run failed: {err[:500]}", diagnose(err, secret_env=secret_env))
    handle.process = _start_pumped(["docker", "logs", "-f", handle.container or ""], env,
                                   handle.log_path, secret_env)  # type: ignore[arg-type]
    handle.pid = handle.pgid = handle.process.pid


def _start_slurm(handle: ServerHandle, argv: list[str], env: dict[str, str], secret_env: str | None,
                 options: Sequence[str]) -> None:
    slurm.require()
    # keep the key out of the script: the job inherits it from the environment (--export=ALL)
    command = [a if not (secret_env and a == env.get(secret_env)) else "${" + secret_env + "}" for a in argv]
    script = handle.run_dir / "server.sbatch"
    script.write_text(redact(slurm.sbatch_script(
        job_name=f"kimi-runbooks-{handle.run_id}", run_dir=handle.run_dir.resolve(), command=command,
        secret_env=secret_env, extra_sbatch=list(options)), [secret_env]))
    handle.scripts = [script]
    handle.slurm_job_id = slurm.submit(script, env)
    print(f"submitted slurm job {handle.slurm_job_id} ({slurm.describe(script)})")
    handle.log_path = handle.run_dir.resolve() / LOG_FILE


def _write_process_file(handle: ServerHandle) -> None:
    (handle.run_dir / PROCESS_FILE).write_text(json.dumps({
        "launcher": handle.launcher, "pid": handle.pid, "pgid": handle.pgid,
        "container": handle.container, "slurm_job_id": handle.slurm_job_id,
        "base_url": handle.base_url, "started_at": handle.started_at,
    }, indent=2))


def _finish(handle: ServerHandle, wait: bool, timeout: float, progress: bool, env: dict[str, str]) -> ServerHandle:
    if not wait:
        return handle
    try:
        wait_ready(handle, timeout=timeout, progress=progress)
        record(handle, environ=env)
    except BaseException:
        handle.stop()
        raise
    return handle


def record(handle: ServerHandle, environ: dict[str, str] | None = None) -> None:
    """Write the manifest and the handle file (both redacted) into the run folder."""
    plan = handle.plan
    manifest = manifest_mod.build_manifest(
        run_id=handle.run_id, platform=handle.platform, model=handle.model, launcher=handle.launcher,
        emulated=handle.emulated or bool((handle.server_info or {}).get("emulated")),
        command=shell_command(handle.command, handle.env) if handle.command else None,
        env=handle.env, started_at=handle.started_at, ready_at=handle.ready_at,
        base_url=handle.base_url, server_info=handle.server_info,
        plan=plan.as_dict() if plan else None,
        preflight=handle.preflight.as_rows() if handle.preflight else None,
        warnings=handle.warnings, secret_env=handle.api_key_env, environ=environ,
    )
    manifest_mod.write_manifest(handle.run_dir, manifest, handle.api_key_env)
    write_handle(handle.run_dir, handle.to_run_handle())


# --------------------------------------------------------------------------- notebook helpers


def plan_from_params(plan_config: dict[str, Any] | None = None, **params: Any) -> LaunchPlan:
    """A plan from notebook parameters; None means "the platform recipe's value".

    `plan_config` (what a runbook passes) holds every PlanConfig knob with PlanConfig's own
    meaning (e.g. reasoning_parser None disables the parser) and wins over the single knobs, so
    the deploy stage launches exactly the plan the runbook validated.
    """
    from .recipes import PlanConfig, plan as make_plan

    knobs = {k: v for k, v in params.items() if v is not None}
    return make_plan(PlanConfig(**{**knobs, **(plan_config or {})}))


def require_valid(plan: LaunchPlan) -> None:
    """Raise PlanError (nothing started) when the plan has validation errors."""
    if not plan.ok:
        lines = "\n".join(f"  - {e}" for e in plan.errors)
        raise PlanError(f"the plan has {len(plan.errors)} error(s); nothing was started:\n{lines}")


def finish(handle: ServerHandle, keep_running: bool) -> str:
    """End of the deploy stage: leave the server up for later stages, or stop it now."""
    if keep_running and handle.owns:
        handle.detach()
        return (f"server left running at {handle.base_url} (pid group {handle.pgid or '-'}, "
                f"container {handle.container or '-'}, slurm job {handle.slurm_job_id or '-'}); "
                f"stop it with server.teardown_run({str(handle.run_dir)!r})")
    handle.stop()
    return "server stopped" if handle.owns else "external server: left as it was"


# --------------------------------------------------------------------------- multi-node


def write_node_scripts(plan: LaunchPlan, folder: Path) -> tuple[list[Path], Path | None]:
    """One executable script per node (plan.nodes[i].script) and the router's, in `folder`."""
    paths = []
    for node in plan.nodes:
        path = folder / f"node-{node.role}-{node.node_rank}.sh"
        path.write_text(redact(node.script))
        path.chmod(0o755)
        paths.append(path)
    router = None
    if plan.router is not None:
        router = folder / "router.sh"
        router.write_text(redact(plan.router.script))
        router.chmod(0o755)
    return paths, router


def multinode_steps(plan: LaunchPlan, scripts: list[Path], router: Path | None) -> str:
    lines = [f"# {len(scripts)} node script(s) for {plan.deployment.id if plan.deployment else plan.platform.id}:",
             "# export the variables the scripts name (MODEL_PATH, NODE0_IP, IFNAME, ...) or pass them in",
             "# the PlanConfig (model_path, node_ips, ifname, prefill_ip, decode_ip), then:"]
    for i, (node, path) in enumerate(zip(plan.nodes, scripts), 1):
        lines.append(f"{i}. on {node.role} node {node.node_rank}: bash {shlex.quote(str(path))}")
    if router:
        lines.append(f"{len(scripts) + 1}. when the servers are up, on the router host: bash {shlex.quote(str(router))}")
    lines.append(f"then the server answers at {plan.base_url}")
    return "\n".join(lines)


def _launch_multinode(handle: ServerHandle, plan: LaunchPlan, launcher: str, wait: bool | None,
                      timeout: float, progress: bool, env: dict[str, str],
                      slurm_options: Sequence[str]) -> ServerHandle:
    scripts, router = write_node_scripts(plan, handle.run_dir)
    handle.scripts = scripts + ([router] if router else [])
    handle.command = plan.argv
    steps = multinode_steps(plan, scripts, router)
    (handle.run_dir / "STEPS.txt").write_text(redact(steps) + "\n")
    if launcher == "multi-node":
        print(steps)
        handle.owns = False  # started by hand: stopped by hand
        handle.log_path = None
        if wait and "${" not in handle.base_url:
            return _finish(handle, True, timeout, progress, env)
        return handle
    slurm.require()
    script = handle.run_dir / "server.sbatch"
    script.write_text(redact(slurm.multinode_sbatch_script(
        job_name=f"kimi-runbooks-{handle.run_id}", run_dir=handle.run_dir.resolve(), nodes=plan.nodes,
        scripts=[p.resolve() for p in scripts], router_script=router.resolve() if router else None,
        secret_env=plan.config.api_key_env, extra_sbatch=list(slurm_options))))
    handle.scripts.append(script)
    handle.slurm_job_id = slurm.submit(script, env)
    _register(handle)
    _write_process_file(handle)
    print(f"submitted slurm job {handle.slurm_job_id}; logs: {handle.run_dir}/server-<role>-<rank>.log")
    if "${" in handle.base_url:
        return handle  # the router's address is only known on the allocation
    return _finish(handle, wait is not False, timeout, progress, env)


# --------------------------------------------------------------------------- readiness


def current_phase(log: str) -> str | None:
    """The latest start-up phase named in the log (SGLang's own markers)."""
    best, best_pos = None, -1
    for marker, phase in PHASES:
        pos = log.rfind(marker)
        if pos > best_pos:
            best, best_pos = phase, pos
    return best


def _probe(client: httpx.Client, url: str) -> int | None:
    try:
        return client.get(url).status_code
    except httpx.HTTPError:
        return None


def _is_ready(client: httpx.Client, base: str) -> bool:
    code = _probe(client, base + "/health_generate")
    if code == 404:  # older servers
        code = _probe(client, base + "/health")
    if code != 200:
        return False
    return _probe(client, base + "/health") == 200 and _probe(client, base + "/v1/models") == 200


def wait_ready(handle: ServerHandle, timeout: float = 600.0, progress: bool = True,
               printer: Callable[[str], None] = print) -> None:
    """Poll health until ready; show the start-up phase; notice an early exit at once."""
    base = handle.base_url.rstrip("/")
    started = time.monotonic()
    last_phase, last_beat = None, started
    version = handle.plan.config.sglang_version if handle.plan else None
    with httpx.Client(timeout=5.0, headers=handle.headers()) as client:
        while True:
            elapsed = time.monotonic() - started
            code = handle.exit_code()
            if code is not None:
                time.sleep(0.2)  # let the pump flush the last lines
                log = handle.log_text()
                diag = diagnose(log, returncode=code, sglang_version=version,
                                port=_port_of(base), secret_env=handle.api_key_env)
                raise DeployError(f"the server exited during start-up after {elapsed:.1f}s: {diag}",
                                  diag, diag.excerpt)
            if _is_ready(client, base):
                break
            phase = current_phase(handle.log_text()) or "starting"
            now = time.monotonic()
            if progress and (phase != last_phase or now - last_beat >= HEARTBEAT_SECONDS):
                printer(f"[{elapsed:7.1f}s] {phase}")
                last_phase, last_beat = phase, now
            if elapsed > timeout:
                excerpt = redact(tail(handle.log_text()), [handle.api_key_env])
                raise DeployTimeout(
                    f"the server at {base} was not ready after {timeout:g}s (polled {base}/health_generate); "
                    f"last start-up phase: {phase}. Fix: raise startup_timeout if it is still loading, "
                    "else read the log.", None, excerpt)
            time.sleep(POLL_INTERVAL)
        handle.ready_at = manifest_mod.now_iso()
        if progress:
            printer(f"[{time.monotonic() - started:7.1f}s] ready at {base}")
        handle.server_info = fetch_server_info(base, handle.api_key())
        models = client.get(base + "/v1/models").json().get("data") or []
        if models:
            handle.model = models[0].get("id", handle.model)


def _port_of(url: str) -> int | None:
    try:
        return httpx.URL(url).port
    except Exception:
        return None


# --------------------------------------------------------------------------- the log pump


def _pump_main(argv: Sequence[str] | None = None) -> int:
    """Run a command, write its output line by line (redacted) to --log, exit with its code."""
    parser = argparse.ArgumentParser(prog="python -m kimi_runbooks.server")
    parser.add_argument("--log", required=True, type=Path)
    parser.add_argument("--secret-env", default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given after --")
    args.log.parent.mkdir(parents=True, exist_ok=True)
    with args.log.open("a", encoding="utf-8") as log:
        try:
            child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        except OSError as exc:
            log.write(f"cannot start {shell_word(command[0])}: {exc}\n")
            return 127

        def forward(signum: int, _frame: Any) -> None:
            if child.poll() is None:
                child.send_signal(signum)

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, forward)
        assert child.stdout is not None
        for raw in iter(child.stdout.readline, b""):
            log.write(redact(raw.decode("utf-8", errors="replace"), [args.secret_env]))
            log.flush()
        return child.wait()


if __name__ == "__main__":
    sys.exit(_pump_main())
