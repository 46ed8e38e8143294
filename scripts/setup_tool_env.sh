#!/usr/bin/env bash
# Create the isolated virtualenv for one external tool the runbooks drive.
#
#   bash scripts/setup_tool_env.sh NAME [--force] [--check]
#
# NAME is one of: bench (SGLang's bench_serving client), sgl-eval, inspect (inspect-ai +
# inspect_evals). The env goes to <repo>/.venvs/NAME (git-ignored) and is built only from the
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
    echo "usage: bash scripts/setup_tool_env.sh {bench|sgl-eval|inspect} [--force] [--check]" >&2
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
    *) usage; die "unknown tool env '$NAME' (known: bench, sgl-eval, inspect)" ;;
esac

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
# the interpreter's version. The Python side (kimi_runbooks.toolenv) only checks that a stamp
# exists; this script decides whether it is current.
want_hash() {
    {
        echo "python $PY_VERSION"
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
    *)
        pip_step "installing ${REQ_FILES[*]}" -r "$REQ_DIR/${REQ_FILES[0]}"
        ;;
esac

# Drift check: the env must hold exactly the pins in the requirement files. A difference means
# the files are incomplete (pip pulled something unpinned) and the next build may differ.
expected="$(cat "${REQ_FILES[@]/#/$REQ_DIR/}" | sed -e 's/#.*//' -e 's/[[:space:]]//g' | grep -v '^$' | LC_ALL=C sort -u)"
actual="$("$VPY" -m pip freeze --all --exclude pip --disable-pip-version-check 2>/dev/null | LC_ALL=C sort -u)"
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
esac
if ! HF_HUB_OFFLINE=1 "${smoke[@]}" >"$smoke_out" 2>&1; then
    tail -n 30 "$smoke_out" >&2
    die "smoke check failed: ${smoke[*]} (env left without stamp; fix the pins and rerun with --force)"
fi

echo "$WANT" >"$STAMP"
size="$(du -sh "$VENV" 2>/dev/null | cut -f1)"
log "ready: $VENV ($size, $(($(date +%s) - start))s)"
