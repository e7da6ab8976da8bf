"""HTML markup in a prompt or in a model's text: removed, since a text encoder reads it as words.

``strip_markup`` drops the tags of HTML elements (``<b>``, ``</p>``, ``<span class="x">``,
``<img src=...>``), HTML comments, and whole ``<script>``/``<style>``/``<iframe>`` elements
with their content (code, not a description). ``<br>``, ``</p>``, ``<hr>`` and ``</div>``
become line breaks. Text in angle brackets that is not an HTML element stays:
``<lora:name:0.8>`` and ``<subject>`` are prompt syntax. Not here: markdown (``cleanup``).
"""

from __future__ import annotations

import re

__all__ = ["strip_markup"]

_ELEMENTS = ("a|abbr|b|big|blockquote|body|br|button|center|code|del|div|em|embed|font|form|h[1-6]|head|hr|html|"
             "i|img|input|ins|label|li|link|mark|meta|object|ol|p|pre|q|s|script|small|span|strike|strong|style|"
             "sub|sup|svg|table|tbody|td|th|thead|title|tr|tt|u|ul|video|audio|source|iframe|noscript|frame")
_CODE_ELEMENT = re.compile(r"<(script|style|iframe|noscript)\b[^>]*>.*?(?:</\1\s*>|$)", re.I | re.S)
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
_TAG = re.compile(rf"</?(?:{_ELEMENTS})(?:\s[^<>]*)?/?>", re.I)
_BREAKS = ("<br", "</p", "<hr", "</div", "</li", "</h")


def strip_markup(text: str) -> str:
    """``text`` without HTML tags, comments and code elements (see the module's docstring)."""
    if "<" not in text:
        return text
    text = _COMMENT.sub("", _CODE_ELEMENT.sub("", text))
    return _TAG.sub(lambda m: "\n" if m.group(0).lower().startswith(_BREAKS) else "", text)
