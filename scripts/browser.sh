#!/usr/bin/env bash
# Makes sure the report's browser tests can run: headless Chromium from Debian's packages
# and target/py-browser, a Python venv with Playwright (the automation client; it drives
# the system Chromium, so `playwright install` -- a browser download -- is never run).
# Idempotent: an installed Chromium and a venv that imports Playwright are left as they are.
#
#   scripts/browser.sh            # then: cargo test -p compactor-report --test integration browser::
#
# The tests find the venv at $COMPACTOR_PY_BROWSER (default target/py-browser) and the
# browser at $COMPACTOR_CHROMIUM (default /usr/bin/chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${COMPACTOR_PY_BROWSER:-target/py-browser}"
PYTHON="${PYTHON:-python3}"
CHROMIUM="${COMPACTOR_CHROMIUM:-/usr/bin/chromium}"

if [ -x "$CHROMIUM" ]; then
    echo "browser.sh: Chromium found: $CHROMIUM"
else
    if [ "$(id -u)" -ne 0 ]; then
        echo "browser.sh: Chromium is not installed and this is not root; install Debian's 'chromium' package" >&2
        exit 1
    fi
    echo "browser.sh: installing Chromium from Debian packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends chromium
fi
"$CHROMIUM" --version

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import playwright.sync_api" 2>/dev/null; then
    echo "browser.sh: $VENV is ready"
    exit 0
fi
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "playwright>=1.40,<2"
"$VENV/bin/python" -c "import playwright; from importlib.metadata import version; print('browser.sh: playwright', version('playwright'))"
