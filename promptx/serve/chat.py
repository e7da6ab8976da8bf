"""OpenAI chat completions on promptx's backend: a request body into messages and
``GenerationOptions``, an output into a completion, a run into server-sent events.

The messages go to the model as they are (no profile, clean-up or assessment: that is
``/v1/enhance``); a last assistant message is continued where the backend can. Not here:
routing and errors (``serve.app``).
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import AsyncIterator

from ..backends.base import Backend, GenerationOptions, GenerationOutput, GenerationRun, Messages
from ..errors import InvalidInputError
from ..text.valid_text import require_unicode
from .gate import error_body
from .schemas import ChatBody
from .state import ServerState

DEFAULT_MAX_TOKENS = 256


def chat_request(
    body: ChatBody, backend: Backend, max_chars: int
) -> tuple[Messages, GenerationOptions]:
    messages = [{"role": m.role, "content": _content(m.content, backend)} for m in body.messages]
    for index, message in enumerate(messages):
        if isinstance(message["content"], str):
            require_unicode(f"message {index}", message["content"])
    size = sum(len(json.dumps(m["content"])) for m in messages)
    if size > max_chars + 2 * len(messages) and not backend.vision:
        raise InvalidInputError(
            f"the messages hold {size:,} characters; this server takes at most {max_chars:,}"
        )
    stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop or ())
    options = GenerationOptions(
        temperature=body.temperature,
        top_p=body.top_p,
        top_k=0,
        repetition_penalty=body.repetition_penalty,
        max_new_tokens=body.max_completion_tokens or body.max_tokens or DEFAULT_MAX_TOKENS,
        seed=body.seed,
        stop=stop,
    )
    return messages, options


def _content(content, backend: Backend):
    """A message's content: text (parts joined), or parts with images for a vision backend."""
    if content is None or isinstance(content, str):
        return content or ""
    kinds = {part.get("type") for part in content}
    if kinds - {"text", "image_url"}:
        raise InvalidInputError(
            f"unsupported content part type(s): {', '.join(sorted(map(str, kinds)))}"
        )
    if "image_url" in kinds:
        if not backend.vision:
            raise InvalidInputError(
                f"model {backend.model_name} does not accept images (text parts only)"
            )
        return content
    return "\n".join(str(part.get("text", "")) for part in content)


def chat_completion(output: GenerationOutput, ident: str, created: int, model: str) -> dict:
    return {
        "id": ident,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": output.text},
                "finish_reason": _finish(output.finish_reason),
            }
        ],
        "usage": _usage(output),
    }


class Pump:
    """A run decoding on a worker thread, its deltas handed to the event loop through a queue.
    Started before the response, so that the queue slot is released even if the client leaves
    before the first event; ``leaving`` stops it at the next delta."""

    def __init__(self, run: GenerationRun, state: ServerState) -> None:
        loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue = asyncio.Queue()
        self.leaving = threading.Event()

        def put(item) -> None:
            loop.call_soon_threadsafe(self.queue.put_nowait, item)

        state.run_detached(lambda: _pump(run, self.leaving, put))


async def chunk_events(
    pump: Pump, ident: str, created: int, model: str, state: ServerState, *, usage: bool
) -> AsyncIterator[str]:
    """The pump's deltas as ``data: {chunk}`` events, then ``data: [DONE]``; a client that
    leaves stops the decode (and frees the model) at the next delta."""

    def event(choices: list, **extra) -> str:
        chunk = {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": choices,
            **extra,
        }
        return f"data: {json.dumps(chunk)}\n\n"

    def delta(content: dict, finish: str | None = None) -> str:
        return event([{"index": 0, "delta": content, "finish_reason": finish}])

    try:
        yield delta({"role": "assistant", "content": ""})
        while True:
            kind, value = await pump.queue.get()
            if kind == "delta":
                yield delta({"content": value})
            elif kind == "error":
                yield f"data: {json.dumps(error_body(500, 'backend_error', str(value)))}\n\n"
                return
            else:
                state.metrics.observe_generation(value.completion_tokens, value.acceptance_length)
                yield delta({}, _finish(value.finish_reason))
                if usage:
                    yield event([], usage=_usage(value))
                yield "data: [DONE]\n\n"
                return
    finally:
        pump.leaving.set()


def _pump(run: GenerationRun, leaving: threading.Event, put) -> None:
    """Iterate the run on this thread, handing deltas over until done or the client left."""
    try:
        for delta in run:
            if leaving.is_set():
                return
            put(("delta", delta))
        put(("done", run.output))
    except Exception as exc:  # noqa: BLE001 - reported to the client as an error event
        put(("error", exc))
    finally:
        run.close()


def _finish(reason: str) -> str:
    return "length" if reason == "length" else "stop"


def _usage(output: GenerationOutput) -> dict:
    return {
        "prompt_tokens": output.prompt_tokens,
        "completion_tokens": output.completion_tokens,
        "total_tokens": output.prompt_tokens + output.completion_tokens,
    }
