"""The default backend: the local model decoded by promptx's own engine.

Loads lazily (importing this module does not import torch until a backend is
built), keeps the loaded model for reuse, and attaches a drafter for
speculative decoding when one exists for the model.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

from ..errors import BackendError, ModelError, PromptTooLongError
from ..models import ModelSource, model_languages, prepare, prompt_style_of, resolve_model
from .base import Backend, GenerationOptions, GenerationOutput, GenerationRun, Messages


class EmbeddedBackend(Backend):
    name = "embedded"
    batches = True
    scores_phrases = True

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        dtype: str | None = None,
        device: str | None = None,
        drafter: str | Path | None = None,
        quiet: bool = False,
        planner: str = "harness",
    ) -> None:
        self.source: ModelSource = resolve_model(model)
        self.model_name = self.source.name
        self.languages = model_languages(model)
        self._vocabulary_index = self._word_bounds = None
        directory = prepare(self.source, quiet=quiet)
        try:
            from engine import Generator
            from engine import default_device

            device = device or default_device()
            self.generator = Generator.from_dir(
                directory, dtype=_resolve_dtype(dtype, device, drafter), device=device
            )
        except (ValueError, OSError, RuntimeError) as exc:
            raise ModelError(f"cannot load model {self.model_name}: {exc}") from exc
        self.prompt_style = prompt_style_of(directory)
        self._phrase_prior: dict[tuple[str, str], float] = {}
        self._attach_drafter(drafter, planner, quiet)

    @classmethod
    def around(cls, generator, model_name: str, *, prompt_style: str = "full") -> "EmbeddedBackend":
        """A backend for a generator already in memory (a model being tuned), without a drafter."""
        backend = cls.__new__(cls)
        backend.source = ModelSource(model_name, Path("."))
        backend.model_name, backend.generator = model_name, generator
        backend._vocabulary_index = backend._word_bounds = None
        backend._phrase_prior = {}
        backend.prompt_style = prompt_style
        return backend

    def _attach_drafter(self, drafter: str | Path | None, planner: str, quiet: bool) -> None:
        from .drafters import find_drafter, load_copy_table, load_drafter_for, make_planner

        if not self.generator.exact_batches:  # int8 / mixed precision decode plainly
            if drafter is not None and not quiet:
                import sys

                print(
                    "promptx: this precision decodes without speculation; the drafter is not used "
                    "(use --dtype float32 or bfloat16)",
                    file=sys.stderr,
                )
            return
        path = Path(drafter) if drafter is not None else find_drafter(self.generator.model)
        if path is None:
            return
        target = self.generator.model
        loaded, fixed = load_drafter_for(target, path)
        self.generator.drafter = loaded
        if self.generator.can_speculate:
            self.generator.planner = make_planner(
                planner, target, loaded, fixed, quiet, copy_table=load_copy_table(target, path)
            )

    @property
    def has_drafter(self) -> bool:
        return self.generator.can_speculate

    @property
    def context_window(self) -> int:
        return self.generator.context_window

    def encode(self, messages: Messages) -> list[int]:
        """The chat's token ids; a last assistant message is an opening the answer continues."""
        tokenizer = self.generator.tokenizer
        if messages and messages[-1]["role"] == "assistant":
            return tokenizer.encode_chat(messages[:-1]) + tokenizer.encode(messages[-1]["content"])
        return tokenizer.encode_chat(messages)

    def count_prompt_tokens(self, messages: Messages) -> int:
        return len(self.encode(messages))

    def start(self, messages: Messages, options: GenerationOptions) -> GenerationRun:
        prompt_ids = self.encode(messages)
        self._check_length(prompt_ids, options)
        prefix_len = self._prefix_len(messages, prompt_ids)
        return GenerationRun(lambda run: self._deltas(run, prompt_ids, options, prefix_len))

    def _prefix_len(self, messages: Messages, prompt_ids: list[int]) -> int:
        """How many leading tokens every prompt with these earlier messages shares: the
        system prompt and examples before the last (user) message."""
        if messages and messages[-1]["role"] == "assistant":
            messages = messages[:-1]
        if len(messages) < 2 or self.generator.prefixes is None:
            return 0
        earlier = self.encode(messages[:-1])
        n = 0
        for a, b in zip(earlier, prompt_ids):
            if a != b:
                break
            n += 1
        return n

    def score_phrases(self, prompt: str, options: list[tuple[str, str]]) -> list[float]:
        """Each phrase's mean log-probability after the prompt and its frame, less half its mean
        log-probability after the frame alone (kept per phrase, measured in the same pass the first
        time): a phrase the prompt makes likelier wins, not merely a common one, and not merely a
        rare one either (full pointwise mutual information favoured odd phrases:
        docs/quality.md)."""
        if not options:
            return []
        missing = [o for o in dict.fromkeys(options) if o not in self._phrase_prior]
        groups = [self._group(prompt.strip() or _NEUTRAL_PROMPT, options)]
        if missing:
            groups.append(self._group(_NEUTRAL_PROMPT, missing))
        try:
            scored = self.generator.score(groups)
        except (RuntimeError, ValueError) as exc:
            raise BackendError(f"scoring failed: {exc}") from exc
        if missing:
            self._phrase_prior.update(zip(missing, (s.mean for s in scored[1])))
        return [s.mean - PRIOR_WEIGHT * self._phrase_prior[o] for s, o in zip(scored[0], options)]

    def _group(self, prompt: str, options: list[tuple[str, str]]):
        """The prompt and each (frame, phrase) as token ids, only the phrase's tokens scored."""
        from engine import ScoringGroup

        encode = self.generator.tokenizer.encode
        frames = [encode(f" {frame}") if frame else [] for frame, _ in options]
        phrases = [encode(f" {phrase}") for _, phrase in options]
        return ScoringGroup(
            encode(prompt), [f + p for f, p in zip(frames, phrases)], [len(f) for f in frames]
        )

    def generate_many(
        self, requests: list[tuple[Messages, GenerationOptions]]
    ) -> list[GenerationOutput]:
        """Decode several requests in one batch (speculative when a drafter is attached); requests
        that turn speculation off go in a batch of their own, so each decodes as it would alone."""
        flags = {options.speculative for _, options in requests}
        if len(flags) > 1:
            outputs: dict[int, GenerationOutput] = {}
            for flag in flags:
                group = [
                    i for i, (_, options) in enumerate(requests) if options.speculative == flag
                ]
                outputs.update(zip(group, self._generate_batch([requests[i] for i in group])))
            return [outputs[i] for i in range(len(requests))]
        return self._generate_batch(requests)

    def _generate_batch(
        self, requests: list[tuple[Messages, GenerationOptions]]
    ) -> list[GenerationOutput]:
        from engine import DecodeStats

        prompts = [self.encode(messages) for messages, _ in requests]
        for ids, (_, options) in zip(prompts, requests):
            self._check_length(ids, options)
        params = [self._sampling_params(options) for _, options in requests]
        speculative = all(options.speculative for _, options in requests) and self.has_drafter
        stats = [DecodeStats() for _ in requests]
        stops = [self._stop_checker(p, options) for p, (_, options) in zip(params, requests)]
        started = time.perf_counter()
        try:
            outputs = self.generator.generate_many(
                prompts,
                params,
                speculative=speculative,
                stats=stats,
                stops=stops,
                prefix_lens=[self._prefix_len(m, ids) for (m, _), ids in zip(requests, prompts)],
            )
        except (RuntimeError, ValueError) as exc:
            raise BackendError(f"generation failed: {exc}") from exc
        latency = time.perf_counter() - started
        drafted = (
            speculative and len(requests) == 1
        )  # a batch decodes plainly (Generator.generate_many)
        return [
            self._output(
                stop.trim_text(self.generator.tokenizer.decode(tokens)), ids, s, latency, drafted
            )
            for tokens, ids, s, stop in zip(outputs, prompts, stats, stops)
        ]

    def _sampling_params(self, options: GenerationOptions):
        from engine import SamplingParams, TokenMask

        banned = None
        if options.constraint is not None:
            ids = self._vocabulary().banned_ids(options.constraint)
            banned = TokenMask(ids) if ids else None
        return SamplingParams(
            temperature=options.temperature,
            top_p=options.top_p,
            top_k=options.top_k,
            repetition_penalty=options.repetition_penalty,
            max_new_tokens=options.max_new_tokens,
            seed=options.seed,
            stop_strings=options.stop,
            banned=banned,
        )

    def _vocabulary(self):
        """Word-start tokens of this model's vocabulary, indexed once for decoding constraints."""
        if self._vocabulary_index is None:
            from ..quality.constraint import VocabularyIndex

            self._vocabulary_index = VocabularyIndex(self.generator.tokenizer.token_texts())
        return self._vocabulary_index

    def _stop_checker(self, params, options: GenerationOptions):
        if options.max_words is None:
            return self.generator.stop_checker(params)
        from .word_budget import WordBudgetStop, word_bounds

        if self._word_bounds is None:
            self._word_bounds = word_bounds(self.generator.tokenizer.token_texts())
        over_budget = WordBudgetStop(
            options.max_words, self._word_bounds, self.generator.tokenizer.decode
        )
        return self.generator.stop_checker(params, stop_if=over_budget)

    def _check_length(self, prompt_ids: list[int], options: GenerationOptions) -> None:
        from engine import ContextOverflowError

        try:
            self.generator.check_fits(len(prompt_ids), options.max_new_tokens)
        except ContextOverflowError as exc:
            raise PromptTooLongError(f"{exc}: shorten the prompt") from None

    @staticmethod
    def _output(
        text: str, prompt_ids: list[int], stats, latency: float, speculative: bool
    ) -> GenerationOutput:
        """``speculative``: whether it was asked for; reported only if a round drafted (the planner
        may decode plainly where speculation does not pay, e.g. ``Harness.for_sampling``)."""
        speculative = speculative and bool(stats.accepted_lengths)
        return GenerationOutput(
            text=text,
            prompt_tokens=len(prompt_ids),
            completion_tokens=stats.new_tokens,
            finish_reason=stats.finish_reason or "length",
            latency_s=latency,
            tokens_per_s=stats.new_tokens / latency if latency > 0 else 0.0,
            speculative=speculative,
            acceptance_length=stats.tau if speculative else None,
            engine_stats=stats.as_dict(),
        )

    def _deltas(
        self,
        run: GenerationRun,
        prompt_ids: list[int],
        options: GenerationOptions,
        prefix_len: int = 0,
    ) -> Iterator[str]:
        from engine import DecodeStats
        from engine import IncrementalDecoder

        params = self._sampling_params(options)
        speculative = options.speculative and self.has_drafter
        stats, decoder = DecodeStats(), IncrementalDecoder(self.generator.tokenizer)
        stop = self._stop_checker(params, options)
        started = time.perf_counter()
        try:
            for chunk in self.generator.stream(
                prompt_ids,
                params,
                speculative=speculative,
                stats=stats,
                stop=stop,
                prefix_len=prefix_len,
            ):
                delta = decoder.push(chunk)
                if delta:
                    yield delta
        except (RuntimeError, ValueError) as exc:
            raise BackendError(f"generation failed: {exc}") from exc
        latency = time.perf_counter() - started
        text = stop.trim_text(self.generator.tokenizer.decode(decoder.ids))
        run.output = self._output(text, prompt_ids, stats, latency, speculative)


# what a phrase's prior likelihood is measured after (a prompt that says nothing in particular)
_NEUTRAL_PROMPT = "A picture."
# how much of that prior is taken off (1: pointwise mutual information; 0: plain likelihood)
PRIOR_WEIGHT = 0.5


def _resolve_dtype(dtype: str | None, device, drafter) -> str:
    """ "auto" is the fastest precision for this device (``engine.runtime.device.fastest_dtype``:
    plain decoding in mixed precision on CPUs without native bf16); with an explicit drafter it is
    the exact default precision, so that the drafter is used."""
    from engine import fastest_dtype

    if dtype not in (None, "auto"):
        return dtype
    return "auto" if drafter is not None else fastest_dtype(device)
