"""Shared fixtures: the real embedded model, prepared once per test session.

In CI (``CI=true``) a missing embedded model is a failure, not a skip: the
main path must be tested against the real model.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def _missing(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (required in CI)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """Hugging Face style directory of the embedded SmolLM2-135M-Instruct."""
    from promptx.errors import ModelNotFoundError
    from promptx.models import prepare, resolve_model

    try:
        source = resolve_model(None)
    except ModelNotFoundError as exc:
        _missing(str(exc))
    return prepare(source, quiet=True)


@pytest.fixture(scope="session")
def fp32_model(model_dir):
    """(Transformer, ChatTokenizer) in float32, for exactness tests."""
    import torch

    from engine.weights.loading import load_model

    return load_model(model_dir, torch.float32)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        _missing(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="module")
def one_thread():
    """Tiny matmuls: on this shared 2-core machine a second torch thread only spins (much slower under load)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
