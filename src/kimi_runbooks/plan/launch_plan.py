"""The result of planning: a validated launch (argv, env, commands, memory, rule results)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..catalog import Deployment, Model, Platform
from .config import PlanConfig
from .knobs import resolve_knobs
from .memory import MemoryPlan
from .rules import RuleResult, VersionChange
from .shell import expand_word, shell_command


@dataclass(frozen=True)
class NodeCommand:
    """One process to start on one node (a server rank, a prefill/decode server or the router)."""

    role: str
    node_rank: int
    argv: list[str]
    env: dict[str, str]
    command: str
    script: str
    docker_argv: list[str] | None = None
    """This node's `docker run` (its own argv inside), or None when the platform has no image."""
    docker: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "node_rank": self.node_rank,
            "argv": self.argv,
            "env": self.env,
            "command": self.command,
            "docker": self.docker,
            "docker_argv": self.docker_argv,
        }


@dataclass(frozen=True)
class Alternative:
    """Another way to use the devices a plan leaves idle: a valid plan of its own, or why not."""

    title: str
    why: str
    plan: LaunchPlan | None
    refused_by: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "why": self.why,
            "valid": self.plan is not None and self.plan.ok,
            "refused_by": list(self.refused_by),
            "command": self.plan.command if self.plan else None,
            "docker": self.plan.docker if self.plan else None,
            "devices_used": self.plan.devices_used if self.plan else None,
            "memory": self.plan.memory.as_dict() if self.plan else None,
        }


@dataclass
class LaunchPlan:
    config: PlanConfig
    platform: Platform
    model: Model
    deployment: Deployment | None
    argv: list[str]
    env: dict[str, str]
    docker_argv: list[str] | None
    nodes: list[NodeCommand]
    router: NodeCommand | None
    memory: MemoryPlan
    serve_host: str
    serve_port: int
    results: list[RuleResult] = field(default_factory=list)
    device_env: dict[str, str] = field(default_factory=dict)
    """The devices this plan pins (CUDA/HIP/ASCEND_RT_VISIBLE_DEVICES) when it leaves some of the
    node idle; part of the command, the docker form and the launch env, kept apart from `env` (the
    recipe's variables)."""
    alternatives: list[Alternative] = field(default_factory=list)
    version_changes: list[VersionChange] = field(default_factory=list)
    cookbook: str = ""
    """Which published cookbook cell the command reproduces and whether SGLang marks it verified
    (empty for models without cookbook cells)."""

    @property
    def served_name(self) -> str:
        """The name clients send: --served-model-name, else the model path (SGLang's default)."""
        return self.config.served_model_name or self.config.model_path or self.model.served_name

    @property
    def docker_image(self) -> str | None:
        """The image of the docker form: the user's --docker-image, else the platform's."""
        return self.config.docker_image or self.platform.docker_image

    @property
    def launch_env(self) -> dict[str, str]:
        """What the server process gets: the recipe's env plus the device pinning."""
        return {**self.env, **self.device_env}

    @property
    def command(self) -> str:
        """The launch as one shell line: the launch env, then argv (the first node's, multi-node); for
        replicas behind sglang-router (plan/fleet.py), each replica in the background, then the router."""
        if self.router is not None and self.nodes and all(n.role == "replica" for n in self.nodes):
            return "\n".join([*(f"{n.command} &" for n in self.nodes), self.router.command])
        return shell_command(self.argv, self.launch_env)

    @property
    def docker(self) -> str | None:
        """The `docker run` form as one shell line; None without a single-node docker form."""
        return shell_command(self.docker_argv) if self.docker_argv else None

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
        return resolve_knobs(self.config, self.platform, self.model).devices_used * (self.config.replicas or 1)

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.serve_host in ("0.0.0.0", "::") else self.serve_host
        return f"http://{host}:{self.serve_port}"

    def resolved_argv(self, environ: dict[str, str]) -> list[str]:
        """argv with the references the project generated (the API key `${NAME}`, placeholders)
        filled from `environ` for a launch without a shell; user values stay literal.
        Raises UnsetVariable (a KeyError) naming a missing variable."""
        return [expand_word(a, environ) for a in self.argv]

    def resolved_env(self, environ: dict[str, str]) -> dict[str, str]:
        """The plan's launch env (recipe env and device pinning) with its generated references
        filled from `environ`."""
        return {k: expand_word(v, environ) for k, v in self.launch_env.items()}

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
            "device_env": self.device_env,
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
            "alternatives": [a.as_dict() for a in self.alternatives],
            "version_changes": [str(c) for c in self.version_changes],
            "cookbook": self.cookbook,
        }


# --------------------------------------------------------------------------- shell rendering


def pinned_indices(device_env: Mapping[str, str], variables: Iterable[str] | None = None) -> set[int] | None:
    """The device indices a plan's device_env pins (the first of `variables` present, default any
    of them); None when nothing is pinned or the value is not a list of indices."""
    for name in variables if variables is not None else device_env:
        value = device_env.get(name)
        if value:
            try:
                return {int(part) for part in str(value).split(",") if part.strip()}
            except ValueError:
                return None
    return None
