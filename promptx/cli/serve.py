"""``promptx serve``: the HTTP server (``promptx.serve``) under uvicorn.

Binds 127.0.0.1 unless told otherwise, and refuses any other address without an API key.
SIGTERM or Ctrl-C finish the requests in flight, then exit. Not here: the routes.
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import sys
from pathlib import Path

import click

from ..errors import InvalidInputError, MissingExtraError
from .common import MODEL_HELP


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--api-key",
    envvar="PROMPTX_SERVE_API_KEY",
    help="Bearer key every request must send (env "
    "PROMPTX_SERVE_API_KEY); required to bind anything but a loopback address.",
)
@click.option("--model", help=MODEL_HELP)
@click.option(
    "--dtype",
    default="auto",
    show_default=True,
    help="Model precision (see promptx enhance --help).",
)
@click.option(
    "--drafter",
    type=click.Path(path_type=Path),
    help="Drafter checkpoint for speculative decoding.",
)
@click.option("--no-speculative", is_flag=True, help="Decode without speculation.")
@click.option(
    "--templates-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Extra template directory.",
)
@click.option(
    "--max-queue",
    type=click.IntRange(1, 1024),
    default=32,
    show_default=True,
    help="Requests waiting or decoding at once; more get 429.",
)
@click.option(
    "--request-timeout",
    type=click.FloatRange(min=0.1),
    default=300.0,
    show_default=True,
    help="Seconds a client waits for one request before a 504.",
)
@click.option(
    "--max-body-bytes", type=click.IntRange(min=1024), default=16 * 1024 * 1024, show_default=True
)
@click.option("--max-prompt-chars", type=click.IntRange(min=1), default=4000, show_default=True)
@click.option(
    "--max-image-pixels", type=click.IntRange(min=1), default=40_000_000, show_default=True
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Server processes sharing the port, each with its own model (memory x N): concurrent "
    "requests run in parallel, up to one per CPU core.",
)
def serve_command(
    host,
    port,
    api_key,
    model,
    dtype,
    drafter,
    no_speculative,
    templates_dir,
    max_queue,
    request_timeout,
    max_body_bytes,
    max_prompt_chars,
    max_image_pixels,
    workers,
) -> None:
    """Serve the enhancer over HTTP: /v1/enhance, OpenAI-compatible /v1/chat/completions, /health,
    /metrics."""
    try:
        import uvicorn

        from ..serve import ServeLimits, ServerState, create_app
    except ImportError:
        raise MissingExtraError("promptx serve", "serve") from None
    if not _is_loopback(host) and not api_key:
        raise InvalidInputError(
            f"binding {host} exposes the model to the network: set --api-key "
            "(or $PROMPTX_SERVE_API_KEY), or bind 127.0.0.1"
        )
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s"
    )
    limits = ServeLimits(
        max_body_bytes=max_body_bytes,
        max_prompt_chars=max_prompt_chars,
        max_image_pixels=max_image_pixels,
        request_timeout_s=request_timeout,
        max_queue=max_queue,
    )
    options = dict(
        model=model,
        dtype=None if dtype == "auto" else dtype,
        drafter=drafter,
        speculative=not no_speculative,
        templates_dir=templates_dir,
    )

    def make_app():
        state = ServerState(options, limits)
        if workers > 1:  # a worker accepts connections once its model is loaded
            state.load_now()
        return create_app(state, api_key=api_key)

    config = dict(log_level="warning", access_log=False, timeout_graceful_shutdown=None)
    loading = (
        f"{workers} workers, each answering once its model is loaded"
        if workers > 1
        else "the model loads in the background; /health says when"
    )
    click.echo(f"promptx serve: http://{host}:{port} ({loading})", err=True)
    # uvicorn finishes the requests in flight on SIGTERM/SIGINT, then raises the signal again
    # under the handler found at start: this one, so that a clean shutdown exits 0
    if workers == 1:
        signal.signal(signal.SIGTERM, _exit_cleanly)
        uvicorn.run(make_app(), host=host, port=port, **config)
        return
    from ..serve.workers import bind, serve_workers

    def run_one(app, sock):
        signal.signal(signal.SIGTERM, _exit_cleanly)
        uvicorn.Server(uvicorn.Config(app, **config)).run(sockets=[sock])

    sys.exit(serve_workers(make_app, bind(host, port), workers, run_one))


def _exit_cleanly(_signum, _frame) -> None:
    raise SystemExit(0)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
