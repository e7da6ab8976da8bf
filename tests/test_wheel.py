"""A wheel built from the repository installs into a fresh virtual environment and works.

The new environment reuses this environment's installed dependencies (a .pth
line, so nothing is downloaded) but gets promptx only from the wheel; the
command runs outside the source tree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs)


def test_wheel_installs_and_enhances(tmp_path, model_dir):
    pytest.importorskip("build")
    run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(tmp_path / "dist"),
            str(ROOT),
        ]
    )
    wheel = next((tmp_path / "dist").glob("promptx-*.whl"))
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    py = bin_dir / "python"
    venv_site = Path(
        run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
        ).stdout.strip()
    )
    # reuse the dependencies already installed here, but not the editable promptx
    (venv_site / "_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)])

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {**os.environ, "PYTHONPATH": ""}
    where = run(
        [str(py), "-c", "import promptx, promptx_templates; print(promptx.__file__)"],
        cwd=outside,
        env=env,
    )
    assert str(venv) in where.stdout
    listed = run([str(bin_dir / "promptx"), "templates", "list"], cwd=outside, env=env)
    assert "wan-t2v" in listed.stdout
    result = run(
        [
            str(bin_dir / "promptx"),
            "enhance",
            "a cat on a skateboard",
            "--target",
            "video",
            "--json",
            "--seed",
            "1",
            "--max-new-tokens",
            "48",
        ],
        cwd=outside,
        env=env,
    )
    payload = json.loads(result.stdout)
    assert payload["text"].strip() and payload["target"] == "video"
    assert payload["strength"] == "light" and payload["added"]  # the phrase sets are in the wheel
