"""What one ``promptx serve`` process holds: the Enhancer (loaded in the background so that
``/health`` can say 503 until it is ready), the admission queue and the worker threads.

A request is admitted while fewer than ``max_queue`` are waiting or decoding (else
``QueueFull``: 429), runs on a worker thread (concurrent ones meet in the Enhancer's batcher
and decode together), and its caller stops waiting after ``request_timeout_s`` (504; the
decode still finishes, bounded by its token budget). Not here: HTTP.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from ..enhancer import Enhancer
from .metrics import Metrics

log = logging.getLogger("promptx.serve")


@dataclass(frozen=True)
class ServeLimits:
    max_body_bytes: int = 16 * 1024 * 1024
    max_prompt_chars: int = 4000
    max_image_pixels: int = 40_000_000
    request_timeout_s: float = 300.0
    max_queue: int = 32


class NotReady(Exception):
    """The model is still loading, or failed to load."""


class QueueFull(Exception):
    """``max_queue`` requests are already waiting or decoding."""


class RequestTimedOut(Exception):
    """The request took longer than ``request_timeout_s``."""


@dataclass
class ServerState:
    enhancer_options: dict[str, Any]
    limits: ServeLimits = field(default_factory=ServeLimits)
    metrics: Metrics = field(default_factory=Metrics)

    def __post_init__(self) -> None:
        self.enhancer: Enhancer | None = None
        self.load_error: str | None = None
        self._in_flight = 0
        self._lock = threading.Lock()
        self._workers = ThreadPoolExecutor(
            max_workers=self.limits.max_queue, thread_name_prefix="promptx-serve"
        )

    # -- loading ---------------------------------------------------------------------------------
    def load_in_background(self) -> threading.Thread:
        """Load the model on a thread (``/health`` says 503 until it is ready); nothing to do
        when ``load_now`` did it already."""
        thread = threading.Thread(target=self._load, name="promptx-load", daemon=True)
        if self.enhancer is None and self.load_error is None:
            thread.start()
        return thread

    def load_now(self) -> None:
        """Load the model before serving (a worker of several: while it loads, the others
        answer)."""
        self._load()

    def _load(self) -> None:
        try:
            enhancer = Enhancer(quiet=True, **self.enhancer_options)
            backend = enhancer.backend  # loads the model now
            if enhancer.batcher is not None:
                enhancer.batcher.on_batch = self.metrics.observe_batch
            self.model_name = backend.model_name
            self.enhancer = enhancer
            log.info("model %s loaded; serving", self.model_name)
        except Exception as exc:  # noqa: BLE001 - reported by /health and every request
            self.load_error = f"{type(exc).__name__}: {exc}"
            log.error("the model failed to load: %s", self.load_error)

    def ready(self) -> Enhancer:
        """The loaded Enhancer, or ``NotReady`` saying why not."""
        if self.enhancer is not None:
            return self.enhancer
        raise NotReady(
            f"the model failed to load: {self.load_error}"
            if self.load_error
            else "the model is still loading; retry shortly"
        )

    # -- running requests ------------------------------------------------------------------------
    def admit(self) -> None:
        with self._lock:
            if self._in_flight >= self.limits.max_queue:
                raise QueueFull(
                    f"{self._in_flight} requests are already queued (the limit is "
                    f"{self.limits.max_queue}); retry shortly"
                )
            self._in_flight += 1
            self.metrics.set_queue_depth(self._in_flight)

    def release(self) -> None:
        with self._lock:
            self._in_flight -= 1
            self.metrics.set_queue_depth(self._in_flight)

    async def run(self, work: Callable[[], Any]) -> Any:
        """``work()`` on a worker thread, for an admitted request (released when it ends)."""

        def job():
            try:
                return work()
            finally:
                self.release()

        future = asyncio.get_running_loop().run_in_executor(self._workers, job)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.limits.request_timeout_s)
        except asyncio.TimeoutError:
            raise RequestTimedOut(
                f"the request took longer than {self.limits.request_timeout_s:g} s"
            ) from None

    def run_detached(self, work: Callable[[], Any]) -> None:
        """``work()`` on a worker thread for an admitted request that is answered as it runs
        (a stream); released when it ends."""

        def job():
            try:
                work()
            finally:
                self.release()

        self._workers.submit(job)

    def close(self) -> None:
        self._workers.shutdown(wait=True)
