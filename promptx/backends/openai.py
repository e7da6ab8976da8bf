"""A backend that asks an OpenAI-compatible server (vLLM, SGLang, llama.cpp's server, Ollama,
``promptx serve``, OpenAI itself) for text through ``/v1/chat/completions``.

Streams through server-sent events; retries connection failures, 429 and 5xx answers with
backoff; turns every failure into a ``BackendError`` that names the server and quotes its
message (never the API key). With ``vision=True`` the server is taken to accept images, and
``Enhancer`` sends i2v/i2i images to it as ``image_url`` parts.

Not here: HTTP status and error-body handling (``backends.http``), what is asked
(``Enhancer`` renders the messages), decoding constraints (a remote model's logits are
out of reach: only the assessment applies).
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import httpx

from ..errors import BackendError, InvalidInputError
from .base import Backend, GenerationOptions, GenerationOutput, GenerationRun, Messages
from .http import RetryPolicy, ServerError, check_response, describe_transport_error

DEFAULT_CONTEXT_WINDOW = 8192
DEFAULT_CONCURRENCY = 8
ENV_BASE_URL, ENV_API_KEY, ENV_MODEL = "PROMPTX_BASE_URL", "PROMPTX_API_KEY", "PROMPTX_REMOTE_MODEL"


class OpenAIBackend(Backend):
    """Chat completions from a server at ``base_url`` (e.g. ``http://127.0.0.1:8000/v1``)."""

    name = "openai"
    batches = True  # generate_many sends its requests concurrently: the server batches them
    continues_answers = False

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        *,
        api_key: str | None = None,
        api_key_env: str = ENV_API_KEY,
        vision: bool = False,
        connect_timeout: float = 5.0,
        read_timeout: float = 120.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        context_window: int | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        self.base_url = normalize_base_url(base_url or os.environ.get(ENV_BASE_URL))
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env) or None
        self._model = model or os.environ.get(ENV_MODEL) or None
        self.vision = vision
        self.retry = RetryPolicy(retries=retries, backoff_s=backoff_s)
        self._context_window = context_window
        self.concurrency = max(1, concurrency)
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(read_timeout, connect=connect_timeout),
        )
        self._listing: dict | None = None

    def __repr__(self) -> str:  # never the key
        return (
            f"OpenAIBackend(base_url={self.base_url!r}, model={self._model!r}, "
            f"vision={self.vision})"
        )

    # -- what Enhancer reads ---------------------------------------------------------------------
    @property
    def model_name(self) -> str:
        """The model asked for: the one given, else the first the server lists."""
        if self._model is None:
            self._model = self._model_entry()["id"]
        return self._model

    @property
    def prompt_style(self) -> str:
        """ "short" when the server says its model is tuned for promptx (``promptx serve`` does)."""
        return self._model_entry().get("prompt_style", "full")

    @property
    def context_window(self) -> int:
        if self._context_window is not None:
            return self._context_window
        entry = self._model_entry()
        return int(
            entry.get("context_window") or entry.get("max_model_len") or DEFAULT_CONTEXT_WINDOW
        )

    def count_prompt_tokens(self, messages: Messages) -> int:
        """An estimate (the server's tokenizer is not here): about four characters a token."""
        return sum(len(_text_of(m["content"])) for m in messages) // 4 + 4 * len(messages)

    def models(self) -> list[dict]:
        """The server's ``/v1/models`` entries."""
        data = self._request_json("GET", "/models").get("data")
        if not isinstance(data, list):
            raise BackendError(f"{self.base_url} answered /models without a 'data' list")
        return [entry for entry in data if isinstance(entry, dict) and entry.get("id")]

    def _model_entry(self) -> dict:
        """The listing of the model in use (``{"id": name}`` where the server lists none by that
        name, or lists nothing while a name was given)."""
        if self._listing is None:
            try:
                entries = self.models()
            except BackendError:
                if self._model is None:
                    raise
                entries = []
            if not entries and self._model is not None:
                self._listing = {"id": self._model}
                return self._listing
            if not entries:
                raise BackendError(f"{self.base_url} lists no models; name one with --remote-model")
            wanted = self._model or entries[0]["id"]
            self._listing = next((e for e in entries if e["id"] == wanted), {"id": wanted})
        return self._listing

    # -- generation ------------------------------------------------------------------------------
    def start(self, messages: Messages, options: GenerationOptions) -> GenerationRun:
        body = self._body(messages, options, stream=True)
        return GenerationRun(lambda run: self._stream(run, body))

    def generate_many(
        self, requests: list[tuple[Messages, GenerationOptions]]
    ) -> list[GenerationOutput]:
        """Every request's output, in order; up to ``concurrency`` requests in flight at once."""
        if len(requests) == 1:
            return [self._complete(*requests[0])]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(lambda r: self._complete(*r), requests))

    def _body(self, messages: Messages, options: GenerationOptions, *, stream: bool) -> dict:
        if messages and messages[-1]["role"] == "assistant":
            raise InvalidInputError(
                "an OpenAI-compatible server cannot be asked to continue an answer"
            )
        body = {
            "model": self.model_name,
            "messages": messages,
            "temperature": options.temperature,
            "top_p": options.top_p,
            "max_tokens": options.max_new_tokens,
            "stream": stream,
        }
        if options.seed is not None:
            body["seed"] = options.seed
        if options.stop:
            body["stop"] = list(options.stop)[:4]  # OpenAI's limit
        if stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def _complete(self, messages: Messages, options: GenerationOptions) -> GenerationOutput:
        started = time.perf_counter()
        answer = self._request_json(
            "POST", "/chat/completions", json=self._body(messages, options, stream=False)
        )
        try:
            choice = answer["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise BackendError(
                f"{self.base_url} sent a completion without choices[0].message.content"
            ) from None
        return _output(
            text,
            answer.get("usage"),
            choice.get("finish_reason"),
            time.perf_counter() - started,
            messages,
            self,
        )

    def _stream(self, run: GenerationRun, body: dict) -> Iterator[str]:
        started, parts = time.perf_counter(), []
        usage, finish = None, None
        for event in self._events(body):
            usage = event.get("usage") or usage
            for choice in event.get("choices") or ():
                delta = (choice.get("delta") or {}).get("content")
                finish = choice.get("finish_reason") or finish
                if delta:
                    parts.append(delta)
                    yield delta
        run.output = _output(
            "".join(parts), usage, finish, time.perf_counter() - started, body["messages"], self
        )

    def _events(self, body: dict) -> Iterator[dict]:
        """The JSON events of one streamed completion, through ``data: [DONE]``; retried while
        nothing has arrived yet."""
        for attempt in self.retry.attempts():
            try:
                with self._client.stream("POST", "/chat/completions", json=body) as response:
                    check_response(response, self.base_url, read=True)
                    yield from _sse_events(response, self.base_url)
                    return
            except ServerError as exc:
                if not (exc.retryable and attempt.more):
                    raise BackendError(str(exc)) from None
                attempt.wait(exc.retry_after)
            except httpx.TransportError as exc:
                if not (attempt.more and _before_any_answer(exc)):
                    raise BackendError(
                        describe_transport_error(exc, self.base_url, self._client.timeout)
                    ) from None
                attempt.wait(None)

    def _request_json(self, method: str, path: str, **kwargs) -> dict:
        for attempt in self.retry.attempts():
            try:
                response = self._client.request(method, path, **kwargs)
                check_response(response, self.base_url)
                return _json_of(response, self.base_url)
            except ServerError as exc:
                if not (exc.retryable and attempt.more):
                    raise BackendError(str(exc)) from None
                attempt.wait(exc.retry_after)
            except httpx.TransportError as exc:
                if not attempt.more:
                    raise BackendError(
                        describe_transport_error(exc, self.base_url, self._client.timeout)
                    ) from None
                attempt.wait(None)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self._client.close()


def normalize_base_url(url: str | None) -> str:
    """``http://host:port`` -> ``http://host:port/v1``; a URL with a path is kept as given."""
    if not url:
        raise InvalidInputError(
            f"the openai backend needs a base URL: --base-url or ${ENV_BASE_URL}"
        )
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise InvalidInputError(f"base URL must be http(s)://host[:port][/path], not {url!r}")
    url = url.rstrip("/")
    return url if parsed.path.strip("/") else url + "/v1"


def _sse_events(response: httpx.Response, server: str) -> Iterator[dict]:
    """Parse ``data:`` lines until ``[DONE]``; a stream that ends before it was cut off."""
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue  # comments, event names, keep-alives
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except json.JSONDecodeError:
            raise BackendError(f"{server} sent a malformed stream event: {data[:200]!r}") from None
        if isinstance(event, dict) and "error" in event:
            raise BackendError(f"{server} failed mid-stream: {_message_of(event['error'])}")
        if isinstance(event, dict):
            yield event
    raise BackendError(
        f"{server} ended the stream before [DONE] (connection cut or server stopped)"
    )


def _json_of(response: httpx.Response, server: str) -> dict:
    try:
        answer = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BackendError(
            f"{server} answered {response.request.url.path} with something that is not JSON: "
            f"{response.text[:200]!r}"
        ) from None
    if not isinstance(answer, dict):
        raise BackendError(
            f"{server} answered {response.request.url.path} with JSON that is not an object"
        )
    return answer


def _message_of(error: object) -> str:
    return str(error.get("message", error)) if isinstance(error, dict) else str(error)


def _before_any_answer(exc: httpx.TransportError) -> bool:
    """True for failures that happen before the server could have started an answer."""
    return isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content or () if isinstance(part, dict))


def _output(
    text: str,
    usage: dict | None,
    finish: str | None,
    latency: float,
    messages: Messages,
    backend: OpenAIBackend,
) -> GenerationOutput:
    usage = usage or {}
    estimate = max(1, len(text) // 4) if text else 0
    completion = int(usage.get("completion_tokens") or estimate)
    prompt = int(usage.get("prompt_tokens") or backend.count_prompt_tokens(messages))
    return GenerationOutput(
        text=text,
        prompt_tokens=prompt,
        completion_tokens=completion,
        finish_reason=finish or "stop",
        latency_s=latency,
        tokens_per_s=completion / latency if latency > 0 else 0.0,
    )
