"""Imports run down the layers of ARCHITECTURE.md (tools/check_layers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from check_layers import cycles, violations  # noqa: E402


def test_no_import_runs_up_a_layer():
    assert violations(ROOT) == []


def test_no_modules_import_each_other():
    assert cycles(ROOT) == []


def test_the_check_sees_a_cycle_hidden_in_a_function_but_not_a_type_checking_import(tmp_path):
    weights = tmp_path / "engine" / "weights"
    weights.mkdir(parents=True)
    (weights / "loading.py").write_text("def load():\n    from .adapters import split\n")
    (weights / "adapters.py").write_text("from .loading import load\n")
    (weights / "tokenizer.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .vocab import Vocab\n"
    )
    (weights / "vocab.py").write_text("from .tokenizer import encode\n")
    assert cycles(tmp_path) == [
        "engine.weights.adapters -> engine.weights.loading -> engine.weights.adapters"
    ]


def test_the_check_sees_an_import_that_runs_up(tmp_path):
    (tmp_path / "engine" / "runtime").mkdir(parents=True)
    (tmp_path / "engine" / "runtime" / "model.py").write_text(
        "def f():\n    from ..planning.harness import Harness\n"
    )
    (tmp_path / "engine" / "decode").mkdir()
    (tmp_path / "engine" / "decode" / "x.py").write_text("import promptx.enhancer\n")
    (tmp_path / "promptx").mkdir()
    (tmp_path / "promptx" / "errors.py").write_text("from .enhancer import Enhancer\n")
    found = violations(tmp_path)
    assert any("engine.runtime.model imports engine.planning.harness" in line for line in found)
    assert any("engine never imports promptx" in line for line in found)
    assert any("promptx.errors imports promptx.enhancer" in line for line in found)


def test_the_check_sees_promptx_reaching_past_the_engine_seam(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "promptx" / "backends").mkdir(parents=True)
    (tmp_path / "promptx" / "backends" / "ok.py").write_text(
        "def f():\n    from engine import Generator\n    from engine.bench import run_bench\n"
    )
    (tmp_path / "promptx" / "backends" / "deep.py").write_text(
        "def f():\n    from engine.decode.sampling import X\n"
    )
    found = violations(tmp_path)
    assert len(found) == 1 and found[0].startswith(
        "promptx.backends.deep imports engine.decode.sampling"
    )
