"""Imports run down the layers of ARCHITECTURE.md (tools/check_layers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from check_layers import violations  # noqa: E402


def test_no_import_runs_up_a_layer():
    assert violations(ROOT) == []


def test_the_check_sees_an_import_that_runs_up(tmp_path):
    (tmp_path / "engine" / "runtime").mkdir(parents=True)
    (tmp_path / "engine" / "runtime" / "model.py").write_text("def f():\n    from ..planning.harness import Harness\n")
    (tmp_path / "engine" / "decode").mkdir()
    (tmp_path / "engine" / "decode" / "x.py").write_text("import promptx.enhancer\n")
    (tmp_path / "promptx").mkdir()
    (tmp_path / "promptx" / "errors.py").write_text("from .enhancer import Enhancer\n")
    found = violations(tmp_path)
    assert any("engine.runtime.model imports engine.planning.harness" in line for line in found)
    assert any("engine never imports promptx" in line for line in found)
    assert any("promptx.errors imports promptx.enhancer" in line for line in found)
