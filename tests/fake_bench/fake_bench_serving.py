"""A stand-in for `python3 -m sglang.bench_serving`, used as a command prefix in fast tests.

Called as `fake_bench_serving.py python3 -m sglang.bench_serving --backend ... --output-file F`
(the runner puts its command prefix in front of the real command, like `docker exec ctr`).
It appends one JSON line the way bench_serving does (with a bare Infinity request rate) and
prints a result block. Behaviour is steered by environment variables:
  FAKE_BENCH_FAIL=<scenario id>   exit 1 for that scenario (matched against the output file name)
  FAKE_BENCH_SLEEP=<seconds>      sleep first (to hit the runner's timeout)
  FAKE_BENCH_NO_FILE=1            print the block only, write no output file
  FAKE_BENCH_ARGV_LOG=<path>      append the received argv (and whether a key was seen) as JSON
  FAKE_BENCH_ALL_FAIL=<scenario>  every request fails: print what bench_serving 0.5.23 prints then
                                  (its "All requests failed" warning, then the IndexError it raises
                                  in calculate_metrics), exit 1, write no output file
  FAKE_BENCH_REQUEST_ERRORS=<n>   with --output-details: n requests failed (fewer completed)
  FAKE_BENCH_HANG=<file prefix>   hang (sleep 600 s) for that output file (a scenario's repeat: `id.r2`)
  FAKE_BENCH_JITTER=1             repeat k (output file `id.rk.jsonl`) adds 2 (k - 1) ms to the median TTFT
Like the real client it first prints its whole argument namespace (a long line), so the error is
at the end of the log, never at its start.
"""

import argparse
import json
import os
import sys
import time

args_in = sys.argv[1:]
assert args_in[1:3] == ["-m", "sglang.bench_serving"], args_in
p = argparse.ArgumentParser()
p.add_argument("--output-file")
p.add_argument("--num-prompts", type=int, default=1000)
p.add_argument("--max-concurrency", type=int, default=None)
p.add_argument("--backend")
p.add_argument("--random-input-len", type=int, default=1024)
p.add_argument("--random-output-len", type=int, default=1024)
p.add_argument("--output-details", action="store_true")
args, _ = p.parse_known_args(args_in[3:])
print(f"benchmark_args=Namespace({', '.join(f'arg{i}={i}' for i in range(150))}, {vars(args)})")
name = os.path.basename(args.output_file or "")
if os.environ.get("FAKE_BENCH_ARGV_LOG"):
    with open(os.environ["FAKE_BENCH_ARGV_LOG"], "a") as fh:
        fh.write(json.dumps({"argv": args_in, "key": os.environ.get("OPENAI_API_KEY"), "pid": os.getpid()}) + "\n")
time.sleep(float(os.environ.get("FAKE_BENCH_SLEEP", "0")))
hang = os.environ.get("FAKE_BENCH_HANG")
if hang and name.startswith(hang + "."):
    time.sleep(600)
repeat = int(name.split(".r")[-1].split(".")[0]) if ".r" in name else 1
jitter = 2.0 * (repeat - 1) if os.environ.get("FAKE_BENCH_JITTER") else 0.0
fail = os.environ.get("FAKE_BENCH_FAIL")
if fail and name.startswith(fail + "."):
    print("Traceback (most recent call last):", file=sys.stderr)
    print('  File "serving.py", line 1598, in benchmark', file=sys.stderr)
    print("    raise ValueError(", file=sys.stderr)
    print(
        "ValueError: Warmup failed - Please make sure benchmark arguments are correctly specified. "
        'Error: Unauthorized: {"detail":"Invalid API key"} (fake)',
        file=sys.stderr,
    )
    sys.exit(1)
all_fail = os.environ.get("FAKE_BENCH_ALL_FAIL")
if all_fail and name.startswith(all_fail + "."):
    print(
        "serving.py:1178: UserWarning: All requests failed. This is likely due to a misconfiguration "
        "on the benchmark arguments.\n  warnings.warn(",
        file=sys.stderr,
    )
    print("Traceback (most recent call last):", file=sys.stderr)
    print('  File "serving.py", line 1216, in calculate_metrics', file=sys.stderr)
    print("    p90_e2e_latency_ms=np.percentile(e2e_latencies, 90)", file=sys.stderr)
    print("IndexError: index -1 is out of bounds for axis 0 with size 0", file=sys.stderr)
    sys.exit(1)
failed_requests = int(os.environ.get("FAKE_BENCH_REQUEST_ERRORS", "0"))
conc = args.max_concurrency or 1
tpot = 10.0 + 0.5 * conc
out_tokens = args.num_prompts * args.random_output_len
duration = args.random_output_len * tpot / 1000.0 * args.num_prompts / conc
m = {
    "backend": args.backend,
    "request_rate": float("inf"),
    "max_concurrency": args.max_concurrency,
    "completed": args.num_prompts - failed_requests,
    "duration": duration,
    "total_input_tokens": args.num_prompts * args.random_input_len,
    "total_output_tokens": out_tokens,
    "output_throughput": out_tokens / duration,
    "total_throughput": (out_tokens + args.num_prompts * args.random_input_len) / duration,
    "median_ttft_ms": 100.0 + conc + jitter,
    "p99_ttft_ms": 150.0 + conc,
    "median_tpot_ms": tpot,
    "p99_tpot_ms": tpot * 1.5,
    "median_itl_ms": tpot,
    "p99_itl_ms": tpot * 2,
    "server_info": {"emulated": True},
    "itls": [1.0, 2.0],
}
if args.output_details:
    ok = args.num_prompts - failed_requests
    m["input_lens"] = [args.random_input_len] * args.num_prompts
    m["output_lens"] = [args.random_output_len] * ok + [0] * failed_requests
    m["errors"] = [""] * ok + ["ClientPayloadError: Response payload is not completed (fake)"] * failed_requests
if args.output_file and not os.environ.get("FAKE_BENCH_NO_FILE"):
    with open(args.output_file, "a") as fh:
        fh.write(json.dumps(m) + "\n")
print("============ Serving Benchmark Result ============")
print(f"Backend:                                 {args.backend}")
print(f"Max request concurrency:                 {args.max_concurrency or 'not set'}")
print(f"Successful requests:                     {m['completed']}")
print(f"Output token throughput (tok/s):         {m['output_throughput']:.2f}")
print(f"Total token throughput (tok/s):          {m['total_throughput']:.2f}")
print(f"Median TTFT (ms):                        {m['median_ttft_ms']:.2f}")
print(f"Median TPOT (ms):                        {m['median_tpot_ms']:.2f}")
print("==================================================")
