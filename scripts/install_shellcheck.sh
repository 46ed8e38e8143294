#!/usr/bin/env bash
# Install Debian's shellcheck for the generated-script tests (tests/deploy/test_generated_scripts.py).
# Called from .ci/run; safe to re-run. Needs root (or sudo) and access to the Debian mirror.
set -euo pipefail
if command -v shellcheck >/dev/null 2>&1; then
    echo "shellcheck already installed: $(shellcheck --version | sed -n 2p)"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends shellcheck
shellcheck --version
