"""Turn a run configuration into a validated launch plan.

`plan(config)` resolves the platform's default recipe (params/platforms/<id>.yaml), the model
(params/models/<id>.yaml) and the knobs the user set, maps every knob to its SGLang flag in one
table (`KNOB_FLAGS`), checks every rule in params/rules/ and returns a `LaunchPlan`: the argv and
env, the command as one shell string, a `docker run` form, per-node commands for multi-node
platforms and, for published multi-role deployments (params/deployments/), the prefill, decode
and router commands. All rule failures are collected; nothing raises for a bad configuration,
so callers can print every problem at once.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .catalog import ArgValue, Catalog, Deployment, Model, Platform, Role, load_catalog
from .planner import MemoryPlan, plan_memory
from .rules import RuleResult, check_rules

DEFAULT_SGLANG_VERSION = "0.5.9"
"""The SGLang version the seeds' recipes were published with; it selects which rules apply."""

FLAG_ALIASES = {
    "--tp-size": "--tp",
    "--tensor-parallel-size": "--tp",
    "--dp-size": "--dp",
    "--data-parallel-size": "--dp",
    "--ep-size": "--ep",
    "--expert-parallel-size": "--ep",
    "--pp-size": "--pp",
    "--model": "--model-path",
}
"""SGLang accepts several spellings of one flag; comparisons use the canonical one."""


def canonical_flag(flag: str) -> str:
    return FLAG_ALIASES.get(flag, flag)


class PlanConfig(BaseModel):
    """The knobs of one launch. Unset knobs (None) take the platform recipe's value."""

    model_config = ConfigDict(extra="forbid")

    platform: str
    model: str | None = None
    deployment: str | None = None
    tp: int | None = Field(default=None, ge=1)
    dp: int | None = Field(default=None, ge=1)
    ep: int | None = Field(default=None, ge=1)
    pp: int | None = Field(default=None, ge=1)
    enable_dp_attention: bool | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    mem_fraction_static: float | None = None
    context_length: int | None = Field(default=None, ge=1)
    reasoning_parser: str | None = "default"
    tool_call_parser: str | None = "default"
    speculative: bool = False
    trust_remote_code: bool = True
    host: str = "127.0.0.1"
    port: int = Field(default=30000, ge=1, le=65535)
    api_key_env: str | None = None
    served_model_name: str | None = None
    model_path: str | None = None
    draft_model_path: str | None = None
    extra_args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    entrypoint: str = "sglang serve"
    sglang_version: str = DEFAULT_SGLANG_VERSION
    allow: list[str] = Field(default_factory=list)
    nnodes: int | None = Field(default=None, ge=1)
    node_ips: list[str] = Field(default_factory=list)
    dist_init_port: int = 5000
    ifname: str | None = None
    prefill_ip: str | None = None
    decode_ip: str | None = None

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise ValueError(
                f"api_key_env must be the NAME of an environment variable (got '{value}'); "
                "never pass the key itself"
            )
        return value or None


@dataclass(frozen=True)
class NodeCommand:
    """One process to start on one node (a server rank, a prefill/decode server or the router)."""

    role: str
    node_rank: int
    argv: list[str]
    env: dict[str, str]
    command: str
    script: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "node_rank": self.node_rank,
            "argv": self.argv,
            "env": self.env,
            "command": self.command,
        }


@dataclass
class LaunchPlan:
    config: PlanConfig
    platform: Platform
    model: Model
    deployment: Deployment | None
    argv: list[str]
    env: dict[str, str]
    command: str
    docker_argv: list[str] | None
    docker: str | None
    nodes: list[NodeCommand]
    router: NodeCommand | None
    memory: MemoryPlan
    serve_host: str
    serve_port: int
    results: list[RuleResult] = field(default_factory=list)

    @property
    def errors(self) -> list[RuleResult]:
        return [r for r in self.results if r.severity == "error"]

    @property
    def warnings(self) -> list[RuleResult]:
        return [r for r in self.results if r.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def devices_used(self) -> int:
        """Accelerators serving this plan, all nodes and roles: the divisor of per-GPU numbers."""
        if self.deployment is not None:
            return sum(role.nodes for role in self.deployment.roles) * self.platform.devices_per_node
        knobs = resolve_knobs(self.config, self.platform, self.model)
        replicas = knobs.dp if (knobs.dp and knobs.dp > 1 and not knobs.enable_dp_attention) else 1
        return knobs.tp * (knobs.pp or 1) * replicas

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.serve_host in ("0.0.0.0", "::") else self.serve_host
        return f"http://{host}:{self.serve_port}"

    def resolved_argv(self, environ: dict[str, str]) -> list[str]:
        """argv with `${VAR}` references (the API key) filled from `environ` for a real launch."""
        return [_expand(a, environ) for a in self.argv]

    def as_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform.id,
            "model": self.model.id,
            "deployment": self.deployment.id if self.deployment else None,
            "sglang_version": self.config.sglang_version,
            "config": self.config.model_dump(),
            "command": self.command,
            "argv": self.argv,
            "env": self.env,
            "docker": self.docker,
            "docker_argv": self.docker_argv,
            "nodes": [n.as_dict() for n in self.nodes],
            "router": self.router.as_dict() if self.router else None,
            "base_url": self.base_url,
            "devices_used": self.devices_used,
            "memory": self.memory.as_dict(),
            "errors": [str(e) for e in self.errors],
            "warnings": [str(w) for w in self.warnings],
            "rules": [r.as_dict() for r in self.results],
        }


# --------------------------------------------------------------------------- shell rendering


def shell_word(value: str) -> str:
    """Quote for bash, but keep `${VAR}` references expandable (double quotes)."""
    if "${" in value:
        return '"' + re.sub(r'(["\\`])', r"\\\1", value) + '"'
    return shlex.quote(value)


def shell_command(argv: list[str], env: dict[str, str] | None = None) -> str:
    prefix = [f"{k}={shell_word(v)}" for k, v in (env or {}).items()]
    return " ".join(prefix + [shell_word(a) for a in argv])


def _expand(text: str, environ: dict[str, str]) -> str:
    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise KeyError(f"environment variable {name} is not set")
        return environ[name]

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::\?[^}]*)?\}", sub, text)


def _env_ref(name: str, hint: str) -> str:
    return "${" + name + ":?set " + hint + "}"


def args_to_argv(args: list[tuple[str, ArgValue]]) -> list[str]:
    argv: list[str] = []
    for flag, value in args:
        if value is False or value is None:
            continue
        argv.append(flag)
        if value is True:
            continue
        if isinstance(value, list):
            argv.extend(_fmt(v) for v in value)
        else:
            argv.append(_fmt(value))
    return argv


def _fmt(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1:
        return str(int(value))
    return str(value)


# --------------------------------------------------------------------------- knobs -> flags

KNOB_FLAGS: list[tuple[str, str]] = [
    ("model_path", "--model-path"),
    ("served_model_name", "--served-model-name"),
    ("tp", "--tp"),
    ("dp", "--dp"),
    ("enable_dp_attention", "--enable-dp-attention"),
    ("ep", "--ep"),
    ("pp", "--pp-size"),
    ("quantization", "--quantization"),
    ("kv_cache_dtype", "--kv-cache-dtype"),
    ("mem_fraction_static", "--mem-fraction-static"),
    ("context_length", "--context-length"),
    ("reasoning_parser", "--reasoning-parser"),
    ("tool_call_parser", "--tool-call-parser"),
]
"""The one place a knob becomes a flag: knob name -> SGLang flag, in command order."""

EAGLE3_ARGS: list[tuple[str, ArgValue]] = [
    ("--speculative-algorithm", "EAGLE3"),
    ("--speculative-num-steps", 3),
    ("--speculative-eagle-topk", 1),
    ("--speculative-num-draft-tokens", 4),
]
"""The cookbook's EAGLE3 settings for Kimi-K2.6 (seed 000 section 4.2.5); the draft path comes from the model."""


@dataclass(frozen=True)
class ResolvedKnobs:
    model_path: str
    served_model_name: str | None
    tp: int
    dp: int | None
    ep: int | None
    pp: int | None
    enable_dp_attention: bool
    quantization: str | None
    kv_cache_dtype: str | None
    effective_kv_cache_dtype: str
    mem_fraction_static: float | None
    effective_mem_fraction_static: float
    context_length: int | None
    reasoning_parser: str | None
    tool_call_parser: str | None
    env: dict[str, str]
    extra_args: list[str]
    nnodes: int


def _parser(value: str | None, default: str | None) -> str | None:
    if value == "default":
        return default
    if value in (None, "", "none"):
        return None
    return value


def resolve_knobs(config: PlanConfig, platform: Platform, model: Model) -> ResolvedKnobs:
    recipe = platform.recipe
    same_model = recipe.model == model.id
    pick = lambda mine, theirs: mine if mine is not None else theirs  # noqa: E731
    kv = pick(config.kv_cache_dtype, recipe.kv_cache_dtype)
    mem = pick(config.mem_fraction_static, recipe.mem_fraction_static)
    return ResolvedKnobs(
        model_path=config.model_path or model.hf_id,
        served_model_name=config.served_model_name,
        tp=pick(config.tp, recipe.tp),
        dp=pick(config.dp, recipe.dp),
        ep=pick(config.ep, recipe.ep),
        pp=config.pp,
        enable_dp_attention=pick(config.enable_dp_attention, recipe.enable_dp_attention),
        quantization=pick(config.quantization, model.quantization_flag),
        kv_cache_dtype=kv,
        effective_kv_cache_dtype=kv if kv not in (None, "auto") else model.default_kv_cache_dtype,
        mem_fraction_static=mem,
        effective_mem_fraction_static=mem if mem is not None else platform.default_mem_fraction_static,
        context_length=pick(config.context_length, recipe.context_length if same_model else None),
        reasoning_parser=_parser(config.reasoning_parser, "kimi_k2" if model.reasoning else None),
        tool_call_parser=_parser(config.tool_call_parser, "kimi_k2"),
        env={**recipe.env, **config.env},
        extra_args=[*(recipe.extra_args if same_model else []), *config.extra_args],
        nnodes=config.nnodes or platform.nodes,
    )


def _server_args(config: PlanConfig, knobs: ResolvedKnobs, model: Model) -> list[tuple[str, ArgValue]]:
    values = {
        "model_path": knobs.model_path,
        "served_model_name": knobs.served_model_name,
        "tp": knobs.tp,
        "dp": knobs.dp,
        "enable_dp_attention": knobs.enable_dp_attention,
        "ep": knobs.ep,
        "pp": knobs.pp,
        "quantization": knobs.quantization,
        "kv_cache_dtype": knobs.kv_cache_dtype,
        "mem_fraction_static": knobs.mem_fraction_static,
        "context_length": knobs.context_length,
        "reasoning_parser": knobs.reasoning_parser,
        "tool_call_parser": knobs.tool_call_parser,
    }
    args: list[tuple[str, ArgValue]] = [(flag, values[knob]) for knob, flag in KNOB_FLAGS]
    if config.speculative:
        args.extend(EAGLE3_ARGS)
        draft = config.draft_model_path or (model.draft_model.path if model.draft_model else None)
        args.append(("--speculative-draft-model-path", draft))
    args.append(("--trust-remote-code", config.trust_remote_code))
    if config.api_key_env:
        args.append(("--api-key", "${" + config.api_key_env + "}"))
    args.extend([("--host", config.host), ("--port", config.port)])
    return args


# --------------------------------------------------------------------------- facts for rules


def rule_facts(
    *,
    config: PlanConfig,
    platform: Platform,
    model: Model,
    catalog: Catalog,
    tp: int,
    dp: int | None,
    ep: int | None,
    pp: int | None,
    enable_dp_attention: bool,
    kv_cache_dtype: str | None,
    mem_fraction_static: float,
    context_length: int | None,
    speculative: bool,
    devices: int,
    nnodes: int,
    memory: MemoryPlan,
) -> dict[str, Any]:
    heads = model.architecture.num_attention_heads
    dp_replicas = dp if (dp and dp > 1 and not enable_dp_attention) else 1
    return {
        "platform": platform.id,
        "platform_name": platform.name,
        "vendor": platform.vendor,
        "arch": platform.arch,
        "fp8": platform.fp8,
        "fp4_formats": tuple(platform.fp4_formats),
        "devices": devices,
        "devices_per_node": platform.devices_per_node,
        "nnodes": nnodes,
        "memory_gib": platform.memory_gib,
        "runtime_reserve_gib": platform.runtime_reserve_gib,
        "model": model.id,
        "model_vendors": tuple(model.vendors),
        "weight_format": model.weight_format,
        "num_attention_heads": heads,
        "heads_per_rank": heads / tp if heads % tp else heads // tp,
        "max_context_length": model.max_context_length,
        "has_draft_model": model.draft_model is not None or bool(config.draft_model_path),
        "published": model.id in platform.published_models,
        "published_models": tuple(platform.published_models),
        "tp": tp,
        "dp": dp or 1,
        "ep": ep or 1,
        "pp": pp or 1,
        "tp_pp": tp * (pp or 1),
        "dp_replicas": dp_replicas,
        "needed_devices": tp * (pp or 1) * dp_replicas,
        "enable_dp_attention": enable_dp_attention,
        "kv_cache_dtype": kv_cache_dtype or "auto",
        "mem_fraction_static": mem_fraction_static,
        "context_length": context_length or model.max_context_length,
        "speculative": speculative,
        "host": config.host,
        "api_key_env": config.api_key_env or "",
        "sglang_version": config.sglang_version,
        "weights_gib_per_device": round(memory.weights_gib_per_device, 1),
        "usable_gib_per_device": round(memory.usable_gib_per_device, 1),
        "kv_budget_gib": memory.kv_budget_gib,
        "kv_pool_tokens": memory.kv_pool_tokens,
    }


# --------------------------------------------------------------------------- the plan


def plan(config: PlanConfig | dict[str, Any], catalog: Catalog | None = None) -> LaunchPlan:
    """Validate `config` against params/ and build every command; see the module docstring.

    Unknown platform, model or deployment ids raise `UnknownIdError` (listing the valid ids),
    since no plan can be built without them; every other problem lands in `plan.errors`.
    """
    catalog = catalog or load_catalog()
    if isinstance(config, dict):
        config = PlanConfig.model_validate(config)
    platform = catalog.platform(config.platform)
    deployment_id = config.deployment
    if deployment_id is None and config.model in (None, platform.recipe.model):
        deployment_id = platform.recipe.deployment
    if deployment_id:
        return _plan_deployment(config, catalog, platform, catalog.deployment(deployment_id))
    model = catalog.model(config.model or platform.recipe.model)
    return _plan_single(config, catalog, platform, model)


def _plan_single(config: PlanConfig, catalog: Catalog, platform: Platform, model: Model) -> LaunchPlan:
    knobs = resolve_knobs(config, platform, model)
    dp_ranks = (knobs.dp or 1) if knobs.enable_dp_attention else 1
    memory = plan_memory(
        platform,
        model,
        tp=knobs.tp,
        pp=knobs.pp or 1,
        mem_fraction_static=knobs.effective_mem_fraction_static,
        kv_cache_dtype=knobs.effective_kv_cache_dtype,
        dp_attention_ranks=dp_ranks,
        speculative=config.speculative,
    )
    facts = rule_facts(
        config=config, platform=platform, model=model, catalog=catalog,
        tp=knobs.tp, dp=knobs.dp, ep=knobs.ep, pp=knobs.pp,
        enable_dp_attention=knobs.enable_dp_attention, kv_cache_dtype=knobs.kv_cache_dtype,
        mem_fraction_static=knobs.effective_mem_fraction_static,
        context_length=knobs.context_length, speculative=config.speculative,
        devices=platform.devices_per_node * knobs.nnodes, nnodes=knobs.nnodes, memory=memory,
    )
    results = check_rules(catalog.rules, facts, set(config.allow))
    results.extend(_unknown_allows(config, catalog))

    args = _server_args(config, knobs, model)
    server_argv = args_to_argv(args) + list(knobs.extra_args)
    argv = shlex.split(config.entrypoint) + server_argv
    nodes: list[NodeCommand] = []
    if knobs.nnodes > 1:
        nodes = _multi_node_commands(config, knobs, argv)
    docker_argv = _docker_argv(config, platform, knobs, server_argv)
    return LaunchPlan(
        config=config,
        platform=platform,
        model=model,
        deployment=None,
        argv=argv,
        env=dict(knobs.env),
        command=shell_command(argv, knobs.env),
        docker_argv=docker_argv,
        docker=shell_command(docker_argv) if docker_argv else None,
        nodes=nodes,
        router=None,
        memory=memory,
        serve_host=config.host,
        serve_port=config.port,
        results=results,
    )


def _unknown_allows(config: PlanConfig, catalog: Catalog) -> list[RuleResult]:
    known = {r.id for r in catalog.rules}
    return [
        RuleResult(
            id="unknown-allow",
            severity="error",
            kind="rule",
            message=f"--allow {rule_id} names no rule",
            fix="use one of: " + ", ".join(sorted(known)),
            source="params/rules",
        )
        for rule_id in config.allow
        if rule_id not in known
    ]


def _multi_node_commands(config: PlanConfig, knobs: ResolvedKnobs, argv: list[str]) -> list[NodeCommand]:
    master = config.node_ips[0] if config.node_ips else _env_ref("NODE0_IP", "NODE0_IP to node 0's address")
    commands = []
    for rank in range(knobs.nnodes):
        node_argv = argv + [
            "--nnodes", str(knobs.nnodes),
            "--node-rank", str(rank),
            "--dist-init-addr", f"{master}:{config.dist_init_port}",
        ]
        command = shell_command(node_argv, knobs.env)
        commands.append(
            NodeCommand("server", rank, node_argv, dict(knobs.env), command, _script([], [], [], {}, command))
        )
    return commands


HF_CACHE_MOUNT = "${HOME}/.cache/huggingface:/root/.cache/huggingface"


def _docker_argv(
    config: PlanConfig, platform: Platform, knobs: ResolvedKnobs, server_argv: list[str]
) -> list[str] | None:
    """`docker run` of the platform's image; the container binds 0.0.0.0, the host port `host`."""
    if not platform.docker_image:
        return None
    argv = ["docker", "run", "--rm", "-d", "--name", f"kimi-runbooks-{platform.id}-{config.port}"]
    if platform.vendor == "amd":
        argv += [
            "--device=/dev/kfd", "--device=/dev/dri", "--group-add", "video",
            "--security-opt", "seccomp=unconfined", "--cap-add=SYS_PTRACE",
        ]
    else:
        argv += ["--gpus", "all"]
    argv += ["--ipc=host", "--shm-size", "32g", "-p", f"{config.host}:{config.port}:{config.port}"]
    argv += ["-v", HF_CACHE_MOUNT]
    for key, value in knobs.env.items():
        argv += ["-e", f"{key}={value}"]
    if config.api_key_env:
        argv += ["-e", config.api_key_env]
    inner = list(server_argv)
    host_index = inner.index("--host") + 1
    inner[host_index] = "0.0.0.0"
    return argv + [platform.docker_image] + shlex.split(config.entrypoint) + inner


# --------------------------------------------------------------------------- deployments


_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def _fill(value: ArgValue, values: dict[str, str]) -> ArgValue:
    if isinstance(value, list):
        return [_fill(v, values) for v in value]  # type: ignore[misc]
    if isinstance(value, str):
        filled = _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), value)
        return filled
    return value


def _placeholder_values(config: PlanConfig, role: Role | None, rank: int) -> dict[str, str]:
    ips = config.node_ips
    values = {
        "model_path": config.model_path or _env_ref("MODEL_PATH", "MODEL_PATH to the weights directory"),
        "draft_model_path": config.draft_model_path
        or _env_ref("DRAFT_MODEL_PATH", "DRAFT_MODEL_PATH to the draft weights directory"),
        "ifname": config.ifname or _env_ref("IFNAME", "IFNAME to the HCCL/Gloo network interface"),
        "prefill_ip": config.prefill_ip or _env_ref("PREFILL_IP", "PREFILL_IP to the prefill node address"),
        "decode_ip": config.decode_ip or _env_ref("DECODE_IP", "DECODE_IP to the decode node address"),
        "master_ip": ips[0] if ips else _env_ref("NODE0_IP", "NODE0_IP to node 0's address"),
        "node_ip": ips[rank] if rank < len(ips) else _env_ref(f"NODE{rank}_IP", f"NODE{rank}_IP to node {rank}'s address"),
        "node_rank": str(rank),
        "nnodes": str(role.nodes if role else 1),
    }
    return values


def _role_args(config: PlanConfig, role: Role, rank: int) -> list[tuple[str, ArgValue]]:
    values = _placeholder_values(config, role, rank)
    overrides = _knob_overrides(config)
    args: list[tuple[str, ArgValue]] = []
    seen = set()
    for flag, value in role.args.items():
        canon = canonical_flag(flag)
        seen.add(canon)
        args.append((flag, overrides.get(canon, _fill(value, values))))
    for canon, value in overrides.items():
        if canon not in seen:
            args.append((canon, value))
    return args


def _knob_overrides(config: PlanConfig) -> dict[str, ArgValue]:
    """Knobs a user set explicitly replace the deployment's value for that flag."""
    mapping = {
        "--tp": config.tp,
        "--dp": config.dp,
        "--ep": config.ep,
        "--mem-fraction-static": config.mem_fraction_static,
        "--context-length": config.context_length,
        "--kv-cache-dtype": config.kv_cache_dtype,
    }
    return {flag: value for flag, value in mapping.items() if value is not None}


def _args_lookup(args: list[tuple[str, ArgValue]]) -> dict[str, ArgValue]:
    return {canonical_flag(f): v for f, v in args}


def _plan_deployment(
    config: PlanConfig, catalog: Catalog, platform: Platform, deployment: Deployment
) -> LaunchPlan:
    model = catalog.model(config.model or deployment.model)
    results: list[RuleResult] = []
    nodes: list[NodeCommand] = []
    serving_memory: MemoryPlan | None = None
    serve_host = "127.0.0.1"
    for role in deployment.roles:
        role_env = {**deployment.env, **role.env, **config.env}
        first_args = _role_args(config, role, 0)
        lookup = _args_lookup(first_args)
        tp = int(lookup.get("--tp", 1))
        dp = int(lookup["--dp"]) if "--dp" in lookup else None
        ep = int(lookup["--ep"]) if "--ep" in lookup else None
        dp_attention = bool(lookup.get("--enable-dp-attention", False))
        mem = float(lookup.get("--mem-fraction-static", platform.default_mem_fraction_static))
        kv = lookup.get("--kv-cache-dtype")
        ctx = int(lookup["--context-length"]) if "--context-length" in lookup else None
        speculative = "--speculative-algorithm" in lookup
        memory = plan_memory(
            platform, model, tp=tp, mem_fraction_static=mem,
            kv_cache_dtype=str(kv) if kv and kv != "auto" else model.default_kv_cache_dtype,
            dp_attention_ranks=(dp or 1) if dp_attention else 1, speculative=speculative,
        )
        if role.name in ("mixed", "decode"):
            serving_memory = memory
        facts = rule_facts(
            config=config, platform=platform, model=model, catalog=catalog,
            tp=tp, dp=dp, ep=ep, pp=None, enable_dp_attention=dp_attention,
            kv_cache_dtype=str(kv) if kv else None, mem_fraction_static=mem,
            context_length=ctx, speculative=speculative,
            devices=platform.devices_per_node * role.nodes, nnodes=role.nodes, memory=memory,
        )
        facts["host"] = "127.0.0.1"  # deployments bind node addresses, checked by their own docs
        results.extend(check_rules(catalog.rules, facts, set(config.allow), role=role.name))
        for rank in range(role.nodes):
            values = _placeholder_values(config, role, rank)
            args = _role_args(config, role, rank)
            argv = shlex.split(role.entrypoint) + args_to_argv(args) + list(config.extra_args)
            env = {k: str(_fill(v, values)) for k, v in role_env.items()}
            command = shell_command(argv)
            script = _script(
                deployment.host_setup, deployment.unset_env, deployment.source_scripts, env, command
            )
            nodes.append(NodeCommand(role.name, rank, argv, env, command, script))
    results.extend(_unknown_allows(config, catalog))

    router = None
    if deployment.router:
        values = _placeholder_values(config, None, 0)
        rargs = [(f, _fill(v, values)) for f, v in deployment.router.args.items()]
        rargv = shlex.split(deployment.router.entrypoint) + args_to_argv(rargs)
        rcommand = shell_command(rargv)
        router = NodeCommand("router", 0, rargv, {}, rcommand, _script([], [], [], {}, rcommand))
        serve_host = str(_args_lookup(rargs).get("--host", "127.0.0.1"))
    else:
        serve_host = str(_args_lookup(_role_args(config, deployment.roles[0], 0)).get("--host", "127.0.0.1"))

    assert serving_memory is not None, f"deployment {deployment.id} has no mixed or decode role"
    first = nodes[0]
    return LaunchPlan(
        config=config,
        platform=platform,
        model=model,
        deployment=deployment,
        argv=first.argv,
        env=first.env,
        command=shell_command(first.argv, first.env),
        docker_argv=None,
        docker=None,
        nodes=nodes,
        router=router,
        memory=serving_memory,
        serve_host=serve_host,
        serve_port=deployment.serve_port,
        results=results,
    )


def _script(
    host_setup: list[str], unset_env: list[str], sources: list[str], env: dict[str, str], command: str
) -> str:
    lines = ["#!/usr/bin/env bash", "# generated by kimi-runbooks: do not edit, re-plan instead", "set -euo pipefail"]
    lines += list(host_setup)
    lines += [f"unset {name}" for name in unset_env]
    lines += [f"source {path}" for path in sources]
    lines += [f"export {k}={shell_word(v)}" for k, v in env.items()]
    lines.append("exec " + command)
    return "\n".join(lines) + "\n"
