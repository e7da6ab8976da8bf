"""HTTP failure handling shared by remote backends: which answers are errors, which are worth
retrying, how long to wait, and one readable line for each failure.

Messages name the server and quote what it said; they never contain request headers, so an
API key cannot leak into an error or a log. Not here: what is sent (``backends.openai``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Iterator

import httpx

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_WAIT_S = 30.0


class ServerError(Exception):
    """A non-2xx answer: ``retryable`` for 429 and 5xx, with the server's Retry-After."""

    def __init__(self, message: str, status: int, retry_after: float | None) -> None:
        super().__init__(message)
        self.status, self.retry_after = status, retry_after
        self.retryable = status in RETRYABLE_STATUS


def check_response(response: httpx.Response, server: str, *, read: bool = False) -> None:
    """Raise ``ServerError`` for a non-2xx answer (reading a streamed body first when ``read``)."""
    if response.is_success:
        return
    if read:
        response.read()
    raise ServerError(
        f"{server} answered {response.status_code} {_reason(response)}: {server_message(response)}"
        f"{_hint(response.status_code)}",
        response.status_code,
        _retry_after(response),
    )


def server_message(response: httpx.Response) -> str:
    """The server's own words: ``error.message`` (OpenAI, vLLM), ``detail`` (FastAPI), ``error``
    (llama.cpp, Ollama), else the start of the body."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return repr(response.text[:300]) if response.text else "(empty body)"
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return str(error)[:500]
    return json.dumps(body)[:300]


def describe_transport_error(exc: httpx.TransportError, server: str, timeout: httpx.Timeout) -> str:
    """One line for a failure below HTTP: refused, unknown host, timed out, cut off."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return f"cannot connect to {server}: no answer within {timeout.connect:g} s"
    if isinstance(exc, httpx.ReadTimeout):
        return (
            f"{server} sent nothing for {timeout.read:g} s (read timeout); "
            "raise it for slow servers"
        )
    if isinstance(exc, httpx.ConnectError):
        lowered = text.lower()
        if "name or service" in lowered or "nodename" in lowered or "resolution" in lowered:
            return f"cannot connect to {server}: the host name does not resolve ({text})"
        if "refused" in lowered:
            return f"cannot connect to {server}: connection refused (is the server running?)"
        return f"cannot connect to {server}: {text}"
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return f"{server} closed the connection mid-answer ({text})"
    return f"request to {server} failed: {text}"


@dataclass(frozen=True)
class RetryPolicy:
    """``retries`` more attempts after the first, waiting ``backoff_s`` x 2^n, at least the
    server's Retry-After, at most MAX_WAIT_S."""

    retries: int = 3
    backoff_s: float = 0.5

    def attempts(self) -> Iterator["Attempt"]:
        for n in range(self.retries + 1):
            yield Attempt(n, more=n < self.retries, backoff_s=self.backoff_s)


@dataclass(frozen=True)
class Attempt:
    number: int
    more: bool
    backoff_s: float

    def wait(self, retry_after: float | None) -> None:
        delay = max(self.backoff_s * 2**self.number, retry_after or 0.0)
        time.sleep(min(delay, MAX_WAIT_S))


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None


def _reason(response: httpx.Response) -> str:
    return response.reason_phrase or ""


def _hint(status: int) -> str:
    if status in (401, 403):
        return " (check the API key: $PROMPTX_API_KEY or the backend's api_key_env)"
    if status == 404:
        return " (is the base URL right, with its /v1, and the model name one the server lists?)"
    return ""
