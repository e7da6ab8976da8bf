"""``promptx serve --workers N``: N processes on one port, each answering; SIGTERM stops them all
cleanly, and a killed parent takes its workers with it."""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.promptx.servers import ServerProcess

pytestmark = pytest.mark.slow
pytest.importorskip("fastapi")
PROMPTS = [
    "a red fox in snow",
    "a lighthouse at dusk",
    "two blue cups on a shelf",
    "an old tram in the rain",
]


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" not in status.read_text()


def _enhance(url: str, prompt: str) -> dict:
    answer = httpx.post(
        url + "/v1/enhance", json={"prompt": prompt, "target": "video", "seed": 1}, timeout=120
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_workers_share_the_port_and_stop_together(model_dir):
    server = ServerProcess("--workers", "2").start()
    try:
        workers = _children(server.process.pid)
        assert len(workers) == 2, server.output()
        work = [PROMPTS[i % len(PROMPTS)] for i in range(24)]
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda p: _enhance(server.url, p), work))
        assert [a["original_prompt"] for a in answers] == work  # none lost, none crossed
        bad = httpx.post(server.url + "/v1/enhance", json={"prompt": "a cat", "seed": "7"})
        assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request"
        assert httpx.get(server.url + "/health").status_code == 200
    finally:
        status = server.stop()
    assert status == 0, server.output()
    assert not any(_alive(pid) for pid in workers)


def test_a_killed_parent_takes_its_workers_with_it(model_dir):
    server = ServerProcess("--workers", "2").start()
    workers = _children(server.process.pid)
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(10)
    deadline = time.monotonic() + 60
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in workers)
