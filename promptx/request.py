"""One checked enhance request: the caller's input and options resolved against a profile.

Validates the prompt (type, emptiness) and what of the options depends on the
profile (style), loads image facts, decides the language, seeds and whether
the prompt is long enough to pass through unchanged, and builds result
objects. No generation happens here; the options themselves are checked in
``promptx.options``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from .errors import InvalidInputError
from .languages import describe_language, identify_language
from .options import EnhanceOptions
from .profiles.render import render_messages, renders_language
from .profiles.schema import Profile, count_words
from .result import EnhancedPrompt, EnhanceStats
from .text.language import has_cjk
from .text.markup import strip_markup, without_controls
from .text.valid_text import require_unicode

MAX_PROMPT_CHARS = 20_000
# what opens a short prompt's framed answer, by task: the model writes about the user's words
# instead of continuing them ("Bond" -> "Bondage") or ignoring a lone abstract word or number
_FRAMES = {"t2i": "A picture of", "t2v": "A video of"}
_LONE_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_MEDIUM = {"t2i": "images", "t2v": "videos", "i2v": "videos", "i2i": "images"}


@dataclass
class EnhanceRequest:
    profile: Profile
    prompt: str
    image_facts: str | None
    caption: str | None
    style: str | None
    language: str  # language of the output: "en" or the input's language code
    wants_english: bool
    seed: int | None
    temperature: float
    max_new_tokens: int
    force: bool
    speculative: bool
    system_prompt: str | None
    constrain: bool = True
    image: Any = None  # the caller's image input (sent to a vision backend)
    continue_answer: bool = True  # False: the backend writes whole answers (no opening)
    encoder_counter: Any = None  # a promptx.text.encoder_count.EncoderCounter for the budget
    model_languages: frozenset[str] | None = None  # what the model can enhance (None: any)
    strength: str | None = None  # "light", "medium", "full"; None: the Enhancer's default
    source_language: str = "en"  # what the prompt is written in (``promptx.languages`` code)

    @cached_property
    def constraint(self):
        """The decoding constraint of this request (None when turned off)."""
        if not self.constrain or not self.prompt and not self.caption:
            return None
        from .quality.constraint import DecodingConstraint

        # an image nobody described may show anything: only pronouns and quotes are held back
        subjects = not (self.profile.wants_image and not self.caption)
        return DecodingConstraint.for_prompt(self.prompt, self.caption, subjects=subjects)

    def chat(self, prompt_style: str, *, vision: bool = False) -> list[dict]:
        """The chat messages of this request in ``prompt_style`` (``render_messages``); ``vision``:
        for a model that is also given the image."""
        return render_messages(
            self.profile,
            self.prompt,
            image_facts=self.image_facts,
            caption=self.caption,
            style=self.style,
            language=self.language,
            system_prompt=self.system_prompt,
            prompt_style=prompt_style,
            vision=vision,
        )

    @cached_property
    def opening(self) -> str:
        """The start of the answer that the model continues ('' when the profile lets it start):
        the user's own words, so that the text begins with their subject."""
        if (
            not self.continue_answer
            or self.profile.opening == "free"
            or not self.prompt
            or self.profile.format == "tags"
        ):
            return ""
        if (
            self.wants_english
            and self.source_language not in ("en", "other")
            and _has_letters(self.prompt)
        ):
            return ""  # a translated answer cannot start with the original words
        text = self.prompt.rstrip(" .,;:!")
        if self.profile.opening == "frame":
            return _framed(text, self.profile.task)
        return text[:1].upper() + text[1:]

    @classmethod
    def build(
        cls,
        profile: Profile,
        prompt: Any,
        options: EnhanceOptions | None = None,
        *,
        continue_answer: bool = True,
        model_languages: frozenset[str] | None = None,
    ) -> "EnhanceRequest":
        """The request for ``prompt`` with ``options`` (checked already) resolved against
        ``profile``; ``model_languages``: the prompt languages the backend's model can enhance
        (None: any)."""
        o = options or EnhanceOptions()
        text = _check_prompt(profile, prompt, has_image=o.image is not None or bool(o.caption))
        if o.caption is not None:
            require_unicode("caption", o.caption)
        facts = None
        if o.image is not None and not profile.wants_image:
            raise InvalidInputError(
                f"{profile.name} makes {_MEDIUM[profile.task]} from text and takes no image; "
                "use an image-to-video or image-to-image target (i2v, i2i)"
            )
        if o.image is not None:
            from .images import load_image_facts

            facts = load_image_facts(o.image).describe()
        if o.style is not None and o.style not in profile.styles:
            raise InvalidInputError(
                f"unknown style {o.style!r} for {profile.name}; "
                f"choose from: {', '.join(sorted(profile.styles)) or 'none'}"
            )
        wants_english = _wants_english(profile, o.language)
        source = identify_language(text) if text else "en"
        return cls(
            profile=profile,
            prompt=text,
            image_facts=facts,
            caption=o.caption.strip() if o.caption else None,
            style=o.style or profile.default_style,
            source_language=source,
            language="en" if wants_english else (o.language or _written_in(source)),
            wants_english=wants_english,
            seed=o.seed,
            temperature=profile.temperature if o.temperature is None else o.temperature,
            max_new_tokens=o.max_new_tokens or profile.max_new_tokens,
            force=o.force,
            speculative=o.speculative is not False,
            system_prompt=o.system_prompt,
            constrain=bool(o.constrain),
            image=o.image,
            continue_answer=continue_answer,
            encoder_counter=o.encoder_counter,
            model_languages=model_languages,
            strength=o.strength,
        )

    @property
    def skip_reason(self) -> str | None:
        """Why the prompt is returned unchanged without asking the model (None: it is enhanced)."""
        if self.prompt and not _has_words(self.prompt):
            return "the prompt has no words to enhance (a single character, emoji or punctuation)"
        if not self.profile.should_enhance(self.prompt, force=self.force):
            return (
                f"the prompt already has {count_words(self.prompt)} words (more than "
                f"{self.profile.enhance_threshold_words}); pass force=True to enhance it anyway"
            )
        return None if self.force else self._unread_language()

    def _unread_language(self) -> str | None:
        """Why the model cannot enhance the prompt's language, if it cannot: a small model given a
        language it does not read writes about something else (docs/quality.md)."""
        if self.model_languages is None or not _has_letters(self.prompt):
            return None
        code = self.source_language
        if code in self.model_languages:
            return None
        known = " and ".join(describe_language(c) for c in sorted(self.model_languages))
        return (
            f"the model enhances {known} prompts only and would lose the meaning of this "
            f"{describe_language(code)} one; pass force=True to enhance it anyway, "
            f"or use a backend whose model reads it"
        )

    def opened(self) -> "EnhanceRequest | None":
        """This request with the answer opened by the user's own words: the last attempt, which
        keeps the subject where free attempts lost it. Prompts under three words are framed
        instead ("A picture of bond", "The number 42"; text-to-image and text-to-video only),
        since the model would continue a lone word itself. None where the profile opens answers
        already and where no opening applies (tags, a translation, a backend that writes whole
        answers)."""
        if self.profile.opening != "free":
            return None
        mode = "prompt" if count_words(self.prompt) >= 3 else "frame"
        opened = replace(self, profile=self.profile.model_copy(update={"opening": mode}))
        return opened if opened.opening else None

    def seeds(self, retries: int) -> list[int]:
        """The seed of each attempt: the caller's seed, then its successors."""
        first = self.seed if self.seed is not None else random.SystemRandom().randrange(2**31)
        return [first + i for i in range(retries + 1)]

    def _fields(self, language: str) -> dict:
        return dict(
            negative_prompt=self.profile.negative_prompt,
            target=self.profile.name,
            template=self.profile.name,
            task=self.profile.task,
            original_prompt=self.prompt,
            language=language,
            style=self.style,
            strength=self.strength or "full",
        )

    def result(
        self,
        text: str,
        stats: EnhanceStats,
        assessment=None,
        *,
        added: dict[str, str] | None = None,
    ) -> EnhancedPrompt:
        return EnhancedPrompt(
            text=text,
            stats=stats,
            assessment=assessment,
            added=added or {},
            **self._fields(self.language),
        )

    def unchanged(
        self, reason: str, *, fallback: bool, stats: EnhanceStats | None = None, assessment=None
    ) -> EnhancedPrompt:
        """The prompt returned as it is: its language is the prompt's own."""
        return EnhancedPrompt(
            text=self.prompt,
            fallback=fallback,
            skipped=not fallback,
            reason=reason,
            stats=stats or EnhanceStats(),
            assessment=assessment,
            **self._fields(self.source_language),
        )


def _check_prompt(profile: Profile, prompt: Any, *, has_image: bool) -> str:
    if prompt is None:
        prompt = ""
    if not isinstance(prompt, str):
        raise InvalidInputError(f"prompt must be a string, not {type(prompt).__name__}")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise InvalidInputError(
            f"prompt is {len(prompt)} characters; the limit is {MAX_PROMPT_CHARS}"
        )
    require_unicode("prompt", prompt)
    text = " ".join(strip_markup(without_controls(prompt)).split())
    if not text and prompt.strip():
        raise InvalidInputError(
            "prompt holds only HTML markup or control characters (removed: a text encoder "
            "reads them as words)"
        )
    if not text and not (profile.task == "i2v"):
        raise InvalidInputError("prompt is empty")
    if not text and profile.task == "i2v" and not has_image:
        raise InvalidInputError(
            "an empty prompt needs an image or caption to animate (image-to-video)"
        )
    return text


def _wants_english(profile: Profile, language: str | None) -> bool:
    """English output: the caller asked for it, or the profile writes English (the caller's
    ``language`` was checked by ``EnhanceOptions``)."""
    if language is None:
        return profile.language == "english"
    lang = language.strip().lower()
    return lang == "english" or lang == "en" or lang.startswith(("en-", "en_"))


def _written_in(source: str) -> str:
    """The output language of a prompt kept in its own language: its code where templates can
    name it, else "keep" (the same language as the input)."""
    return source if renders_language(source) else "keep"


def _has_words(text: str) -> bool:
    """Two letters or digits at least, or one CJK character (a word on its own)."""
    return sum(c.isalnum() for c in text) >= 2 or has_cjk(text)


def _has_letters(text: str) -> bool:
    """Text with a language at all ("42" and "!!" have none)."""
    return any(c.isalpha() for c in text)


def _framed(text: str, task: str) -> str:
    """The opening that frames a short prompt: "The number 42", "A picture of bond" ('' for a
    task without a frame)."""
    frame = _FRAMES.get(task)
    if frame is None:
        return ""
    return f"The number {text}" if _LONE_NUMBER.fullmatch(text) else f"{frame} {text}"
