"""What a speed scenario saw from inside: the server's /metrics and the devices' telemetry sampled
beside it, and what a row derives from them (saturation, goodput, energy, cost).

Telemetry is read on the host the server runs on. The local and docker launchers run it here, so
this host's smi tool is sampled; an emulated server has no devices; a multi-node or slurm server's
devices are on other hosts and an external server's may be, so those say what was not sampled
instead of showing this host's idle devices as the server's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlparse

from ..catalog import Scenario
from ..rundir import RunFolder
from . import efficiency, emulator_lag, goodput, replicas, saturation
from .argv import BenchTarget
from .scrape_schedule import BENCH_SERVING_WARMUP_REQUESTS, SAMPLE_INTERVAL_S
from .server_metrics import MetricsSampler
from .telemetry import TelemetrySampler, find_tool

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0")
REMOTE_LAUNCHERS = ("slurm", "multi-node")


class SpeedRunView(Protocol):
    """What observe_for_run reads of speed.run.SpeedRun."""

    @property
    def target(self) -> BenchTarget: ...
    @property
    def common(self) -> dict[str, Any]: ...
    @property
    def folder(self) -> RunFolder | None: ...


@dataclass(frozen=True)
class ObserveConfig:
    """Decided once per speed stage: which samplers run and what the derived figures use."""

    metrics: bool = True
    telemetry_tool: str | None = None
    telemetry_where: str = ""
    """"this host (local)" when sampled, else why nothing was sampled."""
    interval_s: float = SAMPLE_INTERVAL_S
    price_per_device_hour: float | None = None
    price_source: str | None = None
    slo_attainment: float = goodput.DEFAULT_ATTAINMENT
    slos: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Scenario id -> SLOs in ms (resolved from params before the run)."""
    time_scale: float = 1.0
    """Emulator only: its timings are time_scale x the latency model's, so are the SLOs it is held to."""
    pinned_devices: frozenset[str] | None = None
    """The device indices the plan pins its server to (its *_VISIBLE_DEVICES): only they are sampled."""
    backends: tuple[replicas.Backend, ...] = ()
    """The servers behind a router: each one's /metrics counters are read before and after a scenario."""
    router_policy: str | None = None

    def scaled_slo(self, scenario_id: str) -> dict[str, float]:
        """The SLOs the measured timings are compared with (x time_scale on a fast emulator)."""
        return {k: v * self.time_scale for k, v in (self.slos.get(scenario_id) or {}).items()}


def telemetry_source(
    launcher: str | None, base_url: str, emulated: bool, smi: str | None, environ: dict[str, str] | None = None
) -> tuple[str | None, str]:
    """(tool to run here or None, where it samples / why nothing is sampled)."""
    if emulated:
        return None, "emulated server: no devices, no telemetry"
    if launcher in REMOTE_LAUNCHERS:
        return None, f"{launcher} server: its devices are on the nodes, not sampled from this host"
    host = urlparse(base_url).hostname or ""
    if launcher in (None, "external") and host not in LOCAL_HOSTS:
        return None, f"server on {host}: device telemetry is only sampled on the server's own host"
    tool = find_tool(smi or "nvidia-smi", environ)
    if tool is None:
        return None, f"no {smi or 'smi'} tool on this host: no device telemetry"
    return tool, f"this host ({tool}, {launcher or 'external'} server)"


@dataclass(frozen=True)
class ObservedServer:
    """The server whose metrics and devices are sampled: where telemetry can be read, and the
    emulator's clock factor its SLOs are scaled by."""

    launcher: str | None
    base_url: str
    emulated: bool
    smi: str | None = None
    time_scale: float | None = None
    pinned_devices: frozenset[str] | None = None
    backends: tuple[replicas.Backend, ...] = ()
    """The servers behind a router (deploy's handle `backends`); empty for one server."""
    router_policy: str | None = None


def observe_config(
    server: ObservedServer,
    scenarios: list[Scenario],
    *,
    price_per_device_hour: float | None = None,
    price_source: str | None = None,
    metrics: bool = True,
    interval_s: float = SAMPLE_INTERVAL_S,
    environ: dict[str, str] | None = None,
) -> ObserveConfig:
    emulated, time_scale, pinned_devices = server.emulated, server.time_scale, server.pinned_devices
    tool, where = telemetry_source(server.launcher, server.base_url, emulated, server.smi, environ)
    if tool and pinned_devices:
        where += f"; devices {','.join(sorted(pinned_devices, key=int))} (the ones the plan pins)"
    slos = {s.id: slo for s in scenarios if (slo := goodput.slo_for(s))}
    return ObserveConfig(
        metrics=metrics,
        telemetry_tool=tool,
        telemetry_where=where,
        interval_s=interval_s,
        price_per_device_hour=price_per_device_hour,
        price_source=price_source if price_per_device_hour else None,
        slos=slos,
        time_scale=float(time_scale) if emulated and time_scale and time_scale > 0 else 1.0,
        pinned_devices=pinned_devices,
        backends=server.backends,
        router_policy=server.router_policy,
    )


class ScenarioObserver:
    """Both samplers around one scenario (a context manager); `derive` turns them into row fields."""

    def __init__(self, config: ObserveConfig, base_url: str, folder: RunFolder, scenario: Scenario) -> None:
        self.config = config
        self.scenario = scenario
        self.metrics = (
            MetricsSampler(
                base_url,
                folder=folder,
                scenario=scenario.id,
                interval_s=config.interval_s,
                warmup_requests=_warmup_requests(scenario),
                servers=sampled_servers(config.backends),
            )
            if config.metrics
            else None
        )
        self.telemetry = TelemetrySampler(
            config.telemetry_tool,
            folder=folder,
            scenario=scenario.id,
            interval_s=config.interval_s,
            note=None if config.telemetry_tool else config.telemetry_where,
            only=config.pinned_devices,
        )
        self.backends = list(config.backends)
        self.counts_before: dict[str, dict[str, float] | str] = {}
        self.counts_after: dict[str, dict[str, float] | str] = {}

    def __enter__(self) -> ScenarioObserver:
        if self.backends:
            self.counts_before = replicas.read_counters(self.backends)
        if self.metrics is not None:
            self.metrics.__enter__()
        self.telemetry.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.telemetry.__exit__(*exc)
        if self.metrics is not None:
            self.metrics.__exit__(*exc)
        if self.backends:
            self.counts_after = replicas.read_counters(self.backends)

    def derive(self, bench: Mapping[str, Any], devices: Any, emulated: bool) -> dict[str, Any]:
        """The row fields: server, telemetry, saturation, goodput, efficiency (each labelled)."""
        cfg, scenario = self.config, self.scenario
        server = self.metrics.summary() if self.metrics else {"samples": 0, "note": "metrics sampling off"}
        tele = {**self.telemetry.summary(), "where": cfg.telemetry_where}
        out: dict[str, Any] = {"server": server, "telemetry": tele}
        if self.backends:
            out["replicas"] = replicas.split(self.backends, self.counts_before, self.counts_after, cfg.router_policy)
        out["saturation"] = saturation.saturation(
            scenario.max_concurrency, scenario.num_prompts, server, _number(bench.get("concurrency"))
        )
        lag = emulator_lag.judge(server.get("emulator_lag"), cfg.time_scale)
        if lag is not None:
            out["emulator_lag"] = lag
        slo = cfg.slos.get(scenario.id)
        duration = _number(bench.get("duration"))
        if slo and duration:
            found = goodput.goodput(bench, cfg.scaled_slo(scenario.id), duration)
            if found:
                found["slo"] = dict(slo)
                found["time_scale"] = cfg.time_scale
                found["sglang_request_goodput"] = _number(bench.get("request_goodput"))
                found["sglang_slo_attainment"] = _number(bench.get("slo_attainment"))
                sglang_by_metric = bench.get("slo_attainment_by_metric")
                if isinstance(sglang_by_metric, dict):  # SGLang's keys (ttft, tpot, e2el) -> ours
                    ours = {v: k for k, v in goodput.SGLANG_SLO_KEYS.items()}
                    found["sglang_slo_attainment_by_metric"] = {
                        ours.get(k, k): _number(v) for k, v in sglang_by_metric.items()
                    }
                out["goodput"] = found
        origin = "emulated" if emulated else "measured"
        eff = {
            **efficiency.energy(tele, bench.get("total_output_tokens"), bench.get("output_throughput")),
            **efficiency.cost(bench.get("output_throughput"), devices, cfg.price_per_device_hour, cfg.price_source),
        }
        if eff:
            eff["throughput_origin"] = origin
            out["efficiency"] = eff
        return out


def sampled_servers(backends: tuple[replicas.Backend, ...]) -> tuple[str, ...]:
    """Behind a router, the servers whose gauges are read as the fleet's: the replicas, or a PD
    deployment's decode servers (each request runs on a prefill server and then a decode server, so
    summing both would count it twice; decode holds it for its whole generation)."""
    return tuple(b.url for b in backends if b.role != "prefill")


def _warmup_requests(scenario: Scenario) -> int:
    """The warm-up requests bench_serving sends before the measured ones (its default when unset)."""
    return BENCH_SERVING_WARMUP_REQUESTS if scenario.warmup_requests is None else scenario.warmup_requests


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def sweep_key(scenario: Scenario) -> tuple[Any, ...]:
    """Scenarios that differ only in concurrency (and prompt count) form one sweep."""
    return (
        scenario.dataset,
        scenario.input_len,
        scenario.output_len,
        scenario.request_rate,
        scenario.range_ratio,
        scenario.backend,
        tuple(sorted((k, str(v)) for k, v in scenario.extra_args.items())),
    )


def observe_for_run(
    run: SpeedRunView,
    target: Any,
    scenarios: Sequence[Scenario],
    sample_metrics: bool,
    launcher: str | None,
    smi: str | None,
    price: float | None,
    price_source: str | None,
) -> ObserveConfig:
    """Which samplers run, on which devices (those the run's plan pins), and the price the cost
    figures use: given, else the platform's."""
    from ..catalog import load_catalog

    tgt, emulated, platform = run.target, bool(run.common.get("emulated")), run.common.get("platform")
    if price is not None and (isinstance(price, bool) or not isinstance(price, (int, float)) or not price > 0):
        raise ValueError(
            f"price_per_device_hour is {price!r}. Fix: a positive number of $ per device-hour, "
            "or None for the platform's published price."
        )
    known = load_catalog().platforms.get(platform) if platform else None
    if price is None and known is not None and known.price_per_device_hour:
        price, price_source = known.price_per_device_hour, known.price_source
    server = ObservedServer(
        launcher=launcher or getattr(target, "launcher", None),
        base_url=tgt.url,
        emulated=emulated,
        smi=smi or (known.smi if known else None),
        time_scale=getattr(target, "time_scale", None),
        pinned_devices=pinned_devices(run.folder),
        backends=tuple(replicas.Backend.of(b) for b in getattr(target, "backends", None) or []),
        router_policy=getattr(target, "router_policy", None),
    )
    return observe_config(
        server,
        list(scenarios),
        price_per_device_hour=price,
        price_source=price_source or ("price_per_device_hour parameter" if price else None),
        metrics=sample_metrics,
    )


def pinned_devices(folder: RunFolder | None) -> frozenset[str] | None:
    """Device indices the run's plan pins its server to (plan.json device_env), else None.

    Only CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES count (nvidia-smi and rocm-smi number devices
    the same way); an Ascend pin names logical dies that npu-smi lists as npu.chip pairs, so an
    Ascend run keeps every device."""
    from ..plan.launch_plan import pinned_indices

    plan = folder.read_json(folder.plan) if folder is not None and folder.plan.is_file() else None
    env = (plan or {}).get("device_env") or {}
    found = pinned_indices(env, ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"))
    return frozenset(str(i) for i in found) if found else None
