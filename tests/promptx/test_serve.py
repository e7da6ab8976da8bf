"""``promptx serve`` as a real process on loopback, with promptx's ``OpenAIBackend`` and the
``openai`` package as clients. Greedy decodes in float32, so that batched and lone decodes
give the same text."""

from __future__ import annotations

import base64
import io
import json
import signal
import struct
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from PIL import Image

import promptx
from promptx.backends.base import GenerationOptions
from promptx.backends.openai import OpenAIBackend
from promptx.errors import BackendError
from tests.promptx.servers import ServerProcess, free_port

pytestmark = pytest.mark.slow
pytest.importorskip("fastapi")

KEY = "test-key-not-a-secret"
GREEDY = dict(seed=0, temperature=0.0)
PROMPTS = [
    "a red fox in snow",
    "a lighthouse at dusk",
    "two blue cups on a shelf",
    "an old tram in the rain",
    "a bowl of ramen",
    "a girl flying a kite",
    "a castle on a hill",
    "three white ducks on a pond",
]


@pytest.fixture(scope="module")
def server(model_dir):
    process = ServerProcess(
        "--dtype",
        "float32",
        "--max-body-bytes",
        "2000000",
        "--max-prompt-chars",
        "2000",
        "--max-image-pixels",
        "4000000",
    ).start()
    yield process
    assert process.stop() == 0, process.output()


@pytest.fixture(scope="module")
def remote(server):
    return promptx.Enhancer(base_url=server.url, quiet=True)


def _png(width=96, height=64, color=(40, 90, 200)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def _bomb_png(side=60_000) -> bytes:
    """A valid PNG header claiming side x side pixels, with almost no data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    data = zlib.compress(b"\0" * 16)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )


def test_health_models_and_metrics(server):
    assert httpx.get(server.url + "/health").json()["status"] == "ok"
    models = httpx.get(server.url + "/v1/models").json()["data"]
    ids = [m["id"] for m in models]
    assert "promptx" in ids and "smollm2-135m-instruct" in ids
    assert models[0]["prompt_style"] == "short"
    text = httpx.get(server.url + "/metrics").text
    assert 'promptx_requests_total{route="/health",status="200"}' in text
    assert "promptx_queue_depth 0" in text and "promptx_batch_size_count" in text


def test_openai_backend_enhances_through_the_server(remote):
    result = remote.enhance("a red fox in snow", "image", **GREEDY)
    assert not result.fallback, result.reason
    assert result.stats.backend == "openai" and result.stats.model == "smollm2-135m-instruct"
    assert "fox" in result.text.lower() and result.assessment.passed
    assert (
        result.stats.prompt_tokens < 200
    )  # the server said its model is tuned: short prompt style


def test_openai_backend_streams(remote):
    stream = remote.stream("a lighthouse at dusk", "image", **GREEDY)
    deltas = list(stream)
    assert len(deltas) > 5 and stream.result is not None
    assert "lighthouse" in "".join(deltas).lower()
    assert stream.result.original_prompt == "a lighthouse at dusk"


def test_image_to_video_with_an_image(remote, server):
    result = remote.enhance("the water ripples gently", "i2v", image=_png(), **GREEDY)
    assert result.task == "i2v" and result.text and result.stats.backend == "openai"
    seeing = promptx.Enhancer(base_url=server.url, vision=True, quiet=True)
    with pytest.raises(BackendError, match="does not accept images"):
        seeing.enhance("the water ripples gently", "i2v", image=_png(), **GREEDY)


def test_openai_package_as_a_client(server):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused")
    chat = [{"role": "user", "content": "Describe a teapot in one sentence."}]
    done = client.chat.completions.create(
        model="promptx", messages=chat, max_tokens=24, temperature=0
    )
    text = done.choices[0].message.content
    assert text and done.usage.completion_tokens > 0
    parts = [
        c.choices[0].delta.content or ""
        for c in client.chat.completions.create(
            model="promptx", messages=chat, max_tokens=24, temperature=0, stream=True
        )
        if c.choices
    ]
    assert "".join(parts) == text
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-4o", messages=chat, max_tokens=4)


def test_a_client_that_leaves_a_stream_frees_its_place(server):
    body = {
        "messages": [{"role": "user", "content": "Write a long story about a ship."}],
        "max_tokens": 400,
        "temperature": 0,
        "stream": True,
    }
    with httpx.stream(
        "POST", server.url + "/v1/chat/completions", json=body, timeout=120
    ) as response:
        first = next(response.iter_lines())
        assert first.startswith("data:")
    _wait_for_queue(server, 0, headers={})  # the decode stopped at its next token


def test_concurrent_enhance_requests_are_neither_lost_nor_crossed(server, model_dir):
    prompts = PROMPTS + PROMPTS[::-1]  # 16 requests, each text twice

    def post(prompt):
        body = {
            "prompt": prompt,
            "target": "image",
            "max_new_tokens": 40,
            "strength": "full",
            **GREEDY,
        }
        return httpx.post(server.url + "/v1/enhance", json=body, timeout=600)

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(post, prompts))
    assert [a.status_code for a in answers] == [200] * 16
    results = [a.json() for a in answers]
    assert [r["original_prompt"] for r in results] == prompts
    local = promptx.Enhancer(dtype="float32", quiet=True, strength="full")
    for prompt in PROMPTS[:3]:
        alone = local.enhance(prompt, "image", max_new_tokens=40, **GREEDY)
        assert {r["text"] for r in results if r["original_prompt"] == prompt} == {alone.text}
    batches = httpx.get(server.url + "/metrics").text
    assert "promptx_batch_size_count" in batches


@pytest.mark.parametrize(
    "body, status, kind",
    [
        (b"{not json", 400, "invalid_json"),
        (b'["a list"]', 400, "invalid_request"),
        (json.dumps({"target": "video", "seed": -1}).encode(), 400, "invalid_request"),
        (
            json.dumps({"prompt": "a cat", "target": "no-such-target"}).encode(),
            400,
            "unknown_target",
        ),
        (json.dumps({"prompt": "x" * 2500}).encode(), 400, "invalid_request"),
        (
            json.dumps(
                {
                    "prompt": "a cat",
                    "target": "i2v",
                    "image": base64.b64encode(b"not an image").decode(),
                }
            ).encode(),
            400,
            "invalid_image",
        ),
        (
            json.dumps(
                {
                    "prompt": "a cat",
                    "target": "i2v",
                    "image": base64.b64encode(_bomb_png()).decode(),
                }
            ).encode(),
            400,
            "invalid_image",
        ),
        (
            json.dumps({"prompt": "a cat", "target": "i2v", "image": "%%%"}).encode(),
            400,
            "invalid_image",
        ),
        (b'{"prompt": "' + b"a" * 2_100_000 + b'"}', 413, "request_too_large"),
    ],
)
def test_bad_enhance_requests_get_a_json_error_and_the_server_keeps_serving(
    server, body, status, kind
):
    answer = httpx.post(
        server.url + "/v1/enhance", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == status, answer.text
    assert answer.json()["error"]["type"] == kind
    assert httpx.get(server.url + "/health").status_code == 200


def test_bad_chat_requests(server):
    url = server.url + "/v1/chat/completions"
    assert httpx.post(url, json={"model": "promptx"}).status_code == 400  # no messages
    assert (
        httpx.post(url, json={"messages": [{"role": "robot", "content": "x"}]}).status_code == 400
    )
    image = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    answer = httpx.post(url, json={"messages": [{"role": "user", "content": image}]})
    assert (
        answer.status_code == 400 and "does not accept images" in answer.json()["error"]["message"]
    )


def test_nothing_listening_is_a_backend_error():
    backend = OpenAIBackend(
        f"http://127.0.0.1:{free_port()}",
        model="m",
        retries=1,
        backoff_s=0.05,
        api_key="sk-very-secret",
    )
    with pytest.raises(BackendError, match="connection refused") as caught:
        promptx.Enhancer(backend=backend).enhance("a cat", "image", **GREEDY)
    assert "sk-very-secret" not in str(caught.value) and "sk-very-secret" not in repr(backend)


@pytest.fixture(scope="module")
def keyed_server(model_dir):
    process = ServerProcess("--dtype", "float32", "--api-key", KEY, "--max-queue", "1").start()
    yield process
    process.kill()


def test_api_key_is_required_when_set(keyed_server):
    assert httpx.get(keyed_server.url + "/health").status_code == 200  # open, for load balancers
    assert httpx.get(keyed_server.url + "/v1/models").status_code == 401
    wrong = httpx.get(keyed_server.url + "/v1/models", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["error"]["type"] == "invalid_api_key"
    with pytest.raises(BackendError, match="401"):
        promptx.Enhancer(base_url=keyed_server.url, quiet=True).enhance("a cat", "image")
    good = OpenAIBackend(keyed_server.url, api_key=KEY)
    assert good.model_name == "smollm2-135m-instruct"


def test_a_full_queue_answers_429_and_the_backend_retries(keyed_server):
    backend = OpenAIBackend(keyed_server.url, api_key=KEY, concurrency=3, retries=8, backoff_s=0.2)
    chat = [{"role": "user", "content": "Name a colour."}]
    outputs = backend.generate_many(
        [(chat, GenerationOptions(temperature=0, max_new_tokens=8))] * 3
    )
    assert len(outputs) == 3 and len({o.text for o in outputs}) == 1 and outputs[0].text
    metrics = httpx.get(
        keyed_server.url + "/metrics", headers={"Authorization": f"Bearer {KEY}"}
    ).text
    assert 'route="/v1/chat/completions",status="429"' in metrics


def test_sigterm_finishes_the_request_in_flight(keyed_server):
    answer = {}

    def ask():
        body = {
            "messages": [{"role": "user", "content": "Describe a garden."}],
            "max_tokens": 48,
            "temperature": 0,
        }
        answer["response"] = httpx.post(
            keyed_server.url + "/v1/chat/completions",
            json=body,
            timeout=300,
            headers={"Authorization": f"Bearer {KEY}"},
        )

    asker = threading.Thread(target=ask)
    asker.start()
    _wait_for_queue(keyed_server, 1)
    keyed_server.signal(signal.SIGTERM)
    asker.join(300)
    assert (
        answer["response"].status_code == 200
        and answer["response"].json()["choices"][0]["message"]["content"]
    )
    assert keyed_server.process.wait(60) == 0


def test_server_killed_mid_request_is_a_backend_error(model_dir):
    process = ServerProcess("--dtype", "float32").start()
    try:
        backend = OpenAIBackend(process.url, retries=1, backoff_s=0.05)
        run = backend.start(
            [{"role": "user", "content": "Write a long story about a ship."}],
            GenerationOptions(temperature=0, max_new_tokens=400),
        )
        deltas = iter(run)
        assert next(deltas)
        process.kill()
        started = time.monotonic()
        with pytest.raises(BackendError):
            for _ in deltas:
                pass
        assert time.monotonic() - started < 30
    finally:
        process.kill()


def _wait_for_queue(server, depth: int, timeout: float = 60, headers: dict | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        auth = {"Authorization": f"Bearer {KEY}"} if headers is None else headers
        text = httpx.get(server.url + "/metrics", headers=auth).text
        if f"promptx_queue_depth {depth}" in text:
            return
        time.sleep(0.05)
    raise AssertionError(f"the queue never held {depth} requests")


def test_enhance_takes_a_strength(server):
    answers = {}
    for strength in ("light", "medium", "full"):
        body = {"prompt": "a red fox in snow", "target": "video", "strength": strength, **GREEDY}
        answer = httpx.post(server.url + "/v1/enhance", json=body, timeout=600)
        assert answer.status_code == 200, answer.text
        answers[strength] = answer.json()
        assert answers[strength]["strength"] == strength
    assert (
        answers["light"]["added"] and answers["medium"]["added"] and answers["full"]["added"] == {}
    )
    assert answers["light"]["text"].startswith("A red fox in snow.")
    default = httpx.post(
        server.url + "/v1/enhance", json={"prompt": "a red fox in snow", **GREEDY}, timeout=600
    )
    assert default.json()["strength"] == "light"
    bad = httpx.post(server.url + "/v1/enhance", json={"prompt": "a fox", "strength": "heavy"})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request"
