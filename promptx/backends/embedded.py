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
from ..models import ModelSource, prepare, resolve_model
from .base import GenerationOptions, GenerationOutput, GenerationRun, Messages


class EmbeddedBackend:
    name = "embedded"

    def __init__(self, model: str | Path | None = None, *, dtype: str | None = None,
                 device: str | None = None, drafter: str | Path | None = None, quiet: bool = False) -> None:
        self.source: ModelSource = resolve_model(model)
        self.model_name = self.source.name
        directory = prepare(self.source, quiet=quiet)
        try:
            from engine.device import default_device
            from engine.generator import Generator

            self.generator = Generator.from_dir(directory, dtype=dtype, device=device or default_device())
        except (ValueError, OSError, RuntimeError) as exc:
            raise ModelError(f"cannot load model {self.model_name}: {exc}") from exc
        self._attach_drafter(drafter)

    def _attach_drafter(self, drafter: str | Path | None) -> None:
        from .drafters import find_drafter, load_drafter_for

        path = Path(drafter) if drafter is not None else find_drafter(self.generator.model)
        if path is not None:
            self.generator.drafter, self.generator.tree_config = load_drafter_for(self.generator.model, path)

    @property
    def has_drafter(self) -> bool:
        return self.generator.can_speculate

    @property
    def context_window(self) -> int:
        return self.generator.context_window

    def encode(self, messages: Messages) -> list[int]:
        return self.generator.tokenizer.encode_chat(messages)

    def count_prompt_tokens(self, messages: Messages) -> int:
        return len(self.encode(messages))

    def start(self, messages: Messages, options: GenerationOptions) -> GenerationRun:
        prompt_ids = self.encode(messages)
        if len(prompt_ids) + options.max_new_tokens > self.context_window:
            raise PromptTooLongError(
                f"the prompt takes {len(prompt_ids)} tokens and the answer up to {options.max_new_tokens}; "
                f"the model's context holds {self.context_window}: shorten the prompt")
        return GenerationRun(lambda run: self._deltas(run, prompt_ids, options))

    def _deltas(self, run: GenerationRun, prompt_ids: list[int], options: GenerationOptions) -> Iterator[str]:
        from engine.sampling import SamplingParams
        from engine.stats import DecodeStats
        from engine.tokenizer import IncrementalDecoder

        params = SamplingParams(temperature=options.temperature, top_p=options.top_p, top_k=options.top_k,
                                repetition_penalty=options.repetition_penalty,
                                max_new_tokens=options.max_new_tokens, seed=options.seed,
                                stop_strings=options.stop)
        speculative = options.speculative and self.has_drafter
        stats, decoder = DecodeStats(), IncrementalDecoder(self.generator.tokenizer)
        stop = self.generator.stop_checker(params)
        started = time.perf_counter()
        try:
            for chunk in self.generator.stream(prompt_ids, params, speculative=speculative,
                                               stats=stats, stop=stop):
                delta = decoder.push(chunk)
                if delta:
                    yield delta
        except (RuntimeError, ValueError) as exc:
            raise BackendError(f"generation failed: {exc}") from exc
        latency = time.perf_counter() - started
        text = stop.trim_text(self.generator.tokenizer.decode(decoder.ids))
        run.output = GenerationOutput(
            text=text, prompt_tokens=len(prompt_ids), completion_tokens=stats.new_tokens,
            finish_reason=stats.finish_reason or "length", latency_s=latency,
            tokens_per_s=stats.new_tokens / latency if latency > 0 else 0.0,
            speculative=speculative, acceptance_length=stats.tau if speculative else None,
            engine_stats=stats.as_dict())
