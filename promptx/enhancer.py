"""``Enhancer``: the reusable client that turns user prompts into enhanced prompts.

It resolves the target profile, checks the input, renders the chat messages,
asks a backend for text, cleans and validates it, retries with other seeds,
and falls back to the original prompt when nothing acceptable comes out.
The backend (and its loaded model) is kept for reuse. Concurrent ``enhance``
calls from several threads are decoded together in batches where the backend
batches (``backends.batcher``); ``enhance_many`` and ``stream`` calls run one
at a time.

Not here: template files (``profiles.registry``), text rules (``text.cleanup``,
``text.validate``) or decoding (``backends``, ``engine``).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Generator, Iterable, Iterator, Sequence

from .backends.base import Backend, GenerationOptions, GenerationOutput
from .backends.batcher import RequestBatcher
from .errors import InvalidInputError
from .models import check_precision, model_languages
from .options import EnhanceOptions
from .profiles.registry import registry_for
from .profiles.schema import Profile, count_words
from .quality import Assessment, assess
from .quality.salvage import drop_offending_sentences, say_asked_view, say_lost_camera
from .request import EnhanceRequest
from .result import EnhancedPrompt, EnhanceStats
from .structured import structured_result
from .text.cleanup import clean_output
from .text.encoder_count import counter_for

DEFAULT_RETRIES = 2
# words generated beyond a profile's max_words before stopping. The budget is counted as
# clean-up counts (after stripping preambles and markdown), and clean-up keeps whole sentences
# within max_words, so one word past it shows whether the last sentence fits: more is waste
WORD_MARGIN = 1
# finish reasons of a generation stopped by a budget: its last sentence is unfinished
CUT_OFF = ("length", "budget")


class Enhancer:
    """Keeps a loaded backend; ``enhance``, ``enhance_many`` and ``stream`` reuse it."""

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        backend: Backend | str | None = None,
        templates_dir: str | Path | Sequence[str | Path] | None = None,
        system_prompt: str | None = None,
        speculative: bool = True,
        drafter: str | Path | None = None,
        dtype: str | None = None,
        device: str | None = None,
        retries: int = DEFAULT_RETRIES,
        quiet: bool = False,
        planner: str = "harness",
        base_url: str | None = None,
        vision: bool | None = None,
        encoder_tokenizer: str | Path | None = None,
        strength: str | None = None,
    ) -> None:
        """``backend``: a Backend, or a name: "embedded" (default), "openai" (``base_url``, and
        ``model`` as the server's model name) or a backend of the config file
        (``promptx.backends.choice``). A ``base_url`` alone picks "openai".
        ``encoder_tokenizer``: a tokenizer (or diffusers pipeline) directory whose tokenizer
        counts the text-encoder budget exactly (``promptx.text.encoder_count``).
        ``strength``: the default of every call ("light", "medium", "full"; None: "light" with
        the embedded default model, "full" with another model or a remote backend)."""
        EnhanceOptions(strength=strength)  # checks the value
        check_precision(dtype)
        self.strength = strength
        self.encoder_tokenizer = encoder_tokenizer
        self._model, self._drafter, self._dtype, self._device = model, drafter, dtype, device
        self._planner = planner
        self._backend = _chosen_backend(backend, model, base_url, vision)
        self._quiet = quiet
        self.system_prompt = system_prompt
        self.speculative = speculative
        self.retries = retries
        self.registry = registry_for(templates_dir)
        self._lock = threading.RLock()
        self._batcher: RequestBatcher | None = None
        self._streaming: set[int] = set()  # threads iterating a stream of this enhancer

    @property
    def backend(self) -> Backend:
        """The backend, loaded on first use."""
        if self._backend is not None:
            return self._backend
        with self._lock:
            if self._backend is None:
                from .backends.embedded import EmbeddedBackend

                self._backend = EmbeddedBackend(
                    self._model,
                    dtype=self._dtype,
                    device=self._device,
                    drafter=self._drafter,
                    quiet=self._quiet,
                    planner=self._planner,
                )
            return self._backend

    @property
    def batcher(self) -> RequestBatcher | None:
        """Groups concurrent callers' requests (None when the backend cannot batch)."""
        if self._batcher is not None:
            return self._batcher
        with self._lock:
            if self._batcher is None and self.backend.batches:
                self._batcher = RequestBatcher(self.backend.generate_many)
            return self._batcher

    def profile(self, target: str | Profile) -> Profile:
        """The profile named ``target`` (or alias); a Profile is taken as it is (e.g. one whose
        budget a diffusers pipeline narrowed)."""
        if isinstance(target, Profile):
            return target
        if not isinstance(target, str):
            raise InvalidInputError(
                f"target must be a target name (a string) or a Profile, not {type(target).__name__}"
            )
        return self.registry.get(target)

    # -- public API -------------------------------------------------------------------------
    def enhance(
        self, prompt: str | None, target: str | Profile = "video", **options
    ) -> EnhancedPrompt:
        """Enhance one prompt. Options: the fields of ``promptx.options.EnhanceOptions`` (image,
        caption, seed, temperature, max_new_tokens, style, language, force, ...)."""
        request = self._request(prompt, target, options)
        return self._run(request)

    def enhance_many(
        self,
        prompts: Iterable[str],
        target: str | Profile = "video",
        *,
        progress: bool = False,
        batch_size: int = 8,
        **options,
    ) -> list[EnhancedPrompt]:
        """Enhance several prompts with the same options, in order.

        With a backend that batches (the embedded one), first attempts run ``batch_size`` at a
        time in one batched decode; retries after a rejected output run one by one.
        """
        if batch_size < 1:
            raise InvalidInputError(f"batch_size must be >= 1, not {batch_size}")
        if isinstance(prompts, (str, bytes)):
            raise InvalidInputError(
                "enhance_many takes a list of prompts, not one string (use enhance)"
            )
        self._refuse_inside_stream()
        prompts = list(prompts)
        requests = [
            self._checked_request(i, p, target, options) for i, p in enumerate(prompts)
        ]  # all first
        results = []
        with self._lock, _progress(len(requests), progress) as bar:
            for start in range(0, len(requests), batch_size):
                chunk = requests[start : start + batch_size]
                seeds = [r.seeds(self.retries) for r in chunk]
                for request, request_seeds, first in zip(
                    chunk, seeds, self._first_attempts(chunk, seeds)
                ):
                    results.append(self._run(request, first=first, seeds=request_seeds))
                    bar.update(1)
        return results

    def stream(
        self, prompt: str | None, target: str | Profile = "video", **options
    ) -> "EnhanceStream":
        """Iterate over raw text deltas as they are generated; ``.result`` holds the final
        prompt."""
        return EnhanceStream(self, self._request(prompt, target, options))

    # -- internals ------------------------------------------------------------------------------
    def _request(self, prompt, target, options: dict) -> EnhanceRequest:
        profile = self.profile(target)
        checked = EnhanceOptions.of(options).with_defaults(
            speculative=self.speculative,
            system_prompt=self.system_prompt,
            strength=self.default_strength(profile),
        )
        # the embedded backend (loaded later) continues answers
        continues = self._backend.continues_answers if self._backend is not None else True
        languages = (
            self._backend.languages if self._backend is not None else model_languages(self._model)
        )
        return EnhanceRequest.build(
            profile, prompt, checked, continue_answer=continues, model_languages=languages
        )

    def default_strength(self, profile: Profile | None = None) -> str:
        """The strength of a call that names none: the Enhancer's, else "light" for the embedded
        default model (its free prose was 87-100% flawed read blind, and ranking the phrases by
        it did not read better than the seeded draw: docs/quality.md) and "full" for any other
        model, or a target without a structured layout."""
        if self.strength is not None:
            return self.strength
        if profile is not None and profile.compose is None:
            return "full"
        embedded = self._backend is None or self._backend.name == "embedded"
        # a model or drafter named by the caller is there to be used: free prose
        return "light" if embedded and self._model is None and self._drafter is None else "full"

    def _structured(self, request: EnhanceRequest) -> EnhancedPrompt:
        """A light or medium enhancement (``promptx.structured``): light never loads the model. A
        target without a structured layout is refused by ``compose``."""
        scorer = None
        if request.strength == "medium" and self.backend.scores_phrases:
            scorer = self._locked_scorer
        backend = self.backend if scorer is not None else None
        return structured_result(
            request,
            scorer=scorer,
            counter=self._counter(request),
            backend=backend.name if backend else "phrases",
            model=backend.model_name if backend else "",
        )

    def _locked_scorer(self, prompt: str, options):
        with self._lock:
            return self.backend.score_phrases(prompt, options)

    def _checked_request(self, index: int, prompt, target, options: dict) -> EnhanceRequest:
        """The request of one item of a batch; a bad item is named by its position."""
        try:
            return self._request(prompt, target, options)
        except InvalidInputError as exc:
            raise type(exc)(f"prompt {index}: {exc}") from None

    def _first_attempts(
        self, requests: list[EnhanceRequest], seeds: list[list[int]]
    ) -> list[GenerationOutput | None]:
        """The first attempt of every request in one batched decode, where the backend batches."""
        todo = [
            (r, s[0])
            for r, s in zip(requests, seeds)
            if not r.skip_reason and not _is_structured(r)
        ]
        if len(todo) < 2 or not self.backend.batches:  # light and medium decode nothing
            return [None] * len(requests)
        requests_ = [(_messages(r, self.backend), self._options(r, seed)) for r, seed in todo]
        outputs = iter(self.backend.generate_many(requests_))
        return [None if r.skip_reason or _is_structured(r) else next(outputs) for r in requests]

    def _run(
        self,
        request: EnhanceRequest,
        first: GenerationOutput | None = None,
        seeds: list[int] | None = None,
    ) -> EnhancedPrompt:
        self._refuse_inside_stream()
        return _result_of(self._attempts(request, first, seeds))

    def _refuse_inside_stream(self) -> None:
        """The model is busy with this thread's open stream: waiting for it would never end."""
        if threading.get_ident() in self._streaming:
            raise InvalidInputError(
                "this Enhancer is streaming in this thread: finish or close the stream "
                "before enhancing again (or use a second Enhancer)"
            )

    def _attempts(
        self,
        request: EnhanceRequest,
        first: GenerationOutput | None = None,
        seeds: list[int] | None = None,
        *,
        stream: bool = False,
    ) -> Generator[str, None, EnhancedPrompt]:
        """Try seeds until an output passes the assessment, else fall back; returns the result.
        With ``stream``, yields the first attempt's text deltas as they are generated."""
        if request.skip_reason:
            return request.unchanged(
                request.skip_reason,
                fallback=False,
                stats=self._counted(EnhanceStats(), request, request.prompt),
            )
        if _is_structured(request):
            result = self._structured(request)
            if stream:
                yield result.text
            return result
        messages = _messages(request, self.backend)
        assessment: Assessment | None = None
        totals = _Totals()
        for attempt, (req, seed) in enumerate(_plan(request, seeds or request.seeds(self.retries))):
            chat = messages if req is request else _messages(req, self.backend)
            if attempt == 0 and first is not None:
                output = first
            elif attempt == 0 and stream:
                output = yield from self._streamed(chat, req, seed)
            else:
                output = self.generate(chat, self._options(req, seed))
            totals.add(output)
            text, assessment = self._postprocess(
                req, _joined(req.opening, output.text), cut_off=output.finish_reason in CUT_OFF
            )
            if assessment.passed:
                stats = totals.stats(self.backend, attempt + 1, output)
                return req.result(text, self._counted(stats, req, text), assessment)
        reason = "; ".join(assessment.reasons()) if assessment else "no attempt"
        stats = self._counted(
            totals.stats(self.backend, totals.attempts, None), request, request.prompt
        )
        return request.unchanged(
            f"no acceptable output after {totals.attempts} attempts: {reason}",
            fallback=True,
            stats=stats,
            assessment=assessment,
        )

    @staticmethod
    def _options(request: EnhanceRequest, seed: int) -> GenerationOptions:
        return GenerationOptions(
            temperature=request.temperature,
            top_p=request.profile.top_p,
            repetition_penalty=request.profile.repetition_penalty,
            max_new_tokens=request.max_new_tokens,
            seed=seed,
            speculative=request.speculative,
            max_words=max(
                1, request.profile.length.max_words + WORD_MARGIN - count_words(request.opening)
            ),
            constraint=request.constraint,
        )

    def generate(self, messages, options: GenerationOptions) -> GenerationOutput:
        """The backend's raw output for one chat (no profile, clean-up or assessment: what
        ``promptx serve``'s chat route serves); concurrent callers are decoded together."""
        if self.batcher is not None:  # concurrent callers meet here
            return self.batcher.generate(messages, options)
        with self._lock:  # a backend that does not batch gets one call at a time
            run = self.backend.start(messages, options)
            try:
                return run.finish()
            finally:
                run.close()

    def _streamed(
        self, messages, request: EnhanceRequest, seed: int
    ) -> Generator[str, None, GenerationOutput]:
        """One attempt's text deltas as they come (the first with the answer's opening); returns
        its output. Closing the generator stops the decode at once."""
        with self._lock:
            run = self.backend.start(messages, self._options(request, seed))
            try:
                for index, delta in enumerate(run):
                    yield _joined(request.opening, delta) if index == 0 else delta
                return run.output
            finally:
                run.close()

    def _postprocess(
        self, request: EnhanceRequest, raw: str, *, cut_off: bool = False
    ) -> tuple[str, Assessment]:
        """The cleaned text and its assessment; a text that fails only because of a few
        sentences (one that talks to the user, adds a subject) passes without them, and one
        that only lost the prompt's camera move passes with a sentence that makes it; a view the
        prompt names ("front view") and the text does not is said at its end."""
        budget = request.profile.length
        cleaned = clean_output(
            raw,
            fmt=request.profile.format,
            max_words=budget.max_words,
            max_encoder_tokens=budget.max_encoder_tokens,
            encoder=budget.encoder,
            counter=self._counter(request),
            keep_start=request.opening,
            cut_off=cut_off,
        )
        text = (
            cleaned.text
            if request.profile.format == "tags"
            else say_asked_view(request.prompt, cleaned.text)
        )
        assessment = self._assess(request, text)
        if not assessment.passed and request.profile.format != "tags":
            for mend in (drop_offending_sentences, say_lost_camera):
                mended = mend(text, assessment)
                if mended and mended != text:
                    second = self._assess(request, mended)
                    if second.passed:
                        return mended, second
        return text, assessment

    def _counter(self, request: EnhanceRequest):
        """What counts the profile's text-encoder tokens: the request's own counter, else the
        best for the profile's encoder (None: the profile names no encoder)."""
        if request.encoder_counter is not None:
            return request.encoder_counter
        budget = request.profile.length
        if budget.encoder is None and budget.max_encoder_tokens is None:
            return None
        return counter_for(budget.encoder, self.encoder_tokenizer)

    def _counted(self, stats: EnhanceStats, request: EnhanceRequest, text: str) -> EnhanceStats:
        """``stats`` with the encoder-token count of the text that is returned."""
        counter = self._counter(request)
        if counter is not None:
            stats.encoder_tokens, stats.encoder_counter = counter.count(text), counter.name
        return stats

    @staticmethod
    def _assess(request: EnhanceRequest, text: str) -> Assessment:
        return assess(
            request.prompt,
            text,
            request.profile,
            context=request.caption,
            language="english" if request.wants_english else "keep",
        )


def _is_structured(request: EnhanceRequest) -> bool:
    return request.strength in ("light", "medium")


def _chosen_backend(
    backend: Backend | str | None, model, base_url: str | None, vision: bool | None
) -> Backend | None:
    """The backend an Enhancer was given or named (None: the embedded one, loaded on first use)."""
    if backend is None and base_url is not None:
        backend = "openai"
    if backend is None or isinstance(backend, Backend):
        return backend
    if not isinstance(backend, str):
        raise InvalidInputError(
            f"backend must subclass promptx.backends.Backend or be a backend name, "
            f"not {type(backend).__name__}"
        )
    from .backends.choice import is_remote, remote_backend

    if not is_remote(backend):
        if base_url is not None or vision:
            raise InvalidInputError(
                "base_url and vision are settings of a remote backend, not the embedded one"
            )
        return None
    return remote_backend(
        backend, base_url=base_url, model=str(model) if model is not None else None, vision=vision
    )


def _plan(request: EnhanceRequest, seeds: list[int]) -> list[tuple[EnhanceRequest, int]]:
    """The attempts: the request once per seed; then, where retries are allowed and it applies,
    a last one that opens the answer with the user's own words (``EnhanceRequest.opened``)."""
    plan = [(request, seed) for seed in seeds]
    opened = request.opened() if len(seeds) > 1 else None
    return plan + [(opened, seeds[-1] + 1)] if opened is not None else plan


def _messages(request: EnhanceRequest, backend: Backend):
    """The chat for one request in the backend's prompt style; a vision backend gets the image."""
    sees_image = backend.vision and request.image is not None
    messages = request.chat(backend.prompt_style, vision=sees_image)
    if sees_image:
        from .image_url import image_data_url

        last = messages[-1]
        last["content"] = [
            {"type": "text", "text": last["content"]},
            {"type": "image_url", "image_url": {"url": image_data_url(request.image)}},
        ]
    if request.opening:
        messages.append({"role": "assistant", "content": request.opening})
    return messages


def _joined(opening: str, continuation: str) -> str:
    """The answer: its opening and what the model wrote after it."""
    if not opening:
        return continuation
    if continuation[:1].isalnum():
        return f"{opening} {continuation}"
    return opening + continuation


class StreamRevision(str):
    """The last item of an ``EnhanceStream`` whose final text is not what its deltas spelled:
    the whole final text, which replaces everything shown before it."""


class EnhanceStream:
    """Text deltas of the first attempt as they come; ``result`` once iteration ends.

    The deltas are the model's raw words. When the final text differs from them (the attempt
    was rejected and another one or the original prompt stands, or clean-up changed it), the
    last item is a ``StreamRevision`` holding the whole final text, and ``revised`` is True:
    show it in place of what came before. Leaving the loop early (``break``, closing the
    iterator) stops the decode at once and frees the model for the next call; ``result``
    then stays None."""

    def __init__(self, enhancer: Enhancer, request: EnhanceRequest) -> None:
        self._enhancer, self._request = enhancer, request
        self.result: EnhancedPrompt | None = None
        self.revised = False

    def __iter__(self) -> Iterator[str]:
        enhancer, me = self._enhancer, threading.get_ident()
        enhancer._refuse_inside_stream()
        with enhancer._lock:
            enhancer._streaming.add(me)
            shown: list[str] = []
            attempts = enhancer._attempts(self._request, stream=True)
            try:
                while True:
                    delta = next(attempts)
                    shown.append(delta)
                    yield delta
            except StopIteration as done:
                self.result = done.value
            finally:
                attempts.close()
                enhancer._streaming.discard(me)
        if " ".join("".join(shown).split()) != " ".join(self.result.text.split()):
            self.revised = True
            yield StreamRevision(self.result.text)


def _result_of(attempts: Generator[str, None, EnhancedPrompt]) -> EnhancedPrompt:
    """Run an ``_attempts`` generator to its return value (deltas, if any, are dropped)."""
    try:
        while True:
            next(attempts)
    except StopIteration as stop:
        return stop.value


class _Totals:
    """Token and time totals over the attempts of one enhance call."""

    def __init__(self) -> None:
        self.attempts = self.prompt_tokens = self.completion_tokens = 0
        self.latency = 0.0

    def add(self, output: GenerationOutput) -> None:
        self.attempts += 1
        self.prompt_tokens += output.prompt_tokens
        self.completion_tokens += output.completion_tokens
        self.latency += output.latency_s

    def stats(self, backend: Backend, attempts: int, last: GenerationOutput | None) -> EnhanceStats:
        return EnhanceStats(
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            latency_s=round(self.latency, 4),
            tokens_per_s=round(self.completion_tokens / self.latency, 2) if self.latency else 0.0,
            attempts=attempts,
            speculative=bool(last and last.speculative),
            acceptance_length=round(last.acceptance_length, 3)
            if last and last.acceptance_length
            else None,
            backend=backend.name,
            model=backend.model_name,
        )


class _progress:
    """A click progress bar on stderr when asked for, else a no-op."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.bar = total, enabled and total > 1, None

    def __enter__(self):
        if self.enabled:
            import click

            self.bar = click.progressbar(length=self.total, label="enhancing", file=sys.stderr)
            self.bar.__enter__()
        return self

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)
