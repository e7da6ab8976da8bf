"""Shared fixtures: the real embedded model, prepared once per test session.

In CI (``CI=true``) a missing embedded model is a failure, not a skip: the
main path must be tested against the real model.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

if os.environ.get("PYTEST_XDIST_WORKER"):
    # parallel workers share the cores: each gets its share of torch threads (before torch loads;
    # the servers and commands the tests start inherit it)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))


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
    """Tiny matmuls: on this shared 2-core machine a second torch thread only spins (much slower
    under load)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def trained_drafter(fp32_model):
    """The shipped drafter on the fp32 target: it proposes good drafts, so long accepted runs
    (and the bookkeeping they need) are exercised, and decodes take fewer target passes."""
    import torch

    from engine.speculative.checkpoint import load_drafter

    model, _ = fp32_model
    shipped = Path(__file__).resolve().parents[1] / "promptx" / "drafters" / "smollm2-135m-instruct"
    return load_drafter(shipped, model, dtype=torch.float32).eval()
