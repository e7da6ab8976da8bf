"""What a generation backend promises ``Enhancer``: chat messages in, text out.

A backend streams text deltas through a ``GenerationRun``; once the run is
exhausted its ``output`` holds the full text and statistics. A chat whose last
message is the assistant's asks for that message to be continued: the output
holds only the continuation. Backends raise
promptx errors (``BackendError``, ``PromptTooLongError``), never bare ones.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Generator, Iterator

#: chat messages; a content is a string, or a list of parts (text, image_url) for a vision model
Messages = list[dict[str, Any]]


@dataclass(frozen=True)
class GenerationOptions:
    temperature: float = 0.7
    top_p: float = 0.9
    top_k: int = 0
    repetition_penalty: float = 1.1
    max_new_tokens: int = 256
    seed: int | None = None
    stop: tuple[str, ...] = ()
    speculative: bool = True
    # stop once the text holds more words than this (what the caller would cut anyway)
    max_words: int | None = None
    # what the output may not begin to write (promptx.quality.constraint.DecodingConstraint)
    constraint: object | None = None


@dataclass
class GenerationOutput:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    latency_s: float
    tokens_per_s: float
    speculative: bool = False
    acceptance_length: float | None = None
    engine_stats: dict | None = None


class GenerationRun:
    """Iterate for text deltas; ``output`` is set once iteration is over."""

    def __init__(self, deltas: Callable[["GenerationRun"], Generator[str, None, None]]) -> None:
        """``deltas(run)``: a generator of text deltas that sets ``run.output`` before it ends."""
        self.output: GenerationOutput | None = None
        self._deltas = deltas(self)

    def __iter__(self) -> Iterator[str]:
        return self._deltas

    def close(self) -> None:
        """Stop a run that is no longer wanted (frees the backend at once); harmless once done."""
        self._deltas.close()

    def finish(self) -> GenerationOutput:
        """Drain the remaining deltas and return the output."""
        for _ in self._deltas:
            pass
        assert self.output is not None
        return self.output


class Backend(ABC):
    """What Enhancer calls. A new backend subclasses this and implements the abstract members."""

    name: str = "backend"
    model_name: str = ""
    #: "full": the profile's system prompt and few-shot examples; "short": a model tuned
    #: for promptx, given the short system prompt only (promptx.profiles.render.TUNED_SYSTEM_PROMPT)
    prompt_style: str = "full"
    #: True when ``generate_many`` decodes its requests together (Enhancer then groups
    #: concurrent callers' requests into one call); False: one after another
    batches: bool = False
    #: True when a chat ending in an assistant message is continued (the answer's opening
    #: is then the user's own words); False: the model always writes the whole answer
    continues_answers: bool = True
    #: True when the model sees images: i2v/i2i images go with the chat as ``image_url`` parts
    vision: bool = False
    #: the prompt languages the model keeps the meaning of (``promptx.text.language`` codes);
    #: None: not known, every prompt is tried (a remote model is the user's choice)
    languages: frozenset[str] | None = None

    @property
    @abstractmethod
    def context_window(self) -> int:
        """Tokens of prompt + output the model can hold."""

    @abstractmethod
    def count_prompt_tokens(self, messages: Messages) -> int:
        """Tokens the chat takes as a prompt."""

    @abstractmethod
    def start(self, messages: Messages, options: GenerationOptions) -> GenerationRun:
        """Begin generating; iterate the run for text deltas."""

    #: True when ``score_phrases`` ranks phrases by the model's likelihood (structured enhancement)
    scores_phrases: bool = False

    def score_phrases(self, prompt: str, options: list[tuple[str, str]]) -> list[float]:
        """How well each (frame, phrase) follows ``prompt`` by the model: higher fits better.
        Only where ``scores_phrases``."""
        raise NotImplementedError(f"the {self.name} backend does not score phrases")

    def generate_many(
        self, requests: list[tuple[Messages, GenerationOptions]]
    ) -> list[GenerationOutput]:
        """Every request's output, in order (here one after another)."""
        return [self.start(messages, options).finish() for messages, options in requests]
