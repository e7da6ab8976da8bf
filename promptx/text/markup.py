"""HTML markup and terminal control codes in a prompt or in a model's text: removed, since a
text encoder reads them as words (or bytes).

``without_controls`` drops ANSI escape sequences and turns control characters (NUL, BEL, C1
codes, ...) into spaces; tabs and line breaks stay (they are spaces already).

``strip_markup`` drops the tags of HTML elements (``<b>``, ``</p>``, ``<span class="x">``,
``<img src=...>``), HTML comments, and whole ``<script>``/``<style>``/``<iframe>`` elements
with their content (code, not a description; an unclosed one loses its tag only), repeating until
none is left (so that ``<scr<b>ipt>`` cannot become ``<script>``). The tags of block elements
(``<br>``, ``<p>``, ``</div>``, ``<li>``, ``<td>`` ...) become line breaks, so the words on either
side stay apart. Text in angle brackets that is not an HTML element stays: ``<lora:name:0.8>`` and
``<subject>`` are prompt syntax. Not here: markdown (``cleanup``).
"""

from __future__ import annotations

import re

__all__ = ["strip_markup", "without_controls"]

# block elements become a line break (the words on either side stay apart), inline ones nothing
_BLOCK_ELEMENTS = (
    "br|p|hr|div|li|ul|ol|h[1-6]|tr|td|th|table|tbody|thead|blockquote|pre|center|body|html|head|"
    "title|form|frame|video|audio|source|img|input|button|label"
)
_INLINE_ELEMENTS = (
    "a|abbr|b|big|code|del|em|embed|font|i|ins|link|mark|meta|object|q|s|small|span|strike|strong|"
    "sub|sup|svg|tt|u"
)
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_CODE = "script|style|iframe|noscript"
_CODE_ELEMENT = re.compile(rf"<({_CODE})\b[^>]*>.*?</\1\s*>", re.I | re.S)
_CODE_TAG = re.compile(rf"</?(?:{_CODE})\b[^<>]*>", re.I)
_COMMENT = re.compile(r"<!--.*?-->|<!--", re.S)
_BLOCK_TAG = re.compile(rf"</?(?:{_BLOCK_ELEMENTS})(?:\s[^<>]*)?/?>", re.I)
_INLINE_TAG = re.compile(rf"</?(?:{_INLINE_ELEMENTS})(?:\s[^<>]*)?/?>", re.I)
# a text whose tags keep revealing new ones is not a prompt: stop after this many passes
MAX_PASSES = 8


def strip_markup(text: str) -> str:
    """``text`` without HTML tags, comments and code elements (see the module's docstring)."""
    for _ in range(MAX_PASSES):
        if "<" not in text:
            return text
        stripped = _CODE_ELEMENT.sub("", _COMMENT.sub("", text))
        stripped = _INLINE_TAG.sub("", _BLOCK_TAG.sub("\n", stripped))
        if stripped == text:
            return _CODE_TAG.sub("", text)  # an unclosed code element: its tag goes
        text = stripped
    return text.replace("<", " ").replace(">", " ")


def without_controls(text: str) -> str:
    """``text`` without ANSI escape sequences, control characters as spaces (tabs and line breaks
    stay)."""
    return _CONTROL.sub(" ", _ANSI.sub("", text))
