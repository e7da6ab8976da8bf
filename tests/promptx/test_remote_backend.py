"""The remote backend's pieces that need no server: base URLs, the config file, choosing a
backend, images as data URLs, and what a vision backend is sent (through a scripted backend
that records its messages: the Backend contract is all Enhancer relies on)."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

import promptx
from promptx.backends.base import Backend, GenerationOutput, GenerationRun
from promptx.backends.choice import named_backends, remote_backend
from promptx.backends.openai import OpenAIBackend, normalize_base_url
from promptx.errors import ImageError, InvalidInputError
from promptx.image_url import image_data_url
from promptx.profiles.render import VISION_GUIDANCE


@pytest.mark.parametrize(
    "given, expected",
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434/v1"),
        ("https://api.example.com/openai/v1", "https://api.example.com/openai/v1"),
    ],
)
def test_base_urls(given, expected):
    assert normalize_base_url(given) == expected


@pytest.mark.parametrize("bad", ["", "127.0.0.1:8000", "ftp://host/v1", "http://"])
def test_bad_base_urls_are_refused(bad, monkeypatch):
    monkeypatch.delenv("PROMPTX_BASE_URL", raising=False)
    with pytest.raises(InvalidInputError, match="base URL"):
        OpenAIBackend(bad or None)


def test_environment_gives_url_model_and_key(monkeypatch):
    monkeypatch.setenv("PROMPTX_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PROMPTX_REMOTE_MODEL", "qwen")
    monkeypatch.setenv("PROMPTX_API_KEY", "sk-from-env")
    backend = OpenAIBackend()
    assert backend.base_url == "http://127.0.0.1:9/v1" and backend.model_name == "qwen"
    assert backend._client.headers["authorization"] == "Bearer sk-from-env"
    assert "sk-from-env" not in repr(backend)


def test_named_backends_from_the_config_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "promptx").mkdir()
    (tmp_path / "promptx" / "config.toml").write_text(
        '[backends.farm]\ntype = "openai"\nbase_url = "http://10.0.0.5:8000"\nmodel = "big"\n'
        'api_key_env = "FARM_KEY"\nvision = true\n\n[backends.odd]\ntype = "grpc"\n'
    )
    monkeypatch.setenv("FARM_KEY", "sk-farm")
    assert set(named_backends()) == {"farm", "odd"}
    farm = remote_backend("farm")
    assert farm.base_url == "http://10.0.0.5:8000/v1" and farm.model_name == "big" and farm.vision
    assert farm._client.headers["authorization"] == "Bearer sk-farm"
    assert remote_backend("farm", model="small").model_name == "small"  # arguments win
    enhancer = promptx.Enhancer(backend="farm")
    assert enhancer.backend.base_url == farm.base_url
    with pytest.raises(InvalidInputError, match="type must be 'openai'"):
        remote_backend("odd")
    with pytest.raises(InvalidInputError, match="unknown backend 'nope'.*farm"):
        promptx.Enhancer(backend="nope")
    with pytest.raises(InvalidInputError, match="unknown setting"):
        remote_backend("farm", colour="red")


def test_a_broken_config_file_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "promptx").mkdir()
    (tmp_path / "promptx" / "config.toml").write_text("[backends.farm\n")
    with pytest.raises(InvalidInputError, match="cannot read the promptx config"):
        promptx.Enhancer(backend="farm")


def test_embedded_backend_takes_no_remote_settings():
    with pytest.raises(InvalidInputError, match="remote backend"):
        promptx.Enhancer(backend="embedded", vision=True)


def _decoded(url: str) -> Image.Image:
    assert url.startswith("data:image/jpeg;base64,")
    return Image.open(io.BytesIO(base64.b64decode(url.partition(",")[2])))


def test_image_data_url_shrinks_flattens_and_turns_upright():
    wide = Image.new("RGBA", (3000, 1000), (255, 0, 0, 0))
    picture = _decoded(image_data_url(wide))
    assert picture.size == (1024, 341) and picture.mode == "RGB"
    assert picture.getpixel((10, 10))[1] > 240  # transparent became white
    buffer = io.BytesIO()
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways
    Image.new("RGB", (200, 100), "blue").save(buffer, format="JPEG", exif=exif)
    assert _decoded(image_data_url(buffer.getvalue())).size == (100, 200)
    with pytest.raises(ImageError):
        image_data_url(b"not an image")


class _Recording(Backend):
    """Answers every chat with a fixed text and keeps the messages it was sent."""

    name, model_name = "recording", "recording"
    continues_answers = False

    def __init__(self, vision: bool) -> None:
        self.vision, self.sent = vision, []

    @property
    def context_window(self) -> int:
        return 4096

    def count_prompt_tokens(self, messages) -> int:
        return 10

    def start(self, messages, options) -> GenerationRun:
        self.sent.append(messages)

        def deltas(run):
            text = (
                "The sea in the picture rolls slowly toward the shore while foam spreads across "
                "the sand and the camera holds a steady wide shot at eye level in soft evening "
                "light."
            )
            yield text
            run.output = GenerationOutput(text, 10, 30, "stop", 0.1, 300.0)

        return GenerationRun(deltas)


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (640, 360), "teal").save(buffer, format="PNG")
    return buffer.getvalue()


def test_a_vision_backend_gets_the_image_and_the_vision_guidance():
    backend = _Recording(vision=True)
    result = promptx.Enhancer(backend=backend).enhance(
        "the waves roll in", "i2v", image=_png(), seed=0
    )
    assert not result.fallback, result.reason
    system, *_, last = backend.sent[0]
    assert VISION_GUIDANCE["i2v"] in system["content"]
    assert last["role"] == "user"  # no assistant opening to continue
    text, image = last["content"]
    assert "the waves roll in" in text["text"] and image["type"] == "image_url"
    assert _decoded(image["image_url"]["url"]).size == (640, 360)


def test_a_backend_without_vision_gets_text_only():
    backend = _Recording(vision=False)
    promptx.Enhancer(backend=backend).enhance("the waves roll in", "i2v", image=_png(), seed=0)
    assert all(isinstance(m["content"], str) for m in backend.sent[0])
    assert VISION_GUIDANCE["i2v"] not in backend.sent[0][0]["content"]
    assert "640x360" in backend.sent[0][-1]["content"]
