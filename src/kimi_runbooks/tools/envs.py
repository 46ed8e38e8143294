"""Isolated environments for the third-party tools the runbooks drive.

SGLang's bench client, sgl-eval, inspect-ai, llama-cpp-python's server, pydantic-ai, AIPerf and
sglang-router pin
versions that conflict with this project
(sglang pins the whole GPU server stack and torch 2.14.1; sgl-eval pins openai<3 and pandas<3),
so each lives in its own venv under ``<repo>/.venvs/<name>``, built on demand from the pinned
files in ``requirements/`` by ``scripts/setup_tool_env.sh``. The runbooks call the tools as
subprocesses through the env's own interpreter; nothing here imports them.

An env can be replaced by another interpreter (a python in some other env, or a
``docker exec`` wrapper script) with ``KIMI_RUNBOOKS_<NAME>_PYTHON``, e.g.
``KIMI_RUNBOOKS_BENCH_PYTHON`` or ``KIMI_RUNBOOKS_SGL_EVAL_PYTHON``.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..paths import REPO_ROOT
from .scripts import script

__all__ = [
    "KEY_PACKAGES",
    "OFFLINE_ENV",
    "TOOLS",
    "ToolEnv",
    "ToolEnvError",
    "ToolEnvMissing",
    "ToolSpec",
    "create_command",
    "env_var_for",
    "repo_root",
    "tool_env",
    "venvs_dir",
    "versions",
]

#: Stamp the setup script writes once an env is built and its smoke check passed.
STAMP_NAME = ".kimi-runbooks-stamp"

#: Packages whose versions go into a run manifest (None when absent from an env).
KEY_PACKAGES = (
    "sglang",
    "sgl-eval",
    "inspect-ai",
    "inspect-evals",
    "torch",
    "transformers",
    "openai",
    "llama-cpp-python",
    "pydantic-ai-slim",
    "aiperf",
    "sglang-router",
)

#: Environment for tool subprocesses on a machine without the HF hub: without it, transformers
#: tries huggingface.co for any name that is not a local directory before giving up.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


class ToolEnvError(RuntimeError):
    """A tool env could not be created or queried."""


class ToolEnvMissing(ToolEnvError):
    """The tool env does not exist (or is incomplete); the message says how to create it."""


@dataclass(frozen=True)
class ToolSpec:
    """What the runbooks need to know about one tool env (its name is its key in TOOLS)."""

    key_package: str  # distribution whose version identifies the tool
    module_argv: tuple[str, ...]  # python args that start the tool's CLI
    description: str
    smoke_args: tuple[str, ...] = ("--help",)  # CLI args for the cheap "does it start" check


SGL_EVAL_KEY_ENV = "KIMI_RUNBOOKS_SGL_EVAL_API_KEY"
"""Env var the sgl-eval wrapper turns into `--api-key` inside the child process."""

TOOLS: dict[str, ToolSpec] = {
    "bench": ToolSpec(
        key_package="sglang",
        module_argv=("-m", "sglang.bench_serving"),
        description="SGLang 0.5.23 benchmark client (python -m sglang.bench_serving)",
    ),
    "sgl-eval": ToolSpec(
        key_package="sgl-eval",
        # sgl_eval has no __main__; tools/scripts/sgl_eval_main.py does what its console script
        # does and takes the key from SGL_EVAL_KEY_ENV inside the child (never on a command line).
        module_argv=(str(script("sgl_eval_main.py")),),
        description="sgl-eval accuracy harness (sgl-eval run aime25 ...)",
    ),
    "inspect": ToolSpec(
        key_package="inspect-ai",
        module_argv=("-m", "inspect_ai"),
        smoke_args=("--version",),
        description="inspect-ai + inspect_evals (inspect eval inspect_evals/gpqa_diamond ...)",
    ),
    "llamacpp": ToolSpec(
        key_package="llama-cpp-python",
        module_argv=("-m", "llama_cpp.server"),
        description="llama-cpp-python's OpenAI-compatible server + SmolLM2-135M GGUF (model/, tokenizer/ in the env)",
    ),
    "agents": ToolSpec(
        key_package="pydantic-ai-slim",
        # pydantic-ai-slim has no CLI of its own without the [cli] extra: the env runs one agent
        # (a tool loop ending in structured output) through tools/scripts/agent_loop.py.
        module_argv=(str(script("agent_loop.py")),),
        smoke_args=("--version",),
        description="pydantic-ai-slim[openai] agent (tools/scripts/agent_loop.py: tool loop, structured output)",
    ),
    "aiperf": ToolSpec(
        key_package="aiperf",
        module_argv=("-m", "aiperf"),
        smoke_args=("--version",),
        description="NVIDIA AIPerf peer benchmark client (aiperf profile --url ... --tokenizer <dir>)",
    ),
    "router": ToolSpec(
        key_package="sglang-router",
        module_argv=("-m", "sglang_router.launch_router"),
        description="SGLang's router, sglang-router (python -m sglang_router.launch_router --worker-urls ...)",
    ),
}


@dataclass(frozen=True)
class ToolEnv:
    """A ready tool env: the interpreter to run the tool with, and the tool's version."""

    name: str
    python: Path
    bin_dir: Path
    version: str | None
    source: str = "venv"  # "venv", or the env var that overrode it

    @property
    def spec(self) -> ToolSpec:
        return TOOLS[self.name]

    def argv(self, *args: str) -> list[str]:
        """Command line that runs the tool's CLI with ``args``.

        Goes through the interpreter rather than bin/ console scripts, so that an override
        (a docker-exec wrapper) works the same as a local venv.
        """
        return [str(self.python), *self.spec.module_argv, *args]

    def smoke_argv(self) -> list[str]:
        return self.argv(*self.spec.smoke_args)


def env_var_for(name: str) -> str:
    """``bench`` -> ``KIMI_RUNBOOKS_BENCH_PYTHON``; ``sgl-eval`` -> ``KIMI_RUNBOOKS_SGL_EVAL_PYTHON``."""
    return f"KIMI_RUNBOOKS_{name.upper().replace('-', '_')}_PYTHON"


def repo_root() -> Path:
    """The checkout that holds ``scripts/setup_tool_env.sh`` (where ``.venvs/`` lives).

    ``KIMI_RUNBOOKS_ROOT`` wins; else the checkout this module sits in (editable install);
    else the nearest parent of the working directory that has the script.
    """
    if env := os.environ.get("KIMI_RUNBOOKS_ROOT"):
        return Path(env).resolve()
    marker = Path("scripts") / "setup_tool_env.sh"
    here = REPO_ROOT
    if (here / marker).is_file():
        return here
    for parent in (Path.cwd().resolve(), *Path.cwd().resolve().parents):
        if (parent / marker).is_file():
            return parent
    raise ToolEnvError(
        "cannot find the kimi-runbooks checkout (no scripts/setup_tool_env.sh above "
        f"{Path.cwd()}); set KIMI_RUNBOOKS_ROOT"
    )


def venvs_dir() -> Path:
    """Where tool envs live; the setup script honours the same ``KIMI_RUNBOOKS_VENVS``."""
    if env := os.environ.get("KIMI_RUNBOOKS_VENVS"):
        return Path(env)
    return repo_root() / ".venvs"


def create_command(name: str) -> list[str]:
    """The command that builds env ``name`` (also named in ToolEnvMissing messages)."""
    return ["bash", str(repo_root() / "scripts" / "setup_tool_env.sh"), name]


def _check_name(name: str) -> ToolSpec:
    try:
        return TOOLS[name]
    except KeyError:
        raise ValueError(f"unknown tool env {name!r}; known: {', '.join(TOOLS)}") from None


def _how_to_create(name: str) -> str:
    return (
        f"create it with `bash scripts/setup_tool_env.sh {name}` (or `make tool-envs` for all), "
        f"call tool_env({name!r}, create=True), or point {env_var_for(name)} at a python that has it"
    )


def _resolve_override(name: str, value: str) -> Path:
    var = env_var_for(name)
    found = shutil.which(value) if os.sep not in value else value
    path = Path(found) if found else Path(value)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise ToolEnvMissing(f"{var}={value!r} is not an executable file")
    # No resolve(): a venv's bin/python is a symlink and must stay one to find its venv.
    return path.absolute()


def tool_env(name: str, *, create: bool = False) -> ToolEnv:
    """Find (or with ``create=True`` build) the env for tool ``name``.

    Raises ToolEnvMissing, naming the command that creates the env, when it is absent or its
    build never finished (no stamp). ``create=True`` runs the setup script, which is a no-op
    when the env is current and rebuilds it when the requirement files changed.
    """
    spec = _check_name(name)
    var = env_var_for(name)
    if value := os.environ.get(var):
        python = _resolve_override(name, value)
        return ToolEnv(name, python, python.parent, versions(python)[spec.key_package], source=var)

    venv = venvs_dir() / name
    python = venv / "bin" / "python"
    if create:
        proc = subprocess.run(create_command(name), stdin=subprocess.DEVNULL, check=False)
        if proc.returncode != 0:
            raise ToolEnvError(
                f"`bash scripts/setup_tool_env.sh {name}` failed with exit code {proc.returncode} "
                "(its stderr above says which step)"
            )
    if not python.exists():
        raise ToolEnvMissing(f"tool env {name!r} ({spec.description}) not found at {venv}; {_how_to_create(name)}")
    if not (venv / STAMP_NAME).is_file():
        raise ToolEnvMissing(
            f"tool env {name!r} at {venv} is incomplete (no {STAMP_NAME}: its build failed or is "
            f"still running); {_how_to_create(name)}"
        )
    return ToolEnv(name, python, python.parent, versions(python)[spec.key_package])


def versions(env: str | ToolEnv | os.PathLike[str]) -> dict[str, str | None]:
    """Versions of KEY_PACKAGES (plus ``python``) inside a tool env, for the run manifest.

    Read with importlib.metadata in the env's own interpreter (no tool import, so it is fast
    even for the bench env). ``env`` is a tool name, a ToolEnv, or a path to a python.
    """
    if isinstance(env, ToolEnv):
        python: os.PathLike[str] | str = env.python
    elif isinstance(env, str) and env in TOOLS:
        python = tool_env(env).python
    else:
        python = env
    return dict(_read_versions(os.fspath(python), _build_stamp(Path(python))))


def _build_stamp(python: Path) -> float | None:
    """When the env was last built (its stamp's mtime): a rebuilt env is read again, an unchanged
    one is not (tool_env() and the manifest each asked, so every deploy started each env twice)."""
    stamp = python.parent.parent / STAMP_NAME
    try:
        return stamp.stat().st_mtime
    except OSError:
        return None


@functools.lru_cache(maxsize=32)
def _read_versions(python: str, _stamp: float | None) -> dict[str, str | None]:
    try:
        proc = subprocess.run(
            [python, str(script("versions.py")), *KEY_PACKAGES],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolEnvError(f"cannot run {python}: {exc}") from exc
    if proc.returncode != 0:
        raise ToolEnvError(f"{python} failed to report versions (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    try:
        # Last line: a wrapper (docker exec) may print banners before it.
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError) as exc:
        raise ToolEnvError(f"{python} printed no version JSON: {proc.stdout[-500:]!r}") from exc
    return {key: data.get(key) for key in ("python", *KEY_PACKAGES)}
