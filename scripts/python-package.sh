#!/usr/bin/env bash
# Builds the Python package (crates/llm-compactor-py: the Rust core as one abi3 wheel,
# PyO3 + maturin) and installs it into target/py-compactor, a venv that also holds what
# its tests need from PyPI: pytest, mypy, and the adapters' frameworks (langchain,
# langchain-openai, openai-agents). Then checks that the wheel imports in a fresh venv
# of its own (nothing but the wheel installed).
#
# Idempotent: the venv and its PyPI packages are kept; the wheel is rebuilt by cargo's
# incremental build (fast when nothing changed) and reinstalled.
# The wheel lands in target/wheels/. Fails if the wheel is over 15 MB (issue 32: it was
# 33.4 MB while the extension linked bpe-openai's embedded encoders).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${COMPACTOR_PY_VENV:-target/py-compactor}"
PYTHON="${PYTHON:-python3}"
PIP=("$VENV/bin/python" -m pip --quiet --disable-pip-version-check)

if ! [ -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
# The test tools and the adapters' frameworks (pinned to their major versions).
if ! "$VENV/bin/python" -c "import maturin, pytest, mypy, langchain.agents, langchain_openai, agents" 2>/dev/null; then
    "${PIP[@]}" install "maturin>=1.9.4,<2" "pytest>=8,<10" "mypy>=1.10,<2" \
        "langchain>=1.0,<2" "langchain-openai>=1.0,<2" "openai-agents>=0.4,<1"
fi

# The release wheel (abi3, CPython >= 3.9). maturin sets PYO3_BUILD_EXTENSION_MODULE.
rm -f target/wheels/llm_compactor-*.whl
"$VENV/bin/maturin" build --release --quiet -m crates/llm-compactor-py/Cargo.toml --out target/wheels
WHEEL=$(ls target/wheels/llm_compactor-*.whl)
# The size goal: under 15 MB (the wheel's bytes and its extension's, uncompressed).
"$VENV/bin/python" - "$WHEEL" <<'PY'
import os, sys, zipfile
wheel = sys.argv[1]
size = os.path.getsize(wheel)
extension = sum(i.file_size for i in zipfile.ZipFile(wheel).infolist() if i.filename.endswith((".so", ".pyd")))
print(f"python-package: wheel {size / 1e6:.1f} MB ({size} bytes), extension {extension / 1e6:.1f} MB uncompressed")
if size > 15_000_000:
    sys.exit("python-package: FAIL: the wheel is over 15 MB (is bpe-openai's encoder linked again? issue 32)")
PY
"${PIP[@]}" install --force-reinstall --no-deps "$WHEEL"

# The wheel alone imports in a fresh venv.
FRESH="${VENV}-fresh"
rm -rf "$FRESH"
"$PYTHON" -m venv "$FRESH"
"$FRESH/bin/python" -m pip --quiet --disable-pip-version-check install --no-index "$WHEEL"
FRESH_PYTHON="$(cd "$FRESH" && pwd)/bin/python"
(cd / && "$FRESH_PYTHON" -c "import llm_compactor as m; print('python-package: fresh venv imports llm_compactor', m.__version__, 'counts', m.count_tokens([{'role': 'user', 'content': 'hi'}]))")
echo "python-package: $WHEEL ($(du -k "$WHEEL" | cut -f1) KiB) installed in $VENV"
