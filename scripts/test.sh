#!/usr/bin/env bash
# THE test command: the Rust workspace's tests, the CLI installed as Getting started
# says (scripts/install-check.sh), the Node package's (scripts/node-package.sh),
# then the Python package's (pytest over
# crates/llm-compactor-py/tests, and mypy --strict over a typed usage file that checks
# the stubs). The Python part needs the package built into target/py-compactor by
# scripts/python-package.sh, which this script runs first (idempotent; fast when
# nothing changed; COMPACTOR_PY_BUILT=1 skips it when the caller just ran it). Extra
# arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${COMPACTOR_PY_VENV:-target/py-compactor}"

echo "== cargo test --workspace --all-features"
cargo test --workspace --all-features

echo "== cargo install --path crates/compactor-cli, as Getting started says (into a temp dir)"
bash scripts/install-check.sh

echo "== the Node package (native addon, node --test, tsc --strict)"
bash scripts/node-package.sh

if [ "${COMPACTOR_PY_BUILT:-}" != 1 ]; then
    echo "== the Python package (build + install)"
    bash scripts/python-package.sh
fi

echo "== mypy --strict (the stubs, over a typed usage file)"
"$VENV/bin/python" -m mypy --strict --no-incremental \
    crates/llm-compactor-py/tests/typed_usage.py crates/llm-compactor-py/python/llm_compactor/

echo "== pytest (the Python package)"
set +e
(cd crates/llm-compactor-py/tests && "$OLDPWD/$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@")
status=$?
set -e
# 5: no tests were collected (a filter that matched nothing): not a failure of the suite.
if [ "$status" -eq 5 ]; then
    echo "pytest: no tests collected"
    status=0
fi
exit "$status"
