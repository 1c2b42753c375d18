"""The README's Python block and examples/python/ run as written (issue 44): a block
that stopped working fails here, not in a newcomer's terminal."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]


def python_blocks(page: pathlib.Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S)


def test_the_readme_python_block_runs() -> None:
    blocks = python_blocks(REPO / "README.md")
    assert len(blocks) == 1, blocks
    scope: dict[str, object] = {}
    exec(compile(blocks[0], "README.md (python block)", "exec"), scope)  # noqa: S102
    messages = scope["messages"]
    result = scope["result"]
    assert isinstance(messages, list) and messages[0]["role"] == "system"
    assert result.tokens_after < result.tokens_before <= 40_000  # type: ignore[attr-defined]
    assert result.tokens_after <= 16_000  # type: ignore[attr-defined]


def test_the_compact_file_example_runs() -> None:
    session = REPO / "examples" / "sessions" / "long-agent-session.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "python" / "compact_file.py"), str(session), "16000"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    messages = json.loads(done.stdout)
    assert messages[0]["role"] == "system"
    assert len(messages) < len(json.loads(session.read_text(encoding="utf-8")))
    assert "fallback: False" in done.stderr, done.stderr
