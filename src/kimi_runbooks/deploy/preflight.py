"""Checks run before a launch: each passes, fails (with the fix) or cannot be checked.

A start-up that dies after ten minutes of weight loading because a GPU was missing, still held by
an earlier run, or the port was taken wastes the first hour on a new rack. These checks take
seconds. A missing tool is "cannot-check", never a pass; the launch is refused while any fails.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import socket
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from ..catalog.flags import canonical_flag
from ..plan import LaunchPlan
from ..plan.knobs import resolve_knobs
from ..plan.launch_plan import pinned_indices
from ..target.ports import socket_family

Status = Literal["pass", "fail", "cannot-check"]

MIB = 1024**2
GIB = 1024**3
BUSY_MEMORY_FRACTION = 0.05
"""A device with more than this share of its memory in use is considered held by another process."""
MIN_SHM_GIB = 16.0
"""Assumption: NCCL/torch IPC needs several GiB of /dev/shm at TP 8; the docker recipe gives 32g."""
CHECKPOINT_TOLERANCE = 0.05
"""Shard total may differ this much from params' checkpoint_gb (sizes there are rounded)."""
SMI_TIMEOUT = 20


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""

    def __str__(self) -> str:
        fix = f" Fix: {self.fix}" if self.fix and self.status != "pass" else ""
        return f"[{self.status}] {self.name}: {self.detail}{fix}"


@dataclass
class Device:
    index: int
    name: str
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None


@dataclass
class PreflightReport:
    checks: list[Check] = field(default_factory=list)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def ok(self) -> bool:
        return not self.failures

    def as_rows(self) -> list[dict[str, str]]:
        return [asdict(c) for c in self.checks]

    def __str__(self) -> str:
        return "\n".join(str(c) for c in self.checks) or "(no checks)"


# --------------------------------------------------------------------------- tools


def _run(argv: list[str], environ: dict[str, str]) -> tuple[int, str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=SMI_TIMEOUT, env=environ)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, str(exc)
    return proc.returncode, proc.stdout + (proc.stderr if proc.returncode else "")


def _which(tool: str, environ: dict[str, str]) -> str | None:
    return shutil.which(tool, path=environ.get("PATH", os.defpath))


def query_devices(smi: str, environ: dict[str, str]) -> tuple[list[Device] | None, str]:
    """Devices reported by `smi`, or (None, why not)."""
    path = _which(smi, environ)
    if not path:
        return None, f"{smi} not found on PATH"
    if smi == "nvidia-smi":
        code, out = _run([path, "--query-gpu=name,memory.total,memory.used", "--format=csv,noheader,nounits"], environ)
        return (parse_nvidia_smi(out), "") if code == 0 else (None, f"{smi} failed: {out.strip()[:200]}")
    if smi == "rocm-smi":
        code, names = _run([path, "--showproductname", "--json"], environ)
        code2, mem = _run([path, "--showmeminfo", "vram", "--json"], environ)
        if code or code2:
            return None, f"{smi} failed: {(names if code else mem).strip()[:200]}"
        try:
            return parse_rocm_smi(names, mem), ""
        except (ValueError, AttributeError) as exc:
            return None, f"cannot parse {smi} output: {exc}"
    code, out = _run([path, "info"], environ)
    return (parse_npu_smi(out), "") if code == 0 else (None, f"{smi} failed: {out.strip()[:200]}")


def parse_nvidia_smi(text: str) -> list[Device]:
    devices = []
    for i, line in enumerate(row for row in text.splitlines() if row.strip()):
        parts = [p.strip() for p in line.split(",")]
        devices.append(
            Device(i, parts[0], _num(parts[1]) if len(parts) > 1 else None, _num(parts[2]) if len(parts) > 2 else None)
        )
    return devices


def parse_rocm_smi(names_json: str, mem_json: str) -> list[Device]:
    names, mem = json.loads(names_json), json.loads(mem_json)
    devices = []
    for i, card in enumerate(k for k in names if k.lower().startswith("card")):
        info = names[card]
        name = info.get("Card Series") or info.get("Card series") or info.get("Card model") or card
        m = mem.get(card, {})
        total = _num(m.get("VRAM Total Memory (B)"))
        used = _num(m.get("VRAM Total Used Memory (B)"))
        devices.append(
            Device(i, str(name), total / MIB if total is not None else None, used / MIB if used is not None else None)
        )
    return devices


_NPU_NAME = re.compile(r"^\|\s*(\d+)\s+(\S*\d{3}\S*)\s*\|")
_NPU_HBM = re.compile(r"(\d+)\s*/\s*(\d+)\s*\|?\s*$")


def parse_npu_smi(text: str) -> list[Device]:
    """`npu-smi info`: a device row `| 0  910C | OK ...` then a row ending in `HBM used / total` (MB)."""
    devices: list[Device] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = _NPU_NAME.match(line)
        if not match:
            continue
        dev = Device(int(match.group(1)), match.group(2))
        if i + 1 < len(lines) and (hbm := _NPU_HBM.search(lines[i + 1])):
            dev.memory_used_mib, dev.memory_total_mib = float(hbm.group(1)), float(hbm.group(2))
        devices.append(dev)
    return devices


def _num(value: object) -> float | None:
    try:
        return float(str(value).strip())
    except (TypeError, ValueError):
        return None


def gpu_processes(environ: dict[str, str]) -> list[str]:
    """`pid name (MiB)` of every compute process nvidia-smi reports; [] when it cannot tell."""
    path = _which("nvidia-smi", environ)
    if not path:
        return []
    code, out = _run(
        [path, "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits"], environ
    )
    if code:
        return []
    rows = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0]:
            rows.append(f"pid {parts[0]} {parts[1]} ({parts[2]} MiB)")
    return rows


# --------------------------------------------------------------------------- checks


def devices_needed(plan: LaunchPlan) -> int:
    """Accelerators one node of this plan uses (the whole node for published deployments)."""
    if plan.deployment is not None:
        return plan.platform.devices_per_node
    knobs = resolve_knobs(plan.config, plan.platform, plan.model)
    return min(knobs.devices_per_node, -(-knobs.devices_used // max(knobs.nnodes, 1)))


def check_accelerators(plan: LaunchPlan, environ: dict[str, str]) -> list[Check]:
    smi, want_name = plan.platform.smi, plan.platform.device_name
    need = devices_needed(plan)
    devices, why = query_devices(smi, environ)
    if devices is None:
        return [
            Check("accelerators", "cannot-check", why, f"install {smi} or check {need}x {want_name} by hand"),
            Check("accelerator memory free", "cannot-check", why, f"check with {smi} that no process holds memory"),
        ]
    matching = [d for d in devices if _norm(want_name) in _norm(d.name)]
    seen = ", ".join(sorted({d.name for d in devices})) or "none"
    if len(matching) < need:
        accel = Check(
            "accelerators",
            "fail",
            f"the plan needs {need}x {want_name}; {smi} shows {len(matching)} matching of {len(devices)} ({seen})",
            "run on a node with the right accelerators, check CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES, "
            "or lower tp to what is visible",
        )
    else:
        accel = Check("accelerators", "pass", f"{len(matching)}x {want_name} visible ({smi}); {need} needed")
    pinned = pinned_indices(plan.device_env)
    if pinned is not None and matching:
        chosen = [d for d in matching if d.index in pinned]
        missing = sorted(set(pinned) - {d.index for d in chosen})
        if missing and accel.status == "pass":
            accel = Check(
                "accelerators",
                "fail",
                f"the plan pins devices {sorted(pinned)}; {smi} shows no {want_name} with index {missing}",
                "pick indices the node has with --device-ids (runbooks: -p device_ids), or plan without them",
            )
        return [accel, _check_memory(chosen or matching, smi, environ)]
    return [accel, _check_memory(matching or devices, smi, environ)]


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _check_memory(devices: list[Device], smi: str, environ: dict[str, str]) -> Check:
    known = [d for d in devices if d.memory_total_mib and d.memory_used_mib is not None]
    if not known:
        return Check(
            "accelerator memory free",
            "cannot-check",
            f"{smi} reported no memory figures",
            f"check with {smi} that no process holds memory",
        )
    busy = [d for d in known if d.memory_used_mib > BUSY_MEMORY_FRACTION * d.memory_total_mib]  # type: ignore[operator]
    if not busy:
        return Check("accelerator memory free", "pass", f"all {len(known)} devices have their memory free")
    used = "; ".join(f"device {d.index}: {d.memory_used_mib:.0f} of {d.memory_total_mib:.0f} MiB in use" for d in busy)
    holders = gpu_processes(environ) if smi == "nvidia-smi" else []
    who = (
        (" held by " + ", ".join(holders))
        if holders
        else (" (run `rocm-smi --showpids` to see which process)" if smi == "rocm-smi" else "")
    )
    return Check(
        "accelerator memory free",
        "fail",
        f"{used}{who}",
        "stop the process holding the memory (often an earlier server: deploy.teardown_run(old_run_dir) "
        "or kill <pid>) and retry; leaked memory is the usual cause of start-up OOM",
    )


def port_owner(port: int) -> str | None:
    """`pid N (name)` of the process listening on `port`, when /proc tells (Linux, same user)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(cols[9])
    if not inodes:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    name = (proc / "comm").read_text().strip()
                    return f"pid {proc.name} ({name})"
        except OSError:
            continue
    return None


def check_port(host: str, port: int) -> Check:
    bind_host = "0.0.0.0" if host in ("0.0.0.0", "::") else host.strip("[]")
    with socket.socket(socket_family(bind_host), socket.SOCK_STREAM) as sock:
        try:
            sock.bind((bind_host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT) or isinstance(exc, socket.gaierror):
                return Check(
                    "port free",
                    "fail",
                    f"cannot bind {host}: it is not an address of this machine ({exc.strerror or exc})",
                    "use host 127.0.0.1 (IPv6 loopback ::1 needs IPv6 enabled on this machine)",
                )
            owner = port_owner(port)
            return Check(
                "port free",
                "fail",
                f"port {port} on {host} is in use" + (f" by {owner}" if owner else "") + f" ({exc.strerror})",
                "stop that process (an earlier server: deploy.teardown_run(old_run_dir)) or choose another port",
            )
    return Check("port free", "pass", f"port {port} on {host} is free")


def _local_model_path(plan: LaunchPlan) -> str | None:
    args = plan.argv
    for i, arg in enumerate(args[:-1]):
        if canonical_flag(arg) == "--model-path":
            value = args[i + 1]
            if value.startswith(("/", "./", "../", "~")) or Path(value).exists():
                return value
    return None


def check_model_path(plan: LaunchPlan) -> Check:
    path_text = _local_model_path(plan)
    if path_text is None:
        return Check(
            "model path",
            "cannot-check",
            f"the model is a hub id ({plan.model.hf_id}); it will be downloaded at start-up",
            "pre-download it and pass model_path to check size and avoid a hub dependency",
        )
    if "${" in path_text:
        return Check("model path", "cannot-check", f"{path_text} is resolved on the node", "")
    path = Path(path_text).expanduser()
    if not path.is_dir():
        return Check(
            "model path",
            "fail",
            f"{path} does not exist or is not a directory",
            "download the checkpoint there or correct model_path",
        )
    missing = _missing_shards(path)
    if missing:
        return Check(
            "model path",
            "fail",
            f"{len(missing)} shards listed in the index are missing (e.g. {missing[0]})",
            "finish the download (huggingface-cli download resumes)",
        )
    total = sum(f.stat().st_size for f in path.glob("*.safetensors"))
    want = plan.model.checkpoint_gb * 1e9
    if total == 0:
        return Check("model path", "fail", f"{path} holds no *.safetensors shards", "download the checkpoint")
    if abs(total - want) > CHECKPOINT_TOLERANCE * want:
        return Check(
            "model path",
            "fail",
            f"shards total {total / 1e9:.1f} GB, the {plan.model.id} checkpoint is "
            f"{plan.model.checkpoint_gb:g} GB (source: params/models/{plan.model.id}.yaml)",
            "the download is incomplete or the path holds another checkpoint",
        )
    return Check(
        "model path", "pass", f"{path}: shards total {total / 1e9:.1f} GB (expected {plan.model.checkpoint_gb:g} GB)"
    )


def _missing_shards(path: Path) -> list[str]:
    index = path / "model.safetensors.index.json"
    if not index.exists():
        return []
    try:
        shards = set(json.loads(index.read_text()).get("weight_map", {}).values())
    except (OSError, ValueError):
        return []
    return sorted(s for s in shards if not (path / s).exists())


def check_shm(min_gib: float = MIN_SHM_GIB, path: str = "/dev/shm") -> Check:
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return Check("shared memory", "cannot-check", f"{path}: {exc.strerror}", "")
    free = st.f_bavail * st.f_frsize / GIB
    if free < min_gib:
        return Check(
            "shared memory",
            "fail",
            f"{path} has {free:.1f} GiB free; at least {min_gib:g} GiB advised",
            "enlarge /dev/shm (docker: --shm-size 32g or --ipc=host; mount -o remount,size=32G /dev/shm)",
        )
    return Check("shared memory", "pass", f"{path} has {free:.1f} GiB free")


def check_docker(image: str | None, environ: dict[str, str]) -> list[Check]:
    docker = _which("docker", environ)
    if not docker:
        return [Check("docker", "fail", "docker not found on PATH", "install docker or use launcher='local'")]
    code, out = _run([docker, "version", "--format", "{{.Server.Version}}"], environ)
    if code:
        return [
            Check(
                "docker",
                "fail",
                f"the docker daemon does not answer: {out.strip()[:200]}",
                "start dockerd or add this user to the docker group",
            )
        ]
    checks = [Check("docker", "pass", f"docker server {out.strip()}")]
    if not image:
        checks.append(Check("docker image", "fail", "the platform has no docker image", "use launcher='local'"))
        return checks
    code, out = _run([docker, "image", "inspect", "--format", "{{.Id}}", image], environ)
    if code:
        checks.append(
            Check(
                "docker image",
                "fail",
                f"{image} is not present locally",
                f"docker pull {image} (tens of GB; pull before the launch, not during it)",
            )
        )
    else:
        checks.append(Check("docker image", "pass", f"{image} present"))
    return checks
