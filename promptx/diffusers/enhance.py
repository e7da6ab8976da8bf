"""``enhance_for(pipe, prompt)``: enhance a prompt for the pipeline that will render it.

The target profile comes from the pipeline's class (``targets``), the text-encoder budget
from the pipeline's own tokenizer (``encoders``): counted by it, and no longer than what its
text encoder keeps. Any promptx backend does the writing: ``enhancer=`` an Enhancer, or
Enhancer options (``model=``, ``backend=``, ``base_url=``, ...), or by default promptx's
shared enhancer (the embedded model, loaded once).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from promptx.api import shared_enhancer
from promptx.enhancer import Enhancer
from promptx.errors import InvalidInputError
from promptx.options import PIPELINE, travelling
from promptx.profiles.schema import Profile, count_words
from promptx.result import EnhancedPrompt
from promptx.text.encoder_count import EncoderCounter

from .encoders import pipeline_encoder
from .targets import target_for

__all__ = ["enhance_for"]

#: options of one enhancement (``Enhancer.enhance``): those that travel with a pipeline (the image
#: and the encoder counter come from the pipeline's call)
ENHANCE_OPTIONS = frozenset(travelling(PIPELINE))
#: options of a batch (``Enhancer.enhance_many``)
BATCH_OPTIONS = frozenset({"batch_size", "progress"})
#: options that make an Enhancer (``Enhancer(...)``) but the per-call ones (given per call here) and
#: ``encoder_tokenizer`` (the pipeline's own tokenizer counts the budget)
ENHANCER_OPTIONS = (
    frozenset(inspect.signature(Enhancer).parameters) - ENHANCE_OPTIONS - {"encoder_tokenizer"}
)


def split_options(options: Mapping[str, Any], *, batch: bool = True) -> tuple[dict, dict, dict]:
    """(Enhancer options, enhance options, batch options); an unknown name is InvalidInputError.
    ``batch=False``: batch options are unknown too (one prompt)."""
    known = ENHANCE_OPTIONS | ENHANCER_OPTIONS | (BATCH_OPTIONS if batch else frozenset())
    unknown = sorted(set(options) - known)
    if unknown:
        raise InvalidInputError(
            f"unknown option {', '.join(unknown)}; valid options: {', '.join(sorted(known))}"
        )
    pick = lambda names: {k: v for k, v in options.items() if k in names}  # noqa: E731
    return pick(ENHANCER_OPTIONS), pick(ENHANCE_OPTIONS), pick(BATCH_OPTIONS)


def resolve_enhancer(enhancer: Enhancer | None, init: Mapping[str, Any]) -> Enhancer:
    """``enhancer``, else one made from ``init`` (kept for the same options), else the shared
    one."""
    if enhancer is not None:
        if not isinstance(enhancer, Enhancer):
            raise InvalidInputError(
                f"enhancer must be a promptx.Enhancer, not {type(enhancer).__name__}"
            )
        if init:
            raise InvalidInputError(
                f"pass either enhancer= or Enhancer options ({', '.join(sorted(init))}), not both"
            )
        return enhancer
    return shared_enhancer(**init)


def grounding_image(image: Any) -> Any:
    """What promptx can read of a pipeline's ``image``: a PIL image, path or bytes (the first of a
    list that is not one image per prompt); None for tensors and arrays."""
    if isinstance(image, (list, tuple)):
        return grounding_image(image[0]) if image else None
    import os

    from PIL import Image

    if isinstance(image, (Image.Image, str, os.PathLike, bytes, bytearray)):
        return image
    return None


def budgeted_profile(
    enhancer: Enhancer, pipe: Any, target: str, call: Mapping[str, Any] | None = None
) -> tuple[Profile, EncoderCounter | None]:
    """The profile of ``target`` with the encoder budget of ``pipe``, and the counter of that
    budget.

    The budget is the smaller of the profile's ``max_encoder_tokens`` and what the pipeline's
    text encoder keeps; a profile without one gets the pipeline's. Where the pipeline's is the
    tighter one, the word budget shrinks to what fits it (``words_that_fit``), so that the model
    is asked for a length the encoder keeps and the assessment does not call the cut text short.
    """
    profile = enhancer.profile(target)
    encoder = pipeline_encoder(pipe, profile.length.encoder, call)
    if encoder is None:
        return profile, None
    length = profile.length
    tighter = encoder.max_tokens is not None and (
        length.max_encoder_tokens is None or encoder.max_tokens < length.max_encoder_tokens
    )
    if not tighter:
        return profile, encoder.counter  # the profile's own budget holds
    update: dict[str, Any] = {"max_encoder_tokens": encoder.max_tokens}
    fit = words_that_fit(profile, encoder.counter, encoder.max_tokens)
    if fit is not None and fit < length.max_words:
        update["max_words"] = fit
        update["min_words"] = max(
            1, min(length.min_words, round(length.min_words * fit / length.max_words))
        )
    profile = profile.model_copy(update={"length": length.model_copy(update=update)})
    return profile, encoder.counter


def words_that_fit(profile: Profile, counter: EncoderCounter, tokens: int) -> int | None:
    """How many words of the profile's style make ``tokens`` tokens, by the tokens per word of its
    few-shot answers as ``counter`` counts them (None: they have no words)."""
    answers = [example.output for example in profile.examples]
    words = sum(count_words(a) for a in answers)
    if not words:
        return None
    per_word = sum(counter.count(a) for a in answers) / words
    return max(1, int(tokens / per_word))


def enhance_prompts(
    pipe: Any,
    prompts: list[str | None],
    *,
    enhancer: Enhancer,
    target: str | None = None,
    image: Any = None,
    call: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    batch: Mapping[str, Any] | None = None,
) -> list[EnhancedPrompt]:
    """Each prompt enhanced for ``pipe``; several in one ``enhance_many`` (batched decode), except
    that a list of images, one per prompt, grounds each prompt in its own image (one by one)."""
    has_image = image is not None and not (isinstance(image, (list, tuple)) and not image)
    name = target or target_for(pipe, image=has_image)
    profile, counter = budgeted_profile(enhancer, pipe, name, call)
    options = dict(options or {})
    if profile.wants_image and isinstance(image, (list, tuple)) and len(image) == len(prompts) > 1:
        return [
            enhancer.enhance(
                prompt, profile, encoder_counter=counter, image=grounding_image(each), **options
            )
            for prompt, each in zip(prompts, image)
        ]
    if profile.wants_image:
        grounding = grounding_image(image)
        if grounding is not None:
            options["image"] = grounding
    if len(prompts) == 1:
        return [enhancer.enhance(prompts[0], profile, encoder_counter=counter, **options)]
    return enhancer.enhance_many(
        prompts, profile, encoder_counter=counter, **options, **(batch or {})
    )


def enhance_for(
    pipe: Any,
    prompt: str | None,
    *,
    target: str | None = None,
    enhancer: Enhancer | None = None,
    image: Any = None,
    max_sequence_length: int | None = None,
    **options,
) -> EnhancedPrompt:
    """Enhance ``prompt`` for the diffusers pipeline ``pipe``.

    ``target``: a profile name or alias; by default the one for the pipeline's class
    (``PIPELINE_TARGETS``; an unknown class needs it). ``image``: the image the pipeline will get
    (i2v and i2i profiles are grounded in it; for FLUX.2, Kontext and LTX's condition pipeline it
    selects the editing or image-to-video profile). ``max_sequence_length``: the value you will
    call the pipeline with, if not its default (it bounds the budget). ``enhancer``: the Enhancer
    to use (any backend), or give Enhancer options (``model``, ``backend``, ``base_url``, ...);
    other options are ``Enhancer.enhance``'s (``seed``, ``style``, ``caption``, ...).

    ``result.text`` is the prompt, ``result.negative_prompt`` the profile's negative prompt, and
    ``result.stats.encoder_tokens`` the count of the pipeline's tokenizer
    (``stats.encoder_counter`` "pipeline:tokenizer_N").
    """
    if getattr(
        type(pipe), "wraps_a_pipeline", False
    ):  # promptx's EnhancedPipeline: the pipeline inside
        pipe = pipe.pipe
    init, enhance_options, _ = split_options(options, batch=False)
    chosen = resolve_enhancer(enhancer, init)
    call = {"max_sequence_length": max_sequence_length} if max_sequence_length is not None else None
    return enhance_prompts(
        pipe,
        [prompt],
        enhancer=chosen,
        target=target,
        image=image,
        call=call,
        options=enhance_options,
    )[0]
