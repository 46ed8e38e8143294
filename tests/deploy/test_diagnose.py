"""diagnose(): one sentence and a fix for each known start-up failure, read from a log tail."""

from __future__ import annotations

import re

import pytest
import yaml

from kimi_runbooks.catalog import ParamsError
from kimi_runbooks.deploy.diagnose import diagnose, findings, run_diagnosis
from kimi_runbooks.deploy.signatures import load_signatures
from kimi_runbooks.rundir import RunFolder

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


# ---------------------------------------------------------------- the catalogue (params/diagnosis)

# One realistic excerpt per signature, in SGLang's log format; quoted from the public report named
# next to it where the report shows the lines, else SGLang 0.5.23's own message text.
EXCERPTS = {
    "aiter-heads": (  # ROCm/aiter issue 726 (old form); sglang 0.5.23 aiter_backend.py (new form)
        "[2026-03-02 10:11:12 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        "AssertionError: Aiter MLA supports num_head of 4, 8, 12, or multiples of 16 in [16, 128].\n"
        "Provided 8 number of heads.\n"
        "Try adjusting tensor_parallel_size value, or run decode on another backend (--decode-attention-backend)."
    ),
    "torch-npu-missing": (  # Ascend/sglang issue 86
        '  File "/usr/local/python3.11.14/lib/python3.11/site-packages/sglang/srt/hardware_backend/npu/utils.py", '
        "line 129, in npu_format_cast\n"
        "    tmp = torch_npu.npu_format_cast(tensor, acl_format.value)\n"
        "          ^^^^^^^^^\n"
        "NameError: name 'torch_npu' is not defined"
    ),
    "ascend-transfer-engine": (  # sgl-project/sglang issue 10748 / 22840
        "2025-09-22 20:20:40.102376 error 12789 pid[12789] [ADAPTER pytransfer.cpp:49] Failed to init smem_trans, "
        "ret=-3\n[2025-09-22 20:20:40] Ascend Transfer Engine initialization failed.\n"
        "RuntimeError: Ascend Transfer Engine initialization failed."
    ),
    "draft-config-unknown": (  # sgl-project/sglang issue 25673
        "sglang  | [2026-05-19 00:09:18 TP5 EP5] Scheduler hit an exception: Traceback (most recent call last):\n"
        'sglang  |   File "/usr/local/lib/python3.12/dist-packages/transformers/models/auto/configuration_auto.py", '
        "line 405, in from_pretrained\n"
        'sglang  |     config_class = CONFIG_MAPPING[config_dict["model_type"]]\n'
        "sglang  |                    ~~~~~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^^^^"
    ),
    "kv-cache-budget": (  # sglang 0.5.23 kv_cache_configurator.py; seen in SemiAnalysisAI/InferenceX issue 2128
        "[2026-04-01 08:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.88. "
        "Raise --mem-fraction-static above 0.912 (minimum viable = 1 - available/pre = 0.9113). "
        "If using speculative decoding, draft weights are now counted."
    ),
    "oom": (  # sgl-project/sglang issue 4330
        "[2026-04-01 08:00:00 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static=0.84"
    ),
    "host-oom-kill": (  # sglang 0.5.23 entrypoints/engine.py; sgl-project/sglang PR 21898
        "[2026-04-01 08:03:10] Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 "
        "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check."
    ),
    "cuda-illegal-memory": (  # sgl-project/sglang issue 13308
        "[rank6]:[E1113 23:24:11.476061221 ProcessGroupNCCL.cpp:2068] [PG ID 2 PG GUID 3 Rank 6] Process group "
        "watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
        "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:42 "
        "(most recent call first):"
    ),
    "collective-timeout": (  # sgl-project/sglang issue 3932
        "[rank4]:[E304 12:54:52.122900428 ProcessGroupNCCL.cpp:616] [Rank 4] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=151721, OpType=_ALLGATHER_BASE, NumelIn=8080, NumelOut=129280, "
        "Timeout(ms)=600000) ran for 600049 milliseconds before timing out.\n"
        "[rank4]:[E304 12:54:52.123659968 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 3 Rank 4] Exception (either "
        "an error or timeout) detected by watchdog at work: 151721, last enqueued NCCL work: 151721, last "
        "completed NCCL work: 151720."
    ),
    "port-in-use": (  # sglang 0.5.23 utils/network.py; gpustack/gpustack issue 5842
        "[2026-04-01 08:00:30] ValueError: port_base at 30001 is not available in 30 seconds. port_base is used "
        "by a process already."
    ),
    "unrecognized-argument": (  # sgl-project/sglang issue 12818
        "usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH]\n"
        "launch_server.py: error: unrecognized arguments: --reasoning_parser kimi_k2"
    ),
    "model-missing": (
        "[2026-04-01 08:00:00] OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't "
        "find it in the cached files and it looks like moonshotai/Kimi-K2.6 is not the path to a directory."
    ),
    "collective-init": (  # vllm-project/vllm issue 13121 (the Gloo form)
        "[2026-04-01 08:01:00 TP8] Init torch distributed begin.\n"
        "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error"
    ),
    "tool-call-dropped": (  # sglang 0.5.23 serving_chat.py / kimik2_detector.py; sgl-project/sglang issue 25358
        "[2026-05-20 10:00:01] Unexpected tool_call_id format: call00003\n"
        "[2026-05-20 10:00:01] Tool call marker present but no complete call parsed from kimi_k2 output; "
        "dropping the incomplete call"
    ),
    "multimodal-mem-fraction": (  # sgl-project/sglang PR 6881 (older SGLang; 0.5.23 does it silently)
        "[2026-04-01 08:00:00] Automatically reduce --mem-fraction-static to 0.836 because this is a multimodal model"
    ),
}
FILLED = {
    "kv-cache-budget": ["0.88", "0.912"],
    "port-in-use": ["port 30001"],
    "unrecognized-argument": ["--reasoning_parser", " 0.5.23 "],
    "multimodal-mem-fraction": ["to 0.836"],
}


def test_every_signature_has_a_realistic_excerpt_here():
    assert set(EXCERPTS) == {s.id for s in load_signatures()}


@pytest.mark.parametrize("sig", load_signatures(), ids=lambda s: s.id)
def test_each_signature_is_found_in_its_excerpt_and_gives_its_fix(sig):
    log = NOISE + "\n" + EXCERPTS[sig.id] + "\n"
    found = {f.signature.id: f for f in findings(log, version="0.5.23")}
    assert sig.id in found
    for text in FILLED.get(sig.id, []):
        assert text in found[sig.id].sentence
    diag = diagnose(log, returncode=1, sglang_version="0.5.23")
    if sig.severity == "error":
        assert diag.kind == sig.id, (diag.kind, diag.sentence)
        assert diag.fix == sig.fix and sig.fix in str(diag)
        assert diag.sources == tuple(s.label for s in sig.sources)
    else:  # serving-time trouble or information: reported, never taken as why the server stopped
        assert diag.kind == "unknown"
        assert found[sig.id].sentence in diag.notes
        assert found[sig.id].as_dict()["fix"] == sig.fix


def test_benign_port_retries_are_not_a_port_conflict():
    """SGLang 0.5.23 logs these while it simply picks another port (utils/network.py)."""
    benign = (
        "[2026-04-01 08:00:00] Port 30001 is already in use, trying port 30002\n"
        "[2026-04-01 08:00:01] port 30001 is in use. Waiting for 11 seconds for the previous server to exit\n"
    )
    assert diagnose(NOISE + "\n" + benign, returncode=1).kind == "unknown"
    assert "port-in-use" not in {f.signature.id for f in findings(benign)}
    uvicorn = (
        "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30123): address already in use"
    )
    assert "port 30123" in diagnose(uvicorn).sentence  # the port comes from the line when not given


def test_a_sigkill_exit_code_alone_says_host_oom():
    diag = diagnose("[2026-04-01 08:00:00 TP0] Load weight begin.\n", returncode=-9)
    assert diag.kind == "host-oom-kill" and "dmesg" in diag.fix


def test_every_source_is_a_public_github_issue_or_pr():
    for sig in load_signatures():
        for source in sig.sources:
            assert source.url.startswith("https://github.com/") and re.search(r"/(issues|pull)/\d+$", source.url)
            assert not re.search(r"seed|facts\.md|/work/", source.label + sig.meaning + sig.fix, re.I)


@pytest.mark.parametrize(
    "entry, complaint",
    [
        ({"sources": [{"repo": "sgl-project/sglang"}]}, "exactly one of issue"),
        ({"sources": [{"repo": "sgl-project/sglang", "issue": 1, "pr": 2}]}, "exactly one of issue"),
        ({"sources": [{"repo": "not a repo", "issue": 1}]}, "owner/name"),
        ({"sources": []}, "at least one public source"),
        ({"regex": "("}, "not a valid regex"),
        ({"meaning": "Port {nope} busy."}, "placeholders ['nope']"),
        ({"severity": "fatal"}, "severity"),
    ],
)
def test_a_broken_catalogue_entry_names_the_file_and_the_rule(tmp_path, entry, complaint):
    good = {
        "id": "x",
        "severity": "error",
        "phase": "startup",
        "regex": "boom (?P<port>\\d+)",
        "meaning": "Boom at {port}.",
        "fix": "stop it.",
        "sources": [{"repo": "sgl-project/sglang", "issue": 1}],
    }
    (tmp_path / "diagnosis").mkdir()
    path = tmp_path / "diagnosis" / "bad.yaml"
    path.write_text(yaml.safe_dump({"signatures": [{**good, **entry}]}))
    with pytest.raises(ParamsError, match=re.escape(complaint)) as err:
        load_signatures(tmp_path)
    assert "bad.yaml" in str(err.value)


def test_run_diagnosis_reads_the_run_folder_only_for_a_failed_deployment(tmp_path, monkeypatch):
    monkeypatch.setenv("RUN_DIAG_KEY", "zq-diag-secret-991")
    folder = RunFolder.create(tmp_path / "run", secret_envs=["RUN_DIAG_KEY"])
    folder.save_text(folder.server_log, NOISE + "\napi_key=zq-diag-secret-991\n" + EXCERPTS["cuda-illegal-memory"])
    assert run_diagnosis(folder.path, "ok") is None
    found = run_diagnosis(folder.path, "failed")
    assert found["kind"] == "cuda-illegal-memory" and "CUDA_LAUNCH_BLOCKING=1" in found["fix"]
    assert {s["url"] for s in found["sources"]} >= {"https://github.com/sgl-project/sglang/issues/13308"}
    assert "zq-diag-secret-991" not in str(found)
    assert found["logs"] == ["server.log"]
    empty = run_diagnosis(tmp_path / "empty", "failed")
    assert empty["kind"] == "unknown" and "log is empty" in empty["sentence"] and empty["logs"] == []
    nodes = RunFolder.create(tmp_path / "multi")  # a multi-node run keeps one log per node
    nodes.save_text(nodes.node_log("prefill", 0), NOISE)
    nodes.save_text(nodes.node_log("decode", 0), EXCERPTS["ascend-transfer-engine"])
    multi = run_diagnosis(nodes.path, "failed")
    assert multi["kind"] == "ascend-transfer-engine" and multi["logs"] == [
        "server-decode-0.log",
        "server-prefill-0.log",
    ]


def test_the_report_shows_the_diagnosis_of_a_failed_deployment_first(tmp_path, monkeypatch):
    from kimi_runbooks import report
    from kimi_runbooks.report import show

    shown: list[str] = []
    monkeypatch.setattr(show, "_show", lambda obj: shown.append(getattr(obj, "data", str(obj))))
    folder = RunFolder.create(tmp_path / "run")
    folder.save_text(folder.server_log, NOISE + "\n" + EXCERPTS["host-oom-kill"])
    folder.append_jsonl(folder.stages, {"stage": "deploy", "status": "failed", "detail": "exited"})
    report.show_banner(report.collect(folder))
    assert "The deployment failed." in shown[0] and "dmesg -T" in shown[0]
    assert 'href="https://github.com/sgl-project/sglang/pull/21898"' in shown[0]
    folder.append_jsonl(folder.stages, {"stage": "deploy", "status": "ok"})
    shown.clear()
    report.show_banner(report.collect(folder))
    assert not any("deployment failed" in s for s in shown)
