"""Check a scenario's token accounting with one request, before bench_serving runs it (bench env).

Usage: python token_probe.py < request.json   (one JSON result line per scenario on stdout)

request.json: {"base_url": ..., "timeout": s, "scenarios": [{"id": ..., "bench_args": [...]}]}
where bench_args are the exact arguments the runner gives `python -m sglang.bench_serving`.

For each scenario this parses those arguments with bench_serving's own parser, seeds the random
generators as bench_serving does and draws the dataset with its own `get_dataset`, so the first
prompt is the very prompt the benchmark will send. It counts that prompt with the benchmark's
tokenizer the way the server will see it (after the chat template for the chat backend), sends it
once, not streamed (streamed answers carry no usage on some servers), with the request body the
backend builds, and prints the server's own usage beside the local counts. The comparison (within
2 %) is made by the caller (kimi_runbooks.speed.tokens).
"""

import contextlib
import json
import os
import random
import sys
import urllib.error
import urllib.request

import numpy as np
import sglang.benchmark.serving as serving
from sglang.benchmark.datasets import get_dataset
from sglang.benchmark.utils import get_tokenizer

PATHS = {"sglang": "/generate", "sglang-oai": "/v1/completions", "sglang-oai-chat": "/v1/chat/completions"}


def bench_args(argv):
    """bench_serving's own argparse result for argv (its cli_main, with the run step captured)."""
    captured = []
    original_run, original_argv = serving.run_benchmark, sys.argv
    serving.run_benchmark = captured.append
    sys.argv = ["bench_serving", *argv]
    try:
        serving.cli_main()
    finally:
        serving.run_benchmark, sys.argv = original_run, original_argv
    return captured[0]


def count_sent(tokenizer, backend, prompt):
    if backend == "sglang-oai-chat":
        ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True)
        if hasattr(ids, "keys"):  # transformers 5 may return a BatchEncoding
            ids = ids["input_ids"]
        return len(ids)
    return len(tokenizer.encode(prompt))


def payload(args, backend, model, prompt, output_len):
    """The body bench_serving's request function builds for this backend, not streamed."""
    extra = json.loads(args.extra_request_body) if args.extra_request_body else {}
    ignore_eos = not args.disable_ignore_eos
    if backend == "sglang":
        body = {
            "text": prompt,
            "sampling_params": {
                "temperature": args.temperature,
                "max_new_tokens": output_len,
                "ignore_eos": ignore_eos,
            },
            "stream": False,
        }
    elif backend == "sglang-oai":
        body = {"model": model, "prompt": prompt, "best_of": 1, "max_tokens": output_len, "stream": False}
    else:
        messages = [{"role": "user", "content": prompt}]
        body = {"model": model, "messages": messages, "max_completion_tokens": output_len, "stream": False}
    if backend != "sglang":
        if "temperature" not in extra:
            body["temperature"] = 0.0
        if "ignore_eos" not in extra:
            body["ignore_eos"] = ignore_eos
    body.update(extra)
    body["stream"] = False
    return body


def post(url, body, timeout):
    headers = {"Content-Type": "application/json"}
    if os.environ.get("OPENAI_API_KEY"):
        headers["Authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.load(resp)


def probe(base_url, item, timeout, tokenizers):
    args = bench_args(item["bench_args"])
    out = {"id": item["id"], "backend": args.backend}
    if args.backend not in PATHS:
        return {**out, "error": f"backend {args.backend} is not checked"}
    tokenizer_id = args.tokenizer or args.model
    if tokenizer_id not in tokenizers:
        tokenizers[tokenizer_id] = get_tokenizer(tokenizer_id)
    tokenizer = tokenizers[tokenizer_id]
    random.seed(args.seed)
    np.random.seed(args.seed)
    row = get_dataset(args, tokenizer, args.served_model_name or args.model)[0]
    if not isinstance(row.prompt, str):
        return {**out, "error": "the first prompt is not text (multi-turn or token ids): not checked"}
    out.update(
        tokenizer=str(tokenizer_id),
        nominal_input=int(row.prompt_len),
        sent_input=count_sent(tokenizer, args.backend, row.prompt),
        requested_output=int(row.output_len),
    )
    body = payload(args, args.backend, args.served_model_name or args.model, row.prompt, row.output_len)
    try:
        answer = post(base_url.rstrip("/") + PATHS[args.backend], body, timeout)
    except urllib.error.HTTPError as exc:
        return {
            **out,
            "error": f"HTTP {exc.code} from {PATHS[args.backend]}: {exc.read()[:300].decode(errors='replace')}",
        }
    except OSError as exc:
        return {**out, "error": f"{type(exc).__name__}: {exc}"}
    usage = answer.get("usage") or answer.get("meta_info") or {}
    choices = answer.get("choices") or [{}]
    out.update(
        server_input=usage.get("prompt_tokens"),
        server_output=usage.get("completion_tokens"),
        finish_reason=choices[0].get("finish_reason") if isinstance(choices[0], dict) else None,
    )
    return out


def run_all(request):
    """One result dict per scenario of the request (what main prints, one JSON line each)."""
    tokenizers = {}
    results = []
    for item in request["scenarios"]:
        try:
            with contextlib.redirect_stdout(sys.stderr):  # the dataset code prints; stdout carries results only
                result = probe(request["base_url"], item, float(request.get("timeout", 120)), tokenizers)
        except SystemExit as exc:  # bench_serving's parser refused the arguments
            result = {"id": item["id"], "error": f"bench_serving refused the arguments (exit {exc.code})"}
        except Exception as exc:  # noqa: BLE001 - one scenario's failure is reported, the rest still run
            result = {"id": item["id"], "error": f"{type(exc).__name__}: {str(exc)[:500]}"}
        results.append(result)
    return results


def main():
    for result in run_all(json.load(sys.stdin)):
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
