"""``promptx enhance`` through a running ``promptx serve`` (``--server URL`` or
``$PROMPTX_SERVER``): one prompt sent to ``POST /v1/enhance``, so that the command imports neither
torch nor the engine and loads no model. The answer is the same ``EnhancedPrompt`` an in-process run
returns, and the server's error answers become the same typed errors (so the same one line and exit
status). A server that does not answer (refused, down, timed out, still loading, busy, not a
promptx server) is ``Unavailable``: the command then enhances in its own process.

The key the server asks for (``promptx serve --api-key``) is read from
``$PROMPTX_SERVE_API_KEY`` and sent as ``Authorization: Bearer``; it is never printed.

Not here: which options can be forwarded and the printing (``cli.main``), the server (``serve``).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from ..errors import BackendError, ImageError, InvalidInputError, PromptxError, UnknownTargetError

SERVER_ENV, KEY_ENV = "PROMPTX_SERVER", "PROMPTX_SERVE_API_KEY"
HEALTH_TIMEOUT = httpx.Timeout(1.0, connect=0.5)  # a refused loopback port fails at once
REQUEST_TIMEOUT = httpx.Timeout(
    600.0, connect=2.0
)  # the server's own --request-timeout (300 s) comes first
NOT_NOW = frozenset({429, 503})  # busy or loading: enhance here instead

# the server's error types (serve.app) -> the error an in-process run raises with the same message
_ERRORS = {
    "unknown_target": UnknownTargetError,
    "invalid_image": ImageError,
    "invalid_request": InvalidInputError,
    "backend_error": BackendError,
    "server_error": PromptxError,
}


class Unavailable(Exception):
    """No promptx server answers at the URL (the message says why)."""


class ServerResult:
    """The server's ``EnhancedPrompt`` as its JSON, read without importing the result model (that
    imports the faithfulness check: a fifth of the command's time). ``model_dump_json`` writes
    the JSON as the model writes itself (pydantic's own writer, the server's field order)."""

    def __init__(self, data: dict) -> None:
        self.data = data
        self.text, self.fallback, self.skipped, self.reason = (
            data["text"],
            data["fallback"],
            data["skipped"],
            data.get("reason"),
        )

    @staticmethod
    def readable(data: object) -> bool:
        """Whether ``data`` looks like an ``EnhancedPrompt`` (what the printing reads is there)."""
        return (
            isinstance(data, dict)
            and isinstance(data.get("text"), str)
            and isinstance(data.get("stats"), dict)
            and isinstance(data.get("fallback"), bool)
            and isinstance(data.get("skipped"), bool)
            and isinstance(data.get("reason"), (str, type(None)))
        )

    def model_dump_json(self, *, indent: int | None = None) -> str:
        from pydantic_core import to_json

        return to_json(self.data, indent=indent).decode()


def server_url(value: str) -> str:
    """``value`` as the server's root URL: ``http://`` added to a bare ``HOST:PORT``, a trailing
    ``/`` or ``/v1`` dropped (the ``--base-url`` form is fine). Anything else is an
    ``InvalidInputError``."""
    url = value.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    url = url.removesuffix("/v1").rstrip("/")
    parts = urlsplit(url)
    try:
        port_ok = parts.port != 0  # urlsplit raises on a port that is not a number
    except ValueError:
        port_ok = False
    if (
        not port_ok
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
    ):
        raise InvalidInputError(
            f"--server / ${SERVER_ENV}: {value!r} is not a server URL such as http://127.0.0.1:8000"
        )
    return url


def enhance_on_server(url: str, prompt: str, target: str, options: dict) -> ServerResult:
    """The result the server at ``url`` makes of ``prompt``. ``options``: the
    ``/v1/enhance`` fields (None values are not sent; ``image`` a file path, checked here as an
    in-process run checks it). Raises ``Unavailable`` or the typed error of the server's answer."""
    body = {"prompt": prompt, "target": target}
    body.update({k: v for k, v in options.items() if v is not None and v is not False})
    if body.get("image") is not None:
        body["image"] = _image_base64(body["image"])
    key = os.environ.get(KEY_ENV)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    # plain http needs no certificates: skip loading them (tens of ms of a ~0.5 s command)
    with httpx.Client(base_url=url, headers=headers, verify=url.startswith("https://")) as client:
        _check_health(client, url)
        try:
            response = client.post("/v1/enhance", json=body, timeout=REQUEST_TIMEOUT)
        except httpx.ReadTimeout:
            raise BackendError(f"{url} sent no answer within {REQUEST_TIMEOUT.read:g} s") from None
        except httpx.TransportError as exc:  # gone between /health and the request, or mid-answer
            raise Unavailable(f"the request failed: {type(exc).__name__}") from None
    if response.status_code in NOT_NOW:
        raise Unavailable(f"it answered {response.status_code} ({_error(response)[1]})")
    if not response.is_success:
        raise _typed_error(response, url)
    try:
        data = response.json()
    except ValueError:
        data = None
    if not ServerResult.readable(data):
        raise BackendError(
            f"{url} answered /v1/enhance with something that is not a promptx result "
            "(a different promptx version?)"
        )
    return ServerResult(data)


def _check_health(client: httpx.Client, url: str) -> None:
    """``Unavailable`` unless ``GET /health`` answers promptx's ``{"status": "ok"}`` soon."""
    try:
        response = client.get("/health", timeout=HEALTH_TIMEOUT)
    except httpx.TransportError as exc:
        raise Unavailable(_transport_reason(exc)) from None
    try:
        status = response.json().get("status")
    except (ValueError, AttributeError):
        status = None
    if response.status_code != 200 or status != "ok":
        what = f"status {status}" if status else "not promptx serve"
        raise Unavailable(f"/health answered {response.status_code} ({what})")


def _transport_reason(exc: httpx.TransportError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "no answer in time"
    if isinstance(exc, httpx.ConnectError) and "refused" in str(exc).lower():
        return "connection refused"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _image_base64(path: str | os.PathLike) -> str:
    """The image file in base64, after the checks an in-process run makes (same errors)."""
    from ..images import load_image_facts

    load_image_facts(path)
    try:
        return base64.b64encode(Path(path).read_bytes()).decode("ascii")
    except OSError as exc:
        raise ImageError(f"cannot read the image {path}: {exc.strerror or exc}") from None


def _error(response: httpx.Response) -> tuple[str | None, str]:
    """(the server's error type, its message) from the ``{"error": {...}}`` body, or (None, the
    start of the body)."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        kind = error.get("type")
        return (kind if isinstance(kind, str) else None), error["message"]
    return None, (response.text[:200].strip() or response.reason_phrase or "no message")


def _typed_error(response: httpx.Response, url: str) -> PromptxError:
    """What an in-process run would raise for the server's error answer: its error type with the
    server's message (the message in-process), else a ``BackendError`` naming the server."""
    kind, message = _error(response)
    if kind in _ERRORS:
        return _ERRORS[kind](message)
    if response.status_code in (401, 403):
        return BackendError(
            f"{url} refused the request ({message}); set ${KEY_ENV} to the server's --api-key"
        )
    return BackendError(f"{url} answered {response.status_code}: {message}")
