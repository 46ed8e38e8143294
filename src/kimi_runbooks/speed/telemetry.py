"""Device telemetry beside a benchmark: power, utilisation, memory used and temperature per device.

Read from the vendor's tool on the host the server runs on: nvidia-smi (query CSV), amd-smi
(`metric --json`, ROCm 6 list or ROCm 7 `gpu_data` shape) with rocm-smi as fallback, npu-smi
(`info` table; on Ascend A3 a module's power is printed on its first chip only). Formats follow
the tools' documentation and published output (see tests/fakes for recorded samples). A value a
tool cannot give ("[N/A]", "N/A", "-") is missing, never zero.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from ..procs import BackgroundLoop
from ..rundir import RunFolder

NVIDIA_QUERY = [
    "--query-gpu=index,power.draw,utilization.gpu,memory.used,memory.total,temperature.gpu",
    "--format=csv,noheader,nounits",
]
TOOLS = {"nvidia-smi": ("nvidia-smi",), "rocm-smi": ("amd-smi", "rocm-smi"), "npu-smi": ("npu-smi",)}
"""A platform's smi (params/platforms `smi`) -> the telemetry tools to try, in order."""


@dataclass(frozen=True)
class DeviceSample:
    device: str
    power_w: float | None = None
    util_pct: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    temp_c: float | None = None


def _num(value: Any) -> float | None:
    if isinstance(value, dict):
        value = value.get("value")
    text = str(value).strip() if value is not None else ""
    if not text or text.startswith("[") or text.upper().startswith("N/A") or text == "-":
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _section(record: dict[str, Any], key: str) -> dict[str, Any]:
    """A nested block of a device's record, or {} when the tool printed "N/A" (or anything not a
    block) in its place: amd-smi prints "usage": "N/A" for what a device cannot report."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def parse_nvidia(text: str) -> list[DeviceSample]:
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 6 and parts[0].isdigit():
            out.append(
                DeviceSample(parts[0], _num(parts[1]), _num(parts[2]), _num(parts[3]), _num(parts[4]), _num(parts[5]))
            )
    return out


def parse_amd_smi(text: str) -> list[DeviceSample]:
    start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
    if start < 0:
        return []
    data = json.loads(text[start:])
    gpus = data.get("gpu_data", []) if isinstance(data, dict) else data
    out = []
    for gpu in gpus if isinstance(gpus, list) else []:
        if not isinstance(gpu, dict):
            continue
        power, usage = _section(gpu, "power"), _section(gpu, "usage")
        mem, temp = _section(gpu, "mem_usage"), _section(gpu, "temperature")
        hot = _num(temp.get("hotspot"))
        out.append(
            DeviceSample(
                str(gpu.get("gpu")),
                _num(power.get("socket_power")),
                _num(usage.get("gfx_activity")),
                _num(mem.get("used_vram")),
                _num(mem.get("total_vram")),
                hot if hot is not None else _num(temp.get("edge")),
            )
        )
    return out


def parse_rocm_smi(text: str) -> list[DeviceSample]:
    start = text.find("{")
    data = json.loads(text[start:]) if start >= 0 else {}
    out = []
    for card, fields in sorted(data.items()):
        if not card.startswith("card") or not isinstance(fields, dict):
            continue
        power = next((v for k, v in fields.items() if "Graphics Package Power (W)" in k and _num(v) is not None), None)
        temp = _rocm_temperature(fields)
        total_b, used_b = _num(fields.get("VRAM Total Memory (B)")), _num(fields.get("VRAM Total Used Memory (B)"))
        out.append(
            DeviceSample(
                card.removeprefix("card"),
                _num(power),
                _num(fields.get("GPU use (%)")),
                used_b / 2**20 if used_b is not None else None,
                total_b / 2**20 if total_b is not None else None,
                _num(temp),
            )
        )
    return out


_ROCM_TEMP = re.compile(r"^Temperature \(Sensor ([^)]+)\) \([cC]\)$")
_SENSOR_ORDER = ("junction", "edge")
"""rocm-smi names its sensors (ROCm 3.5 on: edge, junction, memory, HBM n); older releases, and the
old kernel driver, number them: 'Temperature (Sensor #1) (c)' (ROC-smi rocm_smi.py printed
'Temperature (Sensor #%d)'). The junction (hotspot) reading is preferred, as for amd-smi, then edge,
then the first numbered sensor."""


def _rocm_temperature(fields: dict[str, Any]) -> float | None:
    found: dict[str, float] = {}
    for key, value in fields.items():
        match = _ROCM_TEMP.match(key)
        number = _num(value) if match else None
        if match and number is not None:
            found.setdefault(match.group(1).lower(), number)
    for name in _SENSOR_ORDER:
        if name in found:
            return found[name]
    numbered = sorted(k for k in found if k.startswith("#"))
    return found[numbered[0]] if numbered else None


_NPU_ROW = re.compile(r"^\|\s*(\d+)\s+(\S+)\s*\|\s*\S+\s*\|\s*(\S+)\s+(\S+)")
_CHIP_ROW = re.compile(r"^\|\s*(\d+)\s+(\d+)?\s*\|\s*[0-9A-Fa-f:.]+\s*\|\s*(\S+)\s+.*?(\d+)\s*/\s*(\d+)\s*\|\s*$")


def parse_npu_smi(text: str) -> list[DeviceSample]:
    """`npu-smi info`: rows in pairs (NPU name health power temp / chip bus-id aicore memory hbm)."""
    out: list[DeviceSample] = []
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        top = _NPU_ROW.match(line)
        chip = _CHIP_ROW.match(lines[i + 1]) if top else None
        if not top or not chip or top.group(2).lower() == "name":
            continue
        out.append(
            DeviceSample(
                f"{top.group(1)}.{chip.group(1)}",
                _num(top.group(3)),
                _num(chip.group(3)),
                _num(chip.group(4)),
                _num(chip.group(5)),
                _num(top.group(4)),
            )
        )
    return out


PARSERS = {"nvidia-smi": parse_nvidia, "amd-smi": parse_amd_smi, "rocm-smi": parse_rocm_smi, "npu-smi": parse_npu_smi}
ARGV = {
    "nvidia-smi": NVIDIA_QUERY,
    "amd-smi": ["metric", "-p", "-u", "-m", "-t", "--json"],
    "rocm-smi": ["--showpower", "--showuse", "--showmeminfo", "vram", "--showtemp", "--json"],
    "npu-smi": ["info"],
}


def find_tool(smi: str, environ: dict[str, str] | None = None) -> str | None:
    """The first telemetry tool for this platform's smi that is on PATH."""
    path = (environ or {}).get("PATH")
    for tool in TOOLS.get(smi, (smi,)):
        if shutil.which(tool, path=path):
            return tool
    return None


def read_devices(tool: str, environ: dict[str, str] | None = None) -> list[DeviceSample]:
    exe = shutil.which(tool, path=(environ or {}).get("PATH"))
    if not exe:
        return []
    proc = subprocess.run([exe, *ARGV[tool]], capture_output=True, text=True, timeout=20, env=environ)
    if proc.returncode != 0:
        return []
    try:
        return PARSERS[tool](proc.stdout)
    except (ValueError, KeyError, AttributeError):
        return []


@dataclass
class TelemetrySampler:
    """Samples the devices every `interval_s` in a thread while a scenario runs (a context manager).

    `where` says what was sampled: "this host" for local/docker launches; the emulator and hosts
    without the tool give no samples and a note instead of numbers."""

    tool: str | None
    folder: RunFolder | None = None
    scenario: str = "scenario"
    interval_s: float = 1.0
    environ: dict[str, str] | None = None
    note: str | None = None
    only: frozenset[str] | None = None
    """Device ids to keep (the ones the plan pins its server to); None keeps every device, so
    an idle GPU beside a tp-4 server does not add its power to the run's energy."""
    samples: list[dict[str, Any]] = field(default_factory=list)
    _loop: BackgroundLoop | None = field(default=None, repr=False)
    _t0: float = 0.0

    def __enter__(self) -> TelemetrySampler:
        self._t0 = time.monotonic()
        if self.tool is None:
            self.note = self.note or "no device telemetry tool on this host"
            return self
        self._loop = BackgroundLoop(f"telemetry-{self.scenario}", self._run).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.stop(timeout=30)

    def _run(self, stopping: threading.Event) -> None:
        while not stopping.is_set():
            self.sample_once()
            stopping.wait(self.interval_s)

    def sample_once(self, at: float | None = None) -> None:
        """One sample, stamped `at` seconds into the scenario (default: now)."""
        if self.tool is None:
            return
        devices = read_devices(self.tool, self.environ)
        if self.only is not None:
            devices = [d for d in devices if d.device in self.only]
        if not devices:
            return
        t = at if at is not None else time.monotonic() - self._t0
        row = {"t": round(t, 3), "devices": [asdict(d) for d in devices]}
        self.samples.append(row)
        if self.folder is not None:
            self.folder.append_jsonl(self.folder.telemetry_series(self.scenario), row)

    def summary(self) -> dict[str, Any]:
        return summarise(self.samples, self.tool, self.note)


def total_power_w(row: dict[str, Any]) -> float | None:
    powers = [d.get("power_w") for d in row.get("devices", []) if d.get("power_w") is not None]
    return float(sum(powers)) if powers else None


def energy_joules(samples: list[dict[str, Any]]) -> float | None:
    """Trapezoidal integral of the summed device power over the sampling times."""
    points = [(float(s["t"]), p) for s in samples if (p := total_power_w(s)) is not None]
    if len(points) < 2:
        return None
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(points, points[1:]))


def summarise(samples: list[dict[str, Any]], tool: str | None, note: str | None = None) -> dict[str, Any]:
    if not samples:
        return {"tool": tool, "samples": 0, "note": note or "no telemetry sample was taken"}
    powers = [p for s in samples if (p := total_power_w(s)) is not None]
    utils = [d["util_pct"] for s in samples for d in s["devices"] if d.get("util_pct") is not None]
    mems = [d["mem_used_mib"] for s in samples for d in s["devices"] if d.get("mem_used_mib") is not None]
    temps = [d["temp_c"] for s in samples for d in s["devices"] if d.get("temp_c") is not None]
    return {
        "tool": tool,
        "samples": len(samples),
        "devices": len(samples[-1]["devices"]),
        "seconds": round(float(samples[-1]["t"]) - float(samples[0]["t"]), 3),
        "mean_power_w": round(statistics.fmean(powers), 1) if powers else None,
        "energy_j": round(e, 1) if (e := energy_joules(samples)) is not None else None,
        "mean_util_pct": round(statistics.fmean(utils), 1) if utils else None,
        "peak_mem_used_mib": max(mems) if mems else None,
        "max_temp_c": max(temps) if temps else None,
        **({"note": note} if note else {}),
    }
