"""The door every HTTP request passes: the API key, the body-size limit, one access-log line
and the request metrics. A plain ASGI wrapper around the FastAPI app, outermost, so that a
refused request never reaches the app and every answer is counted and logged once.

Not here: routes (``serve.app``), queue and time limits (``serve.state``).
"""

from __future__ import annotations

import hmac
import json
import logging
import time

from .metrics import Metrics

OPEN_PATHS = frozenset({"/health"})  # answered without the API key
KNOWN_ROUTES = frozenset(
    {"/health", "/metrics", "/v1/models", "/v1/enhance", "/v1/chat/completions"}
)

log = logging.getLogger("promptx.serve")


class RequestGate:
    def __init__(self, app, *, api_key: str | None, max_body_bytes: int, metrics: Metrics) -> None:
        self.app, self.api_key, self.max_body_bytes, self.metrics = (
            app,
            api_key,
            max_body_bytes,
            metrics,
        )

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started, answer = time.perf_counter(), {"status": 500, "bytes": 0}

        async def counted_send(message):
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
                answer["headers_s"] = time.perf_counter() - started
            elif message["type"] == "http.response.body":
                answer["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            refusal = self._refusal(scope)
            if refusal is None:
                body, too_large = await _read_body(receive, self.max_body_bytes)
                if too_large:
                    refusal = (
                        413,
                        "request_too_large",
                        f"the request body is over the limit of {self.max_body_bytes:,} bytes",
                    )
            if refusal is not None:
                await send_json(counted_send, *refusal)
            else:
                await self.app(scope, _replay(body, receive), counted_send)
        finally:
            self._record(scope, answer, time.perf_counter() - started)

    def _refusal(self, scope) -> tuple[int, str, str] | None:
        if self.api_key is None or scope["path"] in OPEN_PATHS:
            pass
        elif not hmac.compare_digest(_bearer(scope).encode(), self.api_key.encode()):
            return (
                401,
                "invalid_api_key",
                "missing or wrong API key: send 'Authorization: Bearer <key>'",
            )
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            return (
                413,
                "request_too_large",
                f"the request body is over the limit of {self.max_body_bytes:,} bytes",
            )
        return None

    def _record(self, scope, answer: dict, seconds: float) -> None:
        route = scope["path"] if scope["path"] in KNOWN_ROUTES else "other"
        self.metrics.observe_request(route, answer["status"], answer.get("headers_s", seconds))
        client = scope.get("client") or ("-", 0)
        log.info(
            '%s "%s %s" %d %dB %.1fms',
            client[0],
            scope["method"],
            scope["path"],
            answer["status"],
            answer["bytes"],
            seconds * 1000,
        )


def error_body(status: int, kind: str, message: str) -> dict:
    """The server's one error shape (OpenAI's): ``{"error": {"message", "type", "code"}}``."""
    return {"error": {"message": message, "type": kind, "code": status}}


async def send_json(
    send, status: int, kind: str, message: str, headers: dict | None = None
) -> None:
    """An error answer sent straight to the ASGI channel (before the app is reached)."""
    body = json.dumps(error_body(status, kind, message)).encode()
    extra = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive, limit: int) -> tuple[bytes, bool]:
    """The whole body (up to ``limit`` bytes: then the flag says it was more)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", True
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks), False


def _replay(body: bytes, receive):
    """The body already read, then the real channel (which reports the client leaving)."""
    sent = False

    async def replayed():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def _bearer(scope) -> str:
    value = _header(scope, b"authorization") or ""
    return value[7:].strip() if value.lower().startswith("bearer ") else ""
