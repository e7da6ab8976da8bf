"""Text that is Unicode: a lone surrogate (a non-UTF-8 byte Python kept as one, or a JSON
``"\\ud800"`` escape) is refused with a typed error before it reaches a tokenizer, a result
or a JSON answer, none of which can write it out."""

from __future__ import annotations

from promptx.errors import InvalidInputError

__all__ = ["require_unicode"]


def require_unicode(name: str, text: str) -> None:
    """Raise ``InvalidInputError`` naming ``name`` when ``text`` holds a lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{name} is not valid text: character {exc.start} is a lone surrogate "
            f"({text[exc.start]!a}; non-UTF-8 input?)"
        ) from None
