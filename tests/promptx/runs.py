"""Helpers for tests that run ``promptx enhance --file ... --output ...`` as a real process and
stop it halfway."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def output_rows(out: Path) -> list[dict]:
    """The JSON lines of a batch run's output file."""
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def run_until(command: list[str], out: Path, lines: int, sig: int) -> subprocess.CompletedProcess:
    """Start the command, send ``sig`` once ``out`` holds ``lines`` lines, return how it ended.

    The command gets Ctrl-C's default handling even where the test runner was started in the
    background (a shell then ignores SIGINT for it, and Python would never see the signal)."""
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and process.poll() is None:
        if out.exists() and out.read_text(encoding="utf-8").count("\n") >= lines:
            process.send_signal(sig)
            break
        time.sleep(0.1)
    stdout, stderr = process.communicate(timeout=600)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
