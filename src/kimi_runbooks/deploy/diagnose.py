"""Read a failed server's log and say in one sentence why it did not start.

A start-up failure of SGLang ends in hundreds of lines of traceback from several ranks; the
cause is almost always one of a handful of known ones. `diagnose(log)` matches them in order of
specificity and returns the sentence, the fix and the last ~40 lines (redacted) as the excerpt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..secrets import redact

EXCERPT_LINES = 40


@dataclass(frozen=True)
class Diagnosis:
    kind: str
    sentence: str
    fix: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.sentence} Fix: {self.fix}"


@dataclass(frozen=True)
class _Pattern:
    kind: str
    regex: re.Pattern[str]
    sentence: str
    fix: str


def _p(kind: str, regex: str, sentence: str, fix: str) -> _Pattern:
    return _Pattern(kind, re.compile(regex, re.IGNORECASE | re.MULTILINE), sentence, fix)


# Order matters: the AITER head error and OOM are often followed by generic NCCL teardown noise.
PATTERNS: list[_Pattern] = [
    _p(
        "aiter-heads",
        r"aiter.{0,40}only supports? .{0,30}heads|only supports 16 or 128 (number of )?heads|"
        r"heads_per_gpu\s*%\s*16",
        "The AITER MLA kernel rejected the number of attention heads per GPU "
        "(Kimi has 64 heads; AITER in this image accepts 16 or 128 per rank).",
        "use --tp 4 (16 heads per GPU) on AMD, or an image whose AITER pads heads (SGLang PR 36356).",
    ),
    _p(
        "oom",
        r"(CUDA|HIP|NPU) out of memory|OutOfMemoryError|hipErrorOutOfMemory|"
        r"Not enough memory\. Please try to increase --mem-fraction-static",
        "The server ran out of accelerator memory while starting{detail}.",
        "lower --mem-fraction-static (e.g. by 0.05) or --context-length, or use an FP8 KV cache; "
        "also check that no earlier process still holds GPU memory (preflight names it).",
    ),
    _p(
        "port-in-use",
        r"address already in use|Errno 98|port \d+ is (already )?in use|"
        r"bind\(\) failed|failed to bind",
        "The server's port{detail} is already in use by another process.",
        "stop the other server (deploy.teardown_run(old_run_dir) or kill it) or pick another --port.",
    ),
    _p(
        "unrecognized-argument",
        r"unrecognized arguments?:\s*(?P<flags>.+)$|no such option:\s*(?P<flags2>\S+)",
        "SGLang{version} does not know the flag(s) {flags}.",
        "remove or rename those flags for this SGLang version, or use the image/version the recipe "
        "was published with (set sglang_version so the plan's rules match).",
    ),
    _p(
        "model-missing",
        r"Repository Not Found|RepositoryNotFoundError|is not a local folder and is not a valid model|"
        r"does not appear to have a file named|LocalEntryNotFoundError|HFValidationError|"
        r"couldn't connect to 'https://huggingface\.co'|Max retries exceeded with url: .*huggingface|"
        r"Can't load the configuration of|No such file or directory: .*(config\.json|safetensors)|"
        r"OfflineModeIsEnabled|Cannot find model (path|config)",
        "The model could not be found: the local path is missing or the Hugging Face hub is unreachable.",
        "pre-download the checkpoint (huggingface-cli download <repo> --local-dir <dir>) and pass "
        "that local directory as model_path.",
    ),
    _p(
        "collective-init",
        r"NCCL (error|WARN)|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|"
        r"ncclInvalidUsage|ncclRemoteError|RCCL|HCCL.{0,60}(error|fail|timeout)|"
        r"ProcessGroupNCCL.{0,80}(error|timeout)|Gloo connectFullMesh failed|"
        r"init_process_group.{0,80}(timed out|failed)|DistNetworkError",
        "The collective communication library (NCCL/RCCL/HCCL) failed to initialise between ranks.",
        "check that every node can reach --dist-init-addr, set NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME "
        "(HCCL_SOCKET_IFNAME on Ascend) to the right interface, and rerun with NCCL_DEBUG=INFO.",
    ),
]


def tail(text: str, lines: int = EXCERPT_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


def diagnose(
    log: str,
    *,
    returncode: int | None = None,
    sglang_version: str | None = None,
    port: int | None = None,
    secret_env: str | None = None,
) -> Diagnosis:
    """The most specific known cause found in `log` (its tail is searched first), else a generic one."""
    excerpt = redact(tail(log), [secret_env])
    # search the tail first (the cause is near the end), then the whole log
    for text in (tail(log, 200), log):
        for pattern in PATTERNS:
            match = pattern.regex.search(text)
            if match:
                sentence = _fill(pattern, match, sglang_version, port)
                return Diagnosis(pattern.kind, sentence, pattern.fix, excerpt)
    last = next((line.strip() for line in reversed(log.splitlines()) if line.strip()), "")
    code = f" with exit code {returncode}" if returncode is not None else ""
    sentence = f"The server exited{code}; no known cause was found in its log" + (
        f" (last line: {redact(last[:200], [secret_env])})." if last else " (the log is empty)."
    )
    return Diagnosis("unknown", sentence, "read the log excerpt below and server.log in the run folder.", excerpt)


def _fill(pattern: _Pattern, match: re.Match[str], version: str | None, port: int | None) -> str:
    detail = ""
    if pattern.kind == "oom":
        line = match.string[match.start() : match.string.find("\n", match.start())]
        tried = re.search(r"Tried to allocate ([\d.]+ [GMK]i?B)", line)
        detail = f" (tried to allocate {tried.group(1)})" if tried else ""
    elif pattern.kind == "port-in-use":
        detail = f" {port}" if port else ""
    flags = ""
    if pattern.kind == "unrecognized-argument":
        raw = (match.group("flags") or match.group("flags2") or "").strip()
        flags = ", ".join(f for f in raw.split() if f.startswith("-")) or raw
    return pattern.sentence.format(detail=detail, flags=flags, version=f" {version}" if version else "")
