#!/usr/bin/env bash
# Install Debian's chromium for the headless report test (tests/test_report_browser.py).
# Called from .ci/run; safe to re-run. Needs root (or sudo) and access to the Debian mirror.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    echo "chromium already installed: $(command -v chromium)"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium
chromium --version
