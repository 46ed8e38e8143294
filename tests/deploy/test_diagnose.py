"""diagnose(): one sentence and a fix for each known start-up failure, read from a log tail."""

from __future__ import annotations

import pytest

from kimi_runbooks.deploy.diagnose import diagnose

NOISE = "\n".join(f"[2026-01-01 00:00:{i:02d} TP0] Load weight begin. shard {i}" for i in range(60))

CASES = [
    (
        "oom",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total",
        ["out of accelerator memory", "3.50 GiB"],
        "mem-fraction-static",
    ),
    ("oom", "RuntimeError: HIP out of memory. Tried to allocate 2.00 GiB", ["memory"], "context-length"),
    (
        "port-in-use",
        "ERROR: [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): address already in use",
        ["port 30000", "already in use"],
        "--port",
    ),
    (
        "unrecognized-argument",
        "launch_server.py: error: unrecognized arguments: --enable-foo --bar-size 3",
        ["--enable-foo", "--bar-size", "0.5.9"],
        "SGLang version",
    ),
    (
        "model-missing",
        "OSError: We couldn't connect to 'https://huggingface.co' to load this file",
        ["could not be found"],
        "pre-download",
    ),
    (
        "model-missing",
        "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found",
        ["hub"],
        "local directory",
    ),
    (
        "collective-init",
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
        ["NCCL"],
        "NCCL_SOCKET_IFNAME",
    ),
    (
        "collective-init",
        "RuntimeError: HCCL function error: HcclCommInitRootInfo, error code is 7",
        ["HCCL"],
        "HCCL_SOCKET_IFNAME",
    ),
    (
        "aiter-heads",
        "RuntimeError: Aiter MLA only supports 16 or 128 number of heads, got 8",
        ["AITER", "heads"],
        "--tp 4",
    ),
]


@pytest.mark.parametrize("kind,line,in_sentence,in_fix", CASES)
def test_known_causes(kind: str, line: str, in_sentence: list[str], in_fix: str) -> None:
    log = NOISE + '\nTraceback (most recent call last):\n  File "x.py", line 1\n' + line + "\n"
    diag = diagnose(log, returncode=1, sglang_version="0.5.9", port=30000)
    assert diag.kind == kind
    for text in in_sentence:
        assert text in diag.sentence
    assert in_fix in diag.fix
    assert line in diag.excerpt
    assert len(diag.excerpt.splitlines()) <= 40


def test_aiter_error_wins_over_nccl_teardown_noise() -> None:
    log = "Aiter MLA only supports 16 or 128 number of heads\nNCCL WARN abort\n"
    assert diagnose(log).kind == "aiter-heads"


def test_unknown_cause_names_exit_code_and_last_line() -> None:
    diag = diagnose("starting\nsomething odd happened\n", returncode=3)
    assert diag.kind == "unknown"
    assert "exit code 3" in diag.sentence and "something odd happened" in diag.sentence


def test_excerpt_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_DEPLOY_KEY", "sk-very-secret-123")
    diag = diagnose(
        "server_args=ServerArgs(api_key='sk-very-secret-123')\nCUDA out of memory\n", secret_env="MY_DEPLOY_KEY"
    )
    assert "sk-very-secret-123" not in diag.excerpt and "sk-very-secret-123" not in diag.sentence
