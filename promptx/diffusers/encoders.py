"""A pipeline's own tokenizer as the profile's budget counter, and what its text encoder keeps.

``pipeline_encoder(pipe, encoder)`` picks, among ``pipe.tokenizer``, ``pipe.tokenizer_2``, ...,
the one whose family matches a profile's ``length.encoder`` ("clip-l" -> the first CLIP
tokenizer, "t5-xxl" -> SD3's ``tokenizer_3`` or FLUX's ``tokenizer_2``, "umt5-xxl" -> Wan's
``tokenizer``, "llama" -> HunyuanVideo's ``tokenizer``). The family is read from the class
names of the tokenizer and of its text encoder (``text_encoder_N``) and the encoder's config.
When none matches (or the profile names no encoder), the tokenizer that keeps the longest
text is used: the main encoder of pipelines that pair a long one with CLIP (SD3, FLUX, Kontext).

What the encoder keeps of a prompt (``max_tokens``, special tokens excluded, as the counters
count): a CLIP tokenizer its ``model_max_length`` (77 -> 75); another the pipeline's
``max_sequence_length`` (the call's, else the ``__call__`` default; LTX-Video 128 -> 127, SD3
256 -> 255, Wan and FLUX 512 -> 511), less the template a pipeline wraps the prompt in where
that template's end or its system message is part of the limit (HunyuanVideo, Qwen-Image,
FLUX.2). Nothing here imports diffusers; tokenizers only to copy a fast tokenizer.
"""

from __future__ import annotations

import inspect
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from promptx.text.encoder_count import EncoderCounter, TokenizerCounter, encoder_family

__all__ = ["PipelineEncoder", "call_value", "pipeline_encoder"]

_ATTRIBUTES = ("tokenizer", "tokenizer_2", "tokenizer_3", "tokenizer_4")
_UNBOUNDED = 1_000_000  # transformers' "no limit" model_max_length is about 1e30
_CACHE_SIZE = 8


@dataclass(frozen=True)
class PipelineEncoder:
    """The tokenizer that counts a pipeline's text-encoder budget."""

    #: the pipeline attribute: "tokenizer", "tokenizer_2", ...
    attribute: str
    #: counts like that tokenizer, special tokens excluded; named "pipeline:<attribute>"
    counter: EncoderCounter
    #: tokens of the prompt the text encoder keeps (None: the pipeline sets no limit)
    max_tokens: int | None


def call_value(pipe: Any, name: str, call: Mapping[str, Any] | None = None) -> Any:
    """The value ``pipe(...)`` uses for parameter ``name``: the call's, else its ``__call__``
    default."""
    if call and call.get(name) is not None:
        return call[name]
    try:
        parameter = inspect.signature(pipe.__call__).parameters.get(name)
    except (TypeError, ValueError):
        return None
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return None
    return parameter.default


def _text_tokenizer(component: Any) -> Any:
    """The tokenizer itself: a processor (FLUX.2's) holds one as ``.tokenizer``."""
    if callable(getattr(component, "encode", None)):
        return component
    inner = getattr(component, "tokenizer", None)
    return inner if callable(getattr(inner, "encode", None)) else None


def _describe(pipe: Any, attribute: str, component: Any) -> str:
    """Class names and model types that tell the tokenizer's family, lowercased."""
    encoder = getattr(pipe, "text_encoder" + attribute[len("tokenizer") :], None)
    config = getattr(encoder, "config", None)
    words = [
        type(component).__name__,
        type(_text_tokenizer(component)).__name__,
        type(encoder).__name__,
        str(getattr(config, "model_type", "")),
        " ".join(getattr(config, "architectures", None) or ()),
    ]
    return " ".join(words).lower()


def _model_max_length(tokenizer: Any) -> int | None:
    value = getattr(tokenizer, "model_max_length", None)
    return value if isinstance(value, int) and 0 < value < _UNBOUNDED else None


def _specials(tokenizer: Any) -> int:
    """Tokens the tokenizer adds around a text (BOS/EOS)."""
    try:
        return int(tokenizer.num_special_tokens_to_add(False))
    except Exception:  # noqa: BLE001 - not a transformers tokenizer
        return 0


_counters: OrderedDict[tuple[int, str], tuple[Any, EncoderCounter]] = OrderedDict()
_counters_lock = threading.Lock()


def _counter(tokenizer: Any, attribute: str) -> EncoderCounter:
    """A counter of ``tokenizer`` that leaves the pipeline's tokenizer as it is (cached): a fast
    tokenizer's ``backend_tokenizer`` (which TokenizerCounter copies), else the tokenizer."""
    key = (id(tokenizer), attribute)
    with _counters_lock:
        hit = _counters.get(key)
        if hit is not None and hit[0] is tokenizer:
            _counters.move_to_end(key)
            return hit[1]
    from tokenizers import Tokenizer

    backend = getattr(tokenizer, "backend_tokenizer", None)
    source = backend if isinstance(backend, Tokenizer) else tokenizer
    counter = TokenizerCounter(source, f"pipeline:{attribute}")
    with _counters_lock:
        _counters[key] = (tokenizer, counter)  # holding the tokenizer keeps its id unique
        while len(_counters) > _CACHE_SIZE:
            _counters.popitem(last=False)
    return counter


def _framing(
    pipe: Any, component: Any, counter: EncoderCounter, call
) -> tuple[int | None, int] | None:
    """(a tighter limit or None, tokens of the limit the pipeline's prompt template takes), for
    pipelines that wrap the prompt in a template; None for the others."""
    template = call_value(pipe, "prompt_template", call)
    if isinstance(template, Mapping) and isinstance(template.get("template"), str):
        # HunyuanVideo: the template's start is cropped off beyond the limit, its end is not
        return None, counter.count(template["template"].split("{}", 1)[-1])
    template = getattr(pipe, "prompt_template_encode", None)
    if isinstance(template, str) and "{}" in template:
        # Qwen-Image: the start is dropped after encoding; the end counts, within
        # tokenizer_max_length
        limit = getattr(pipe, "tokenizer_max_length", None)
        return (limit if isinstance(limit, int) else None), counter.count(
            template.split("{}", 1)[-1]
        )
    system = getattr(pipe, "system_message", None)
    if isinstance(system, str):
        # FLUX.2: a chat with a system message, all within max_sequence_length
        chat = [
            {"role": "system", "content": [{"type": "text", "text": system}]},
            {"role": "user", "content": [{"type": "text", "text": ""}]},
        ]
        try:
            rendered = component.apply_chat_template(
                chat, tokenize=False, add_generation_prompt=False
            )
        except Exception:  # noqa: BLE001 - no chat template: the system message at least
            rendered = system
        return None, counter.count(rendered if isinstance(rendered, str) else system)
    return None


def _limit(pipe: Any, tokenizer: Any, clip: bool, call) -> int | None:
    """The sequence length the pipeline tokenizes to (special tokens included)."""
    if clip:  # CLIP encoders are always cut at their 77 positions
        return _model_max_length(tokenizer)
    length = call_value(pipe, "max_sequence_length", call)
    return length if isinstance(length, int) and length > 0 else _model_max_length(tokenizer)


def pipeline_encoder(
    pipe: Any, encoder: str | None, call: Mapping[str, Any] | None = None
) -> PipelineEncoder | None:
    """The tokenizer of ``pipe`` that counts the budget of a profile whose encoder is ``encoder``.

    ``call``: the keyword arguments the pipeline will be called with (``max_sequence_length``,
    ``prompt_template``). None when the pipeline has no tokenizer.
    """
    found = []
    for attribute in _ATTRIBUTES:
        component = getattr(pipe, attribute, None)
        if _text_tokenizer(component) is not None:
            found.append((attribute, component))
    if not found:
        return None
    described = {a: _describe(pipe, a, c) for a, c in found}
    limits = {a: _limit(pipe, _text_tokenizer(c), "clip" in described[a], call) for a, c in found}
    chosen = next(
        (a for word in encoder_family(encoder) for a, _ in found if word in described[a]), None
    )
    if chosen is None:  # the tokenizer that keeps the longest text (None: no limit)
        chosen = max(
            found, key=lambda item: float("inf") if limits[item[0]] is None else limits[item[0]]
        )[0]
    component = dict(found)[chosen]
    tokenizer = _text_tokenizer(component)
    counter = _counter(tokenizer, chosen)
    limit = limits[chosen]
    framing = _framing(pipe, component, counter, call)
    if framing is None:
        kept = None if limit is None else limit - _specials(tokenizer)
    else:
        tighter, overhead = framing
        if tighter is not None:
            limit = tighter if limit is None else min(limit, tighter)
        kept = None if limit is None else limit - overhead
    return PipelineEncoder(chosen, counter, kept if kept is not None and kept > 0 else None)
