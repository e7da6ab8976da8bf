"""One checked enhance request: the caller's input and options resolved against a profile.

Validates the prompt (type, emptiness), loads image facts, decides the
language, seeds and whether the prompt is long enough to pass through
unchanged, and builds result objects. No generation happens here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .errors import InvalidInputError
from .profiles.schema import Profile, count_words
from .result import EnhancedPrompt, EnhanceStats
from .text.language import detect_language

MAX_PROMPT_CHARS = 20_000


@dataclass
class EnhanceRequest:
    profile: Profile
    prompt: str
    image_facts: str | None
    caption: str | None
    style: str | None
    language: str                 # language of the output: "en" or the input's language code
    wants_english: bool
    seed: int | None
    temperature: float
    max_new_tokens: int
    force: bool
    speculative: bool
    system_prompt: str | None
    constrain: bool = True
    image: Any = None             # the caller's image input (sent to a vision backend)
    continue_answer: bool = True  # False: the backend writes whole answers (no opening)
    encoder_counter: Any = None   # a promptx.text.encoder_count.EncoderCounter for the budget

    @cached_property
    def constraint(self):
        """The decoding constraint of this request (None when turned off)."""
        if not self.constrain or not self.prompt and not self.caption:
            return None
        from .quality.constraint import DecodingConstraint

        # an image nobody described may show anything: only pronouns and quotes are held back
        subjects = not (self.profile.wants_image and not self.caption)
        return DecodingConstraint.for_prompt(self.prompt, self.caption, subjects=subjects)

    @cached_property
    def opening(self) -> str:
        """The start of the answer that the model continues ('' when the profile lets it start):
        the user's own words, so that the text begins with their subject."""
        if (not self.continue_answer or self.profile.opening != "prompt" or not self.prompt
                or self.profile.format == "tags"):
            return ""
        if self.wants_english and detect_language(self.prompt) != "en":
            return ""                     # a translated answer cannot start with the original words
        text = self.prompt.rstrip(" .,;:!")
        return text[:1].upper() + text[1:]

    @classmethod
    def build(cls, profile: Profile, prompt: Any, *, image=None, caption: str | None = None,
              seed: int | None = None, temperature: float | None = None, max_new_tokens: int | None = None,
              style: str | None = None, language: str | None = None, force: bool = False,
              speculative: bool = True, system_prompt: str | None = None,
              constrain: bool = True, continue_answer: bool = True,
              encoder_counter=None) -> "EnhanceRequest":
        text = _check_prompt(profile, prompt, has_image=image is not None or bool(caption))
        facts = None
        if image is not None:
            from .images import load_image_facts

            facts = load_image_facts(image).describe()
        if caption is not None and not isinstance(caption, str):
            raise InvalidInputError("caption must be a string")
        if style is not None and style not in profile.styles:
            raise InvalidInputError(f"unknown style {style!r} for {profile.name}; "
                                    f"choose from: {', '.join(sorted(profile.styles)) or 'none'}")
        if temperature is not None and not 0 <= temperature <= 2:
            raise InvalidInputError("temperature must be between 0 and 2")
        if max_new_tokens is not None and not 1 <= max_new_tokens <= 4096:
            raise InvalidInputError("max_new_tokens must be between 1 and 4096")
        if seed is not None and (not isinstance(seed, int) or seed < 0):
            raise InvalidInputError("seed must be a non-negative integer")
        wants_english = _wants_english(profile, language)
        source_lang = detect_language(text) if text else "en"
        return cls(profile=profile, prompt=text, image_facts=facts, caption=caption.strip() if caption else None,
                   style=style or profile.default_style, language="en" if wants_english else (language or source_lang),
                   wants_english=wants_english, seed=seed,
                   temperature=profile.temperature if temperature is None else temperature,
                   max_new_tokens=max_new_tokens or profile.max_new_tokens, force=force,
                   speculative=speculative, system_prompt=system_prompt, constrain=bool(constrain),
                   image=image, continue_answer=continue_answer, encoder_counter=encoder_counter)

    @property
    def skip_reason(self) -> str | None:
        if self.profile.should_enhance(self.prompt, force=self.force):
            return None
        return (f"the prompt already has {count_words(self.prompt)} words (more than "
                f"{self.profile.enhance_threshold_words}); pass force=True to enhance it anyway")

    def seeds(self, retries: int) -> list[int]:
        """The seed of each attempt: the caller's seed, then its successors."""
        first = self.seed if self.seed is not None else random.SystemRandom().randrange(2**31)
        return [first + i for i in range(retries + 1)]

    def _fields(self) -> dict:
        return dict(negative_prompt=self.profile.negative_prompt, target=self.profile.name,
                    template=self.profile.name, task=self.profile.task, original_prompt=self.prompt,
                    language=self.language, style=self.style)

    def result(self, text: str, stats: EnhanceStats, assessment=None) -> EnhancedPrompt:
        return EnhancedPrompt(text=text, stats=stats, assessment=assessment, **self._fields())

    def unchanged(self, reason: str, *, fallback: bool, stats: EnhanceStats | None = None,
                  assessment=None) -> EnhancedPrompt:
        return EnhancedPrompt(text=self.prompt, fallback=fallback, skipped=not fallback, reason=reason,
                              stats=stats or EnhanceStats(), assessment=assessment, **self._fields())


def _check_prompt(profile: Profile, prompt: Any, *, has_image: bool) -> str:
    if prompt is None:
        prompt = ""
    if not isinstance(prompt, str):
        raise InvalidInputError(f"prompt must be a string, not {type(prompt).__name__}")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise InvalidInputError(f"prompt is {len(prompt)} characters; the limit is {MAX_PROMPT_CHARS}")
    text = " ".join(prompt.split())
    if not text and not (profile.task == "i2v"):
        raise InvalidInputError("prompt is empty")
    if not text and profile.task == "i2v" and not has_image:
        raise InvalidInputError("an empty prompt needs an image or caption to animate (image-to-video)")
    return text


def _wants_english(profile: Profile, language: str | None) -> bool:
    if language is None:
        return profile.language == "english"
    lang = language.lower()
    if lang in ("en", "english"):
        return True
    if lang == "keep":
        return False
    if not lang.isalpha() or len(lang) > 12:
        raise InvalidInputError(f"language must be 'en', 'keep' or a language code, not {language!r}")
    return False
