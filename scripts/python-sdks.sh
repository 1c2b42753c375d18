#!/usr/bin/env bash
# Creates target/py-sdks: a Python venv with the official OpenAI and Anthropic SDKs and the
# OpenAI Agents SDK from PyPI, used by the proxy's "as a user would" tests
# (crates/compactor-proxy/tests). Idempotent: an existing venv with all three is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${COMPACTOR_PY_SDKS:-target/py-sdks}"
PYTHON="${PYTHON:-python3}"
# The OpenAI SDK must have the Responses API (openai >= 1.66).
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import anthropic, agents; from openai.resources.responses import Responses" 2>/dev/null; then
    echo "python-sdks: $VENV is ready"
    exit 0
fi
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "openai>=1.66,<4" "anthropic>=0.40,<3" "openai-agents>=0.24,<1"
"$VENV/bin/python" -c "import openai, anthropic; print('python-sdks: openai', openai.__version__, 'anthropic', anthropic.__version__)"
