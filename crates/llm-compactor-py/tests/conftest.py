"""Shared fixtures: the real trajectories (skipped with a notice when absent; a failure
under CI=true) and the scripted server."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Dict, Iterator, List

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


def data_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("LLM_COMPACTOR_DATA", str(REPO / ".." / "shared" / "data")))


def largest_trajectory() -> pathlib.Path:
    folder = data_dir() / "trajectories" / "mini-swe-agent"
    files = sorted(folder.glob("*.traj.json"), key=lambda p: p.stat().st_size) if folder.is_dir() else []
    if not files:
        message = f"no real trajectories under {folder} (set LLM_COMPACTOR_DATA)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        print(f"NOTICE: skipping: {message}")
        pytest.skip(message)
    return files[-1]


@pytest.fixture(scope="session")
def trajectory() -> Dict[str, Any]:
    doc: Dict[str, Any] = json.loads(largest_trajectory().read_text())
    return doc


@pytest.fixture(scope="session")
def observations(trajectory: Dict[str, Any]) -> List[str]:
    """The trajectory's tool outputs (the user turns after the task), in order."""
    texts = []
    for m in trajectory["messages"][2:]:
        if m.get("role") not in ("user", "tool"):
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        if isinstance(content, str) and content:
            texts.append(content)
    assert len(texts) >= 60, len(texts)
    return texts


@pytest.fixture(scope="session")
def task(trajectory: Dict[str, Any]) -> str:
    content = trajectory["messages"][1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


@pytest.fixture()
def scripted() -> Iterator[Any]:
    from scripted_server import ScriptedServer

    servers: List[ScriptedServer] = []

    def start(script: Any) -> ScriptedServer:
        server = ScriptedServer(script)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
