"""``promptx serve`` as a real subprocess on a free loopback port, for the tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
STARTUP_S = 240


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """Start with ``start()``; ``url`` is ``http://127.0.0.1:PORT``; ``stop()`` sends SIGTERM."""

    def __init__(self, *args: str, env: dict | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = ["--port", str(self.port), *args]
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen | None = None
        self.log = tempfile.NamedTemporaryFile(
            "w+", prefix="promptx-serve-", suffix=".log", delete=False
        )

    def start(self, *, wait_ready: bool = True) -> "ServerProcess":
        self.process = subprocess.Popen(
            [sys.executable, "-m", "promptx", "serve", *self.args],
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if wait_ready:
            self.wait_ready()
        return self

    def wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"promptx serve exited with {self.process.returncode}:\n{self.output()}"
                )
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.25)
        self.kill()
        raise RuntimeError(f"promptx serve was not ready within {STARTUP_S} s:\n{self.output()}")

    def signal(self, sig: int) -> None:
        self.process.send_signal(sig)

    def stop(self, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def output(self) -> str:
        """What the server has printed so far (its log lines)."""
        return Path(self.log.name).read_text(encoding="utf-8", errors="replace")
