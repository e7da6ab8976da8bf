"""Turn a profile and the user's input into chat messages for the rewriter LLM.

Output: ``[system, (user, assistant) per few-shot example, final user]`` as
``{"role": ..., "content": ...}`` dicts, ready for a chat template. This
module does not tokenize, call a model or post-process the model's answer.

Substitution is data-only: one regex pass replaces ``{name}`` placeholders
from a fixed whitelist; values (the user's prompt included) are inserted
literally and never re-expanded, so braces in user text are harmless.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from promptx.errors import InvalidInputError
from promptx.profiles.schema import PLACEHOLDER_TOKEN, Profile, template_placeholders

__all__ = [
    "DEFAULT_I2V_PROMPT",
    "PROMPT_STYLES",
    "TUNED_SYSTEM_PROMPT",
    "VISION_GUIDANCE",
    "image_line",
    "language_rule",
    "renders_language",
    "render_messages",
    "style_guidance",
    "substitute",
]

#: The system prompt of a model tuned for promptx (``prompt_style="short"``): the
#: profile's own description says what to write; the craft is in the weights.
TUNED_SYSTEM_PROMPT = (
    "You write prompts for {generator}. {description} Keep the user's subject, counts, colours "
    "and quoted text; add only appearance, setting, light, camera and style. "
    "Write {min_words} to {max_words} words. {language_rule}\n{style}"
)
PROMPT_STYLES = ("full", "short")

#: What a model that sees the input image is told, by task; a profile's ``vision_guidance``
#: replaces it. Appended to the system prompt when the image goes with the chat.
VISION_GUIDANCE = {
    "i2v": (
        "The image is attached: you can see it. Name its subjects, setting and style as they "
        "appear, then describe the motion. Where the user's words contradict what the image "
        "shows, the image decides what is there; the user decides what moves."
    ),
    "i2i": (
        "The image is attached: you can see it. Name the parts of the image that the edit "
        "touches, say exactly how they change, and say that the rest stays as it is. Where the "
        "user's words contradict the image, describe the image as it really is."
    ),
}

#: The instruction used when an image-to-video prompt is left empty.
DEFAULT_I2V_PROMPT = "Animate the image with natural motion that suits the scene."

_ENGLISH = "Write in English."
_KEEP = "Write in the same language as the input."
_LANGUAGE_NAMES = {
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "fr": "French",
    "de": "German",
    "es": "Spanish",
    "it": "Italian",
    "pt": "Portuguese",
    "ru": "Russian",
    "nl": "Dutch",
    "pl": "Polish",
    "tr": "Turkish",
    "ar": "Arabic",
    "hi": "Hindi",
    "vi": "Vietnamese",
    "th": "Thai",
    "id": "Indonesian",
    "uk": "Ukrainian",
    "sv": "Swedish",
    "cs": "Czech",
    "ro": "Romanian",
    "hu": "Hungarian",
    "da": "Danish",
    "no": "Norwegian",
    "nb": "Norwegian",
    "fi": "Finnish",
    "el": "Greek",
    "he": "Hebrew",
    "ms": "Malay",
    "sw": "Swahili",
}


def substitute(template: str, values: Mapping[str, str]) -> str:
    """Replace ``{name}`` from ``values`` in one pass; ``{{``/``}}`` become braces.

    The template must already be validated; a name missing from ``values``
    raises KeyError (a bug, not user error).
    """

    def one(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return values[match.group(1)]

    return PLACEHOLDER_TOKEN.sub(one, template)


def style_guidance(profile: Profile, style: str | None) -> str:
    """The style sentence for ``style`` (or the profile's default), or ""."""
    if style is None:
        style = profile.default_style
        if style is None:
            return ""
    key = style.strip().lower()
    if key not in profile.styles:
        known = ", ".join(sorted(profile.styles)) or "none"
        raise InvalidInputError(
            f"unknown style {style!r} for target {profile.name!r}; available: {known}"
        )
    return profile.styles[key]


def renders_language(language: str) -> bool:
    """A language the output-language sentence can name: "en"/"english", "keep" ("auto",
    "same"), a code it knows with an optional region ("pt-BR", "zh_CN") or that language's name."""
    return _language_sentence(language) is not None


def _language_sentence(language: str) -> str | None:
    choice = language.strip().lower()
    if choice in ("en", "english") or choice.startswith(("en-", "en_")):
        return _ENGLISH
    if choice in ("keep", "auto", "same"):
        return _KEEP
    name = _LANGUAGE_NAMES.get(re.split(r"[-_]", choice)[0])
    if name is None and choice in {n.lower() for n in _LANGUAGE_NAMES.values()}:
        name = choice.capitalize()  # a language name such as "german"
    return None if name is None else f"Write in {name}."


def language_rule(profile: Profile, language: str | None = None) -> str:
    """The output-language sentence: "en"/"english", "keep" or a code such as "zh"."""
    sentence = _language_sentence(language or profile.language)
    if sentence is None:
        raise InvalidInputError(
            f"unknown language {language!r}; use 'en', 'keep', a code such as 'es' "
            f"(one of {', '.join(sorted(_LANGUAGE_NAMES))}) or that language's name"
        )
    return sentence


def image_line(image_facts: str | None, caption: str | None) -> str:
    """One line about the input image.

    "Image: a red bike by a wall. Format: 1024x768, landscape (4:3)." with both,
    "Image: <caption or facts>." with one, a placeholder line with neither.
    """
    facts = (image_facts or "").strip().rstrip(".")
    text = (caption or "").strip().rstrip(".")
    if facts and text:
        return f"Image: {text}. Format: {facts}."
    if facts or text:
        return f"Image: {facts or text}."
    return "Image: no description given."


def _checked(template: str, what: str) -> set[str]:
    try:
        return template_placeholders(template)
    except ValueError as exc:
        raise InvalidInputError(f"{what}: {exc}") from None


def _tidy(text: str) -> str:
    """Strip line ends and collapse the blank lines an empty placeholder leaves."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines))


def render_messages(
    profile: Profile,
    prompt: str,
    *,
    image_facts: str | None = None,
    caption: str | None = None,
    style: str | None = None,
    language: str | None = None,
    system_prompt: str | None = None,
    prompt_style: str = "full",
    vision: bool = False,
) -> list[dict[str, str]]:
    """Build the chat for rewriting ``prompt`` with ``profile``.

    ``image_facts`` (e.g. "1024x768, landscape (4:3)") and ``caption`` describe
    the input image of an i2v/i2i profile; other profiles reject them. An
    empty i2v prompt becomes DEFAULT_I2V_PROMPT; other empty prompts raise
    InvalidInputError, as do an unknown style or language. ``system_prompt``
    replaces the profile's own (and is substituted the same way). A chosen
    style or language override is appended to the system prompt when it has
    no ``{style}`` / ``{language_rule}`` placeholder. ``prompt_style="short"``
    (a model tuned for promptx) uses TUNED_SYSTEM_PROMPT and no few-shot examples.
    ``vision=True`` (the model sees the image, sent by the caller) adds the profile's
    vision guidance to the system prompt.
    """
    if prompt_style not in PROMPT_STYLES:
        raise InvalidInputError(
            f"unknown prompt style {prompt_style!r}; use one of {', '.join(PROMPT_STYLES)}"
        )
    text = (prompt or "").strip()
    if not text:
        if profile.task != "i2v":
            raise InvalidInputError(f"empty prompt for target {profile.name!r}")
        text = DEFAULT_I2V_PROMPT
    if not profile.wants_image and (image_facts or caption):
        raise InvalidInputError(f"target {profile.name!r} ({profile.task}) takes no image")

    short = prompt_style == "short"
    if system_prompt is None:
        system = TUNED_SYSTEM_PROMPT if short else profile.system_prompt
    else:
        system = system_prompt
    if not system.strip():
        raise InvalidInputError("system_prompt override is empty")
    used = _checked(system, "system_prompt override")

    values = {
        "min_words": str(profile.length.min_words),
        "max_words": str(profile.length.max_words),
        "generator": profile.generator,
        "description": profile.description,
        "language_rule": language_rule(profile, language),
        "style": style_guidance(profile, style),
    }
    final = {**values, "prompt": text, "image": ""}
    if profile.wants_image:
        final["image"] = image_line(image_facts, caption)

    content = substitute(system, final)
    if values["style"] and "style" not in used:
        content += "\n" + values["style"]
    if language and "language_rule" not in used:
        content += "\n" + values["language_rule"]
    if vision:
        if not profile.wants_image:
            raise InvalidInputError(f"target {profile.name!r} ({profile.task}) takes no image")
        content += "\n" + (profile.vision_guidance or VISION_GUIDANCE[profile.task])
    messages = [{"role": "system", "content": _tidy(content)}]

    for ex in () if short else profile.examples:
        shot = {**values, "style": "", "prompt": ex.input, "image": ""}
        if profile.wants_image:
            shot["image"] = image_line(None, ex.image)
        messages.append({"role": "user", "content": _tidy(substitute(profile.user_template, shot))})
        messages.append({"role": "assistant", "content": ex.output})

    messages.append({"role": "user", "content": _tidy(substitute(profile.user_template, final))})
    return messages
