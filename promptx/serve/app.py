"""The HTTP API of ``promptx serve`` (FastAPI): ``POST /v1/enhance``, OpenAI-compatible
``POST /v1/chat/completions`` (streaming and not) and ``GET /v1/models``, ``GET /health``,
``GET /metrics``. Every error is a JSON ``{"error": {...}}`` with a 4xx/5xx status.

Not here: the key, body limit and access log (``serve.gate``), loading and queueing
(``serve.state``), the chat translation (``serve.chat``).
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import uuid
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.exceptions import HTTPException

from ..errors import BackendError, ImageError, InvalidInputError, PromptxError, UnknownTargetError
from ..images import load_image_facts
from .chat import Pump, chat_completion, chat_request, chunk_events
from .gate import RequestGate, error_body
from .schemas import ChatBody, EnhanceBody
from .state import NotReady, QueueFull, RequestTimedOut, ServerState

SERVED_ALIAS = "promptx"


def create_app(state: ServerState, *, api_key: str | None = None) -> RequestGate:
    """The ASGI application: the gate around the routes."""

    @asynccontextmanager
    async def lifespan(_app):
        state.load_in_background()
        yield
        state.close()

    app = FastAPI(title="promptx", lifespan=lifespan, docs_url=None, redoc_url=None)
    _add_error_handlers(app)
    _add_routes(app, state)
    return RequestGate(
        app, api_key=api_key, max_body_bytes=state.limits.max_body_bytes, metrics=state.metrics
    )


def _add_routes(app: FastAPI, state: ServerState) -> None:
    @app.get("/health")
    def health():
        if state.enhancer is not None:
            return {"status": "ok", "model": state.model_name}
        status = "error" if state.load_error else "loading"
        return JSONResponse(
            {"status": status, "error": state.load_error},
            status_code=503,
            headers={"Retry-After": "2"},
        )

    @app.get("/metrics")
    def metrics():
        return PlainTextResponse(state.metrics.render(), media_type="text/plain; version=0.0.4")

    @app.get("/v1/models")
    def models():
        backend = state.ready().backend
        entry = {
            "object": "model",
            "created": 0,
            "owned_by": "promptx",
            "prompt_style": backend.prompt_style,
            "context_window": backend.context_window,
        }
        return {
            "object": "list",
            "data": [{"id": backend.model_name, **entry}, {"id": SERVED_ALIAS, **entry}],
        }

    @app.post("/v1/enhance")
    async def enhance(body: EnhanceBody):
        enhancer = state.ready()
        options = body.model_dump(exclude={"prompt", "target", "image"})
        _check_prompt(body.prompt, state.limits.max_prompt_chars)
        if body.image is not None:
            options["image"] = _decoded_image(body.image, state.limits.max_image_pixels)
        state.admit()
        result = await state.run(lambda: enhancer.enhance(body.prompt, body.target, **options))
        state.metrics.observe_generation(
            result.stats.completion_tokens, result.stats.acceptance_length
        )
        return JSONResponse(json.loads(result.model_dump_json()))

    @app.post("/v1/chat/completions")
    async def chat(body: ChatBody):
        enhancer = state.ready()
        backend = enhancer.backend
        if body.model not in (None, "", backend.model_name, SERVED_ALIAS):
            raise _NoSuchModel(body.model, backend.model_name)
        messages, options = chat_request(body, backend, state.limits.max_prompt_chars)
        created, ident = int(time.time()), f"chatcmpl-{uuid.uuid4().hex[:24]}"
        name = body.model or backend.model_name
        if body.stream:
            state.admit()
            try:
                run = backend.start(messages, options)  # a prompt that cannot fit fails here: 400
            except BaseException:
                state.release()
                raise
            events = chunk_events(
                Pump(run, state),
                ident,
                created,
                name,
                state,
                usage=bool((body.stream_options or {}).get("include_usage")),
            )
            return StreamingResponse(events, media_type="text/event-stream")
        state.admit()
        output = await state.run(lambda: enhancer.generate(messages, options))
        state.metrics.observe_generation(output.completion_tokens, output.acceptance_length)
        return chat_completion(output, ident, created, name)


class _NoSuchModel(Exception):
    def __init__(self, asked: str, served: str) -> None:
        super().__init__(f"model {asked!r} is not served here; use {served!r} or {SERVED_ALIAS!r}")


def _check_prompt(prompt: str | None, limit: int) -> None:
    if prompt is not None and len(prompt) > limit:
        raise InvalidInputError(
            f"the prompt is {len(prompt):,} characters; this server takes at most {limit:,}"
        )


def _decoded_image(data: str, max_pixels: int) -> bytes:
    """The image bytes of a base64 string or data URL, checked (``ImageError`` if unusable)."""
    if data.startswith("data:"):
        data = data.partition(",")[2]
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ImageError("image must be the image file in base64 (or a data: URL)") from None
    load_image_facts(raw, max_pixels=max_pixels)
    return raw


_STATUS = (
    (NotReady, 503, "not_ready"),
    (QueueFull, 429, "queue_full"),
    (RequestTimedOut, 504, "timeout"),
    (_NoSuchModel, 404, "model_not_found"),
    (UnknownTargetError, 400, "unknown_target"),
    (ImageError, 400, "invalid_image"),
    (InvalidInputError, 400, "invalid_request"),
    (BackendError, 502, "backend_error"),
    (PromptxError, 500, "server_error"),
)


_FRAMEWORK_KINDS = {404: "not_found", 405: "method_not_allowed", 400: "invalid_json"}
_FRAMEWORK_MESSAGES = {
    404: "no such endpoint; see /v1/enhance, /v1/chat/completions, /v1/models, /health, /metrics",
    400: "the body is not valid JSON (UTF-8, nested at most a few hundred levels)",
}


def _add_error_handlers(app: FastAPI) -> None:
    def answer(status: int, kind: str, message: str) -> JSONResponse:
        headers = {"Retry-After": "1"} if status in (429, 503) else None
        return JSONResponse(error_body(status, kind, message), status_code=status, headers=headers)

    for exc_type, status, kind in _STATUS:
        app.add_exception_handler(
            exc_type, lambda _r, exc, s=status, k=kind: answer(s, k, str(exc))
        )

    @app.exception_handler(HTTPException)
    async def framework(_request: Request, exc: HTTPException):
        """The framework's own errors (no such route, wrong method, a body it cannot parse)."""
        kind = _FRAMEWORK_KINDS.get(
            exc.status_code, "invalid_request" if exc.status_code < 500 else "server_error"
        )
        return answer(
            exc.status_code, kind, _FRAMEWORK_MESSAGES.get(exc.status_code, str(exc.detail))
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError):
        errors = exc.errors()
        if any(e["type"] == "json_invalid" for e in errors):
            return answer(400, "invalid_json", "the body is not valid JSON")
        if any(
            e["loc"] == ("body",) and e["type"] in ("model_attributes_type", "dict_type")
            for e in errors
        ):
            return answer(
                400,
                "invalid_request",
                "the body must be a JSON object (Content-Type: application/json)",
            )
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in errors[:5]
        )
        return answer(400, "invalid_request", problems or "invalid request body")
