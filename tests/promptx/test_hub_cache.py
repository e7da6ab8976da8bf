"""ORG/NAME[@REV] resolved offline from a fake Hugging Face hub cache (laid out as huggingface_hub
does)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
import torch

from promptx import hub_cache, models
from promptx.errors import ModelNotFoundError

MAIN = "abcdef0111111111111111111111111111111111"
DEV = "abcdef0222222222222222222222222222222222"


def _save_tiny_llama(directory: Path) -> None:
    """A tiny random Llama (transformers) plus a word-level tokenizer.json (tokenizers), all
    offline."""
    import transformers
    from tokenizers import Tokenizer, models as tok_models, pre_tokenizers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(directory, safe_serialization=True)
    tokenizer = Tokenizer(
        tok_models.WordLevel({"<unk>": 0, "</s>": 1, "hello": 2, "world": 3}, unk_token="<unk>")
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(directory / "tokenizer.json"))


def _add_snapshot(repo: Path, commit: str, files: list[Path], refs: tuple[str, ...] = ()) -> Path:
    """Files go to blobs/<sha256>; snapshots/<commit>/<name> are relative symlinks to them."""
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir(exist_ok=True)
    for file in files:
        blob = repo / "blobs" / hashlib.sha256(file.read_bytes()).hexdigest()
        if not blob.exists():
            blob.write_bytes(file.read_bytes())
        (snapshot / file.name).symlink_to(os.path.relpath(blob, snapshot))
    for ref in refs:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / ref).write_text(commit)
    return snapshot


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    """A cache with org/tiny (refs main, dev), Org/Tiny-Chat (config only), org/broken (no
    config.json)."""
    root = tmp_path_factory.mktemp("hf")
    saved = root / "saved"
    _save_tiny_llama(saved)
    cache = root / "hub"
    tiny = cache / "models--org--tiny"
    _add_snapshot(tiny, MAIN, sorted(saved.iterdir()), refs=("main",))
    _add_snapshot(tiny, DEV, sorted(saved.iterdir()), refs=("dev",))
    _add_snapshot(cache / "models--Org--Tiny-Chat", MAIN, [saved / "config.json"], refs=("main",))
    _add_snapshot(
        cache / "models--org--broken", MAIN, [saved / "model.safetensors"], refs=("main",)
    )
    return cache


@pytest.fixture
def cached(hub, monkeypatch) -> Path:
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    return hub


def test_repo_id_resolves_to_the_main_snapshot(cached):
    source = models.resolve_model("org/tiny")
    assert source.directory == cached / "models--org--tiny" / "snapshots" / MAIN
    assert source.name == "tiny" and source.ready and source.gguf is None
    assert (source.directory / "config.json").is_symlink()
    assert models.prepare(source, quiet=True) == source.directory  # a ready directory is used as is


def test_the_engine_loads_the_cached_snapshot(cached):
    from engine.weights.loading import load_model

    model, tokenizer = load_model(models.resolve_model("org/tiny").directory, torch.float32)
    tokens = torch.tensor([tokenizer.encode("hello world")])
    assert tokens.tolist() == [[2, 3]]
    with torch.no_grad():
        logits = model(tokens, model.new_cache(16)).logits
    assert logits.shape == (1, 2, 128) and torch.isfinite(logits).all()


@pytest.mark.parametrize(
    "spec, commit, name",
    [
        ("org/tiny@main", MAIN, "tiny@main"),
        ("org/tiny@dev", DEV, "tiny@dev"),
        ("org/tiny@abcdef01", MAIN, "tiny@abcdef01"),  # a commit prefix, matched against snapshots/
        (f"org/tiny@{DEV}", DEV, f"tiny@{DEV}"),
    ],
)
def test_revisions_pick_their_snapshot(cached, spec, commit, name):
    source = models.resolve_model(spec)
    assert source.directory.name == commit and source.name == name


def test_commit_prefix_is_case_insensitive(cached):
    assert hub_cache.find_snapshot(f"org/tiny@{DEV[:10].upper()}").name == DEV


def test_the_name_is_the_repo_name_lowercased(cached):
    source = models.resolve_model("Org/Tiny-Chat")
    assert (
        source.name == "tiny-chat"
        and source.directory.parent.parent.name == "models--Org--Tiny-Chat"
    )


def test_missing_repo_says_where_it_looked_and_how_to_fetch(cached):
    with pytest.raises(ModelNotFoundError) as caught:
        models.resolve_model("org/absent")
    message = str(caught.value)
    assert "not in the local Hugging Face cache" in message and str(cached) in message
    assert "never downloads" in message and "huggingface-cli download org/absent" in message
    assert "HF_HUB_CACHE" in message


def test_missing_revision_lists_the_refs(cached):
    with pytest.raises(ModelNotFoundError, match=r"revision 'v2' not found .*refs: dev, main"):
        models.resolve_model("org/tiny@v2")
    with pytest.raises(ModelNotFoundError, match="revision '1234567' not found"):
        models.resolve_model("org/tiny@1234567")


def test_ambiguous_commit_prefix_names_the_matches(cached):
    with pytest.raises(
        ModelNotFoundError, match=f"ambiguous: matches {DEV}|ambiguous: matches {MAIN}"
    ):
        hub_cache.find_snapshot("org/tiny@abcdef0")


def test_snapshot_without_config_is_not_a_model(cached):
    with pytest.raises(
        ModelNotFoundError, match="no config.json, so not a transformers model directory"
    ):
        models.resolve_model("org/broken")


def test_dangling_config_link_is_an_incomplete_download(cached, tmp_path, monkeypatch):
    config = tmp_path / "config.json"
    config.write_text("{}")
    repo = tmp_path / "hub" / "models--org--partial"
    snapshot = _add_snapshot(repo, MAIN, [config], refs=("main",))
    for blob in (repo / "blobs").iterdir():
        blob.unlink()
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ModelNotFoundError, match="incomplete download") as caught:
        models.resolve_model("org/partial")
    assert str(snapshot) in str(caught.value)


def test_cache_dir_follows_the_environment_in_order(monkeypatch, tmp_path):
    for name in ("HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert hub_cache.hub_cache_dir() == tmp_path / "home" / ".cache" / "huggingface" / "hub"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub_cache.hub_cache_dir() == tmp_path / "xdg" / "huggingface" / "hub"
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert hub_cache.hub_cache_dir() == tmp_path / "hf" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hubcache"))
    assert hub_cache.hub_cache_dir() == tmp_path / "hubcache"


def test_hf_home_is_used_to_find_a_repo(hub, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(hub.parent))  # the fixture's cache is <root>/hub
    assert models.resolve_model("org/tiny").directory.name == MAIN


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("org/tiny", True),
        ("Org-1/my_model.v2@main", True),
        (f"org/tiny@{MAIN}", True),
        ("tiny", False),
        ("org/tiny/extra", False),
        ("/org/tiny", False),
        ("org/", False),
        ("../tiny", False),
        ("org/tiny@", False),
        ("org/na me", False),
        ("org/tiny@a/b", False),
    ],
)
def test_what_looks_like_a_repo_id(spec, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert hub_cache.looks_like_repo_id(spec) is expected


def test_a_local_directory_named_like_a_repo_wins(cached, tmp_path, monkeypatch):
    local = tmp_path / "work" / "org" / "tiny"
    local.mkdir(parents=True)
    (local / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path / "work")
    assert not hub_cache.looks_like_repo_id("org/tiny")
    source = models.resolve_model("org/tiny")
    assert source.directory.resolve() == local and source.name == "tiny"


def test_other_unknown_specs_mention_the_hub_form(cached):
    with pytest.raises(
        ModelNotFoundError, match=r"ORG/NAME\[@REV\] from the local Hugging Face cache"
    ):
        models.resolve_model("no-such-model")
