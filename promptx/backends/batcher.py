"""Batching concurrent callers: threads that ask one backend for text at the same time have
their requests decoded together by the backend's ``generate_many``.

A caller that finds the backend idle leads: it decodes the queued requests together;
callers arriving meanwhile queue up and go together in the next batch. Where callers have
met lately (one arrived while another was queued or decoding, in the last ``COMPANY_S``),
a leader first waits up to ``gather_s`` (15 ms) for others to join, or less once
``max_batch`` are queued (without the window, eight threads starting at once decoded as a
batch of one, then one of seven); a lone caller on a quiet backend does not wait. One
failing request does not fail the others: a batch that raises is retried one by one.
Not here: streaming (a streamed call decodes alone, through ``Backend.start``).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

from .base import GenerationOptions, GenerationOutput, Messages

GenerateMany = Callable[[list[tuple[Messages, GenerationOptions]]], list[GenerationOutput]]
#: how long an idle backend's first caller waits for others to join its batch, seconds
GATHER_S = 0.015
#: how long after callers last met a leader still waits for company, seconds
COMPANY_S = 30.0


class _Pending:
    def __init__(self, messages: Messages, options: GenerationOptions) -> None:
        self.request = (messages, options)
        self.output: GenerationOutput | None = None
        self.error: BaseException | None = None
        self.done = False


class RequestBatcher:
    def __init__(
        self,
        generate_many: GenerateMany,
        max_batch: int = 8,
        on_batch: Callable[[int], None] | None = None,
        gather_s: float = GATHER_S,
    ) -> None:
        """``on_batch(size)`` is told the size of every batch decoded (metrics)."""
        if max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        self._generate_many, self.max_batch, self.on_batch = generate_many, max_batch, on_batch
        self.gather_s = gather_s
        self._cond = threading.Condition()
        self._queue: list[_Pending] = []
        self._leading = False  # a caller is decoding batches now
        self._met_at = -COMPANY_S  # when a caller last arrived while another was queued or decoding
        self.batch_sizes: deque[int] = deque(maxlen=1024)  # the latest batches' sizes

    def generate(self, messages: Messages, options: GenerationOptions) -> GenerationOutput:
        """The output for one request, decoded in a batch with any concurrent ones."""
        item = _Pending(messages, options)
        with self._cond:
            if self._leading or self._queue:
                self._met_at = time.monotonic()
            self._queue.append(item)
            self._cond.notify_all()  # a leader gathering its batch sees it
            while self._leading and not item.done:
                self._cond.wait()
            if not item.done:
                self._leading = True
        if not item.done:
            self._lead(item)
        if item.error is not None:
            raise item.error
        assert item.output is not None
        return item.output

    def _lead(self, mine: _Pending) -> None:
        """Decode queued batches until this caller's request is done, then hand over."""
        try:
            with self._cond:
                if time.monotonic() - self._met_at < COMPANY_S:
                    self._gather()
            while not mine.done:
                with self._cond:
                    batch, self._queue = (
                        self._queue[: self.max_batch],
                        self._queue[self.max_batch :],
                    )
                if not batch:  # cannot happen: this caller's request is queued
                    raise RuntimeError("request batcher lost a request")
                self._run(batch)
                with self._cond:
                    self._cond.notify_all()
        finally:
            with self._cond:
                self._leading = False
                self._cond.notify_all()

    def _gather(self) -> None:
        """Wait (holding the condition) up to ``gather_s`` for the queue to fill a batch."""
        deadline = time.monotonic() + self.gather_s
        while len(self._queue) < self.max_batch:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(left)

    def _run(self, batch: list[_Pending]) -> None:
        self.batch_sizes.append(len(batch))
        if self.on_batch is not None:
            self.on_batch(len(batch))
        try:
            outputs = self._generate_many([p.request for p in batch])
            if len(outputs) != len(batch):
                raise RuntimeError(
                    f"generate_many returned {len(outputs)} outputs for {len(batch)} requests"
                )
        except Exception as exc:  # noqa: BLE001 - handed to the callers, never swallowed
            if len(batch) > 1:
                for pending in batch:  # isolate the failing request
                    self._run([pending])
                return
            _fail(batch, exc)
            return
        except BaseException as exc:  # an interrupt: every caller of this batch gets it
            _fail(batch, exc)
            raise
        for pending, output in zip(batch, outputs):
            pending.output, pending.done = output, True


def _fail(batch: list[_Pending], exc: BaseException) -> None:
    for pending in batch:
        pending.error, pending.done = exc, True
