"""Turn a small model's raw output into one usable prompt.

What it does: strips preambles ("Sure, here is an enhanced prompt:"),
trailing chatter ("I hope this helps"), markdown and wrapping quotes; cuts
degenerate repetition loops; flattens paragraphs; de-duplicates tag lists;
fits the result into a word budget and an *estimated* text-encoder token
budget, cutting at sentence (or tag) boundaries. ``clean_output`` chains it all.

What it is not: a judge of quality (``promptx.text.validate`` decides whether the
result is acceptable) and not a tokenizer (token counts are estimates). Pure
string functions: no model, no torch, no I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from promptx.errors import InvalidInputError
from promptx.text.language import CJK_CHARS, count_words, is_cjk_char
from promptx.text.markup import strip_markup

if TYPE_CHECKING:  # pragma: no cover
    from promptx.text.encoder_count import EncoderCounter

__all__ = [
    "CleanResult",
    "STOPWORDS",
    "clean_output",
    "count_words",
    "cut_repetition",
    "dedupe_tags",
    "estimate_encoder_tokens",
    "fit_length",
    "strip_wrapping",
    "to_one_paragraph",
]

Format = Literal["paragraph", "tags", "instruction"]

STOPWORDS = frozenset(
    """a an the and or but nor so yet of in on at to for from by with without
    into onto over under above below behind beside between among through
    across along around near off up down out as than then there here this
    that these those it its is are was were be been being am has have had do
    does did will would can could should may might must shall not no very
    just also too only all any some each every both either neither such own
    same other more most much many few while when where which who whom whose
    what why how if else about against during before after again further
    once i me my we our you your he him his she her they them their one""".split()
)

_CJK = CJK_CHARS
_UNIT = re.compile(f"[{_CJK}]|[^\\s{_CJK}]+")
_SENT_END = re.compile(r"[.!?…]+[\"'”’)\]」』]*(?=\s|$)|[。！？]+[\"'”’)\]」』]*|\n+")
_CLAUSE = re.compile(r"[，、；：]|[,;:](?=\s|$)|\s[—–-]\s")
_BOUNDARY = re.compile(r"[。！？，；、]|[.!?,;:…](?=\s|$|[\"'”’)\]」』])")
_TERMINAL = ".!?。！？…"
_CLOSERS = "\"'”’)]」』"
_TRAILING_JUNK = " \t\n,;:，；：、-—–"


# --------------------------------------------------------------------------- units


@dataclass(frozen=True)
class _Unit:
    norm: str  # lowercased, punctuation removed; "" for pure punctuation
    start: int
    end: int


def _units(text: str) -> list[_Unit]:
    """Words (whitespace-separated) and single CJK characters, with spans."""
    out = []
    for m in _UNIT.finditer(text):
        norm = re.sub(r"[\W_]+", "", m.group().lower())
        if norm:
            out.append(_Unit(norm, m.start(), m.end()))
    return out


def _sentence_ends(text: str, *, newlines: bool = True) -> list[int]:
    """Character offsets just after each sentence (the last one may be the end).

    Line breaks end sentences too unless ``newlines`` is False.
    """
    ends = [
        m.end()
        for m in _SENT_END.finditer(text)
        if text[: m.end()].strip() and (newlines or not m.group().startswith("\n"))
    ]
    if not ends or text[ends[-1] :].strip():
        ends.append(len(text))
    return ends


def _sentences(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for end in _sentence_ends(text):
        if text[start:end].strip():
            spans.append((start, end))
        start = end
    return spans


# ---------------------------------------------------------------- strip_wrapping

_ACK = re.compile(
    r"^(?:sure(?: thing)?|certainly|of course|absolutely|okay|ok|alright|all right|great|"
    r"gladly|no problem|got it|yes|here you go|here it is)\s*[!.,:;—–-]+\s*",
    re.I,
)
_PREAMBLE_KEYWORD = re.compile(
    r"\b(?:prompts?|version|description|rewrite|rewritten|enhanc\w*|improved|expanded|"
    r"refined|revised|upsampled|instruction|output|result|answer|response)\b",
    re.I,
)
# a heading word the model puts before the text ("Motion: The bubbles swirl ...")
_SECTION_LABEL = re.compile(
    r"^(?:motion|scene|description|video|image|visuals?|subject|setting|overview)"
    r"[ \t]*[:：][ \t]*(?=\S)",
    re.I,
)
_PREAMBLE_START = re.compile(  # a clause that ends with ":"
    r"^(?:here\b|here's|below\b|this is\b|the following\b|i've\b|i have\b|i'll\b|i will\b|"
    r"let me\b|let's\b|i'd be happy\b|i would be happy\b|happy to help\b|i can\b|what a\b|"
    r"great (?:prompt|idea)\b)",
    re.I,
)
_PREAMBLE_SENTENCE = re.compile(  # a whole first sentence, e.g. "Here is an enhanced prompt."
    r"^(?:here(?:'s| is| are)\b|below is\b|i(?:'ve| have) (?:enhanced|expanded|rewritten|"
    r"improved|created|written)\b|i'll\b|i will\b|let me\b|i'd be happy\b|i would be happy\b|"
    r"happy to help\b|i can help\b|great (?:prompt|idea)\b|what a\b)",
    re.I,
)
_LABEL_LINE = re.compile(
    r"^[ \t]*(?:the[ \t]+)?(?:enhanced|improved|rewritten|expanded|final|refined|revised|"
    r"upsampled|extended|new|output)[ \t]*(?:prompt|version|description|caption|instruction)?"
    r"[ \t]*[:：]",
    re.I | re.M,
)
_CHATTER = re.compile(
    r"^\(?\s*(?:i hope|hope (?:this|that|you)|let me know|feel free|if you(?:'d| would)? "
    r"(?:like|want|need|have|prefer)|would you like|do you want|is there anything|enjoy\b|"
    r"happy (?:creating|generating|prompting)|note\s*:|please note|word count|\d+ words\)|"
    r"this (?:enhanced |improved |revised |rewritten |detailed |expanded |new |updated )?"
    r"(?:prompt|version|description)\b|the (?:enhanced|improved|revised|rewritten|above) "
    r"(?:prompt|version|description)\b|i(?:'ve| have)? (?:added|expanded|enhanced|included|"
    r"kept|made|focused)\b|in this (?:prompt|version)\b|alternatively\b|"
    r"(?:option|variation|version) \d|another (?:option|version|variation)\b|"
    r"negative prompt\s*[:：])",
    re.I,
)
_QUOTE_PAIRS = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’", "「": "」", "『": "』", "«": "»"}


def _strip_markdown(text: str) -> str:
    text = strip_markup(text)
    lines = []
    for line in text.split("\n"):
        if re.match(r"^\s*(```|~~~)", line):  # code fence: keep the content only
            continue
        if re.match(r"^\s*([-*_])(\s*\1){2,}\s*$", line):  # horizontal rule
            continue
        line = re.sub(r"^\s*>\s?", "", line)  # block quote
        line = re.sub(r"^\s*(?:[-*+•·]|\d{1,2}[.)])\s+", "", line)  # bullets
        lines.append(line)
    headings = [i for i, ln in enumerate(lines) if re.match(r"^\s{0,3}#{1,6}\s", ln)]
    has_body = any(ln.strip() for i, ln in enumerate(lines) if i not in headings)
    lines = [
        re.sub(r"^\s{0,3}#{1,6}\s+", "", ln) if i in headings else ln
        for i, ln in enumerate(lines)
        if not (has_body and i in headings)
    ]
    t = "\n".join(lines)
    t = re.sub(r"\[([^\]\n]+)\]\([^)\s]+\)", r"\1", t)  # links
    t = re.sub(r"\*\*(.+?)\*\*|__(.+?)__", lambda m: m.group(1) or m.group(2), t, flags=re.S)
    t = re.sub(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])", r"\1", t)
    t = re.sub(r"(?<!\w)_(?=\S)(.+?)(?<=\S)_(?!\w)", r"\1", t)
    t = re.sub(r"`([^`\n]+)`", r"\1", t)
    t = t.replace("**", "")
    return t.strip()


def _drop_preamble(text: str) -> str:
    t = _ACK.sub("", text, count=1).lstrip()
    m = _LABEL_LINE.search(t)  # "Original: ...\nEnhanced prompt: ..." -> keep the latter
    if m and m.start() > 0 and len(t[: m.start()].split()) <= 40:
        t = t[m.start() :]
    label = _SECTION_LABEL.match(t)
    if label:
        return t[label.end() :]
    m = re.match(r"^([^\n:：\"“「]{0,200}?)[:：]\s*", t)
    if m and len(m.group(1).split()) <= 20:
        clause = m.group(1).strip()
        if _PREAMBLE_START.match(clause) or _PREAMBLE_KEYWORD.search(clause):
            return t[m.end() :].lstrip()
    spans = _sentences(t)
    if len(spans) > 1:
        first = t[spans[0][0] : spans[0][1]].strip()
        if _PREAMBLE_SENTENCE.match(first) and re.search(
            r"prompt|version|description|help|enhanc|rewrit|detail", first, re.I
        ):
            return t[spans[0][1] :].lstrip()
    return t


def _drop_chatter(text: str) -> str:
    spans = _sentences(text)
    for start, _end in spans[1:]:
        if _CHATTER.match(text[start:].lstrip()):
            return text[:start].rstrip()
    return text


def _quote_roles(inner: str, q: str) -> list[str]:
    """'open'/'close' for each straight quote in ``inner`` (apostrophes skipped)."""
    roles = []
    for i, ch in enumerate(inner):
        if ch != q:
            continue
        prev = inner[i - 1] if i else " "
        nxt = inner[i + 1] if i + 1 < len(inner) else " "
        if prev.isalnum() and nxt.isalnum():
            continue  # apostrophe: cat's
        roles.append("open" if (prev.isspace() or prev in "([{") and not nxt.isspace() else "close")
    return roles


def _balanced(inner: str, opener: str, closer: str) -> bool:
    if opener == closer:
        roles = _quote_roles(inner, opener)
        if len(roles) % 2:
            return False
        depth = 0
        for r in roles:
            depth += 1 if r == "open" else -1
            if depth < 0:
                return False
        return depth == 0
    depth = 0
    for ch in inner:
        depth += (ch == opener) - (ch == closer)
        if depth < 0:
            return False
    return depth == 0


def _unwrap_quotes(text: str) -> str:
    t, tail = text.strip(), ""
    if len(t) > 2 and t[-1] in ".!?。！？" and t[-2] in _CLOSERS:
        t, tail = t[:-1], t[-1]
    if len(t) < 2:
        return text.strip()
    opener, closer = t[0], t[-1]
    if opener in _QUOTE_PAIRS and closer == _QUOTE_PAIRS[opener]:
        inner = t[1:-1]
        if inner.strip() and _balanced(inner, opener, closer):
            return inner.strip() + tail
    t = text.strip()
    if t[0] in _QUOTE_PAIRS:  # a lone opening quote (output cut mid-quote)
        q, close = t[0], _QUOTE_PAIRS[t[0]]
        rest = t[1:]
        others = _quote_roles(rest, q) if q == close else [c for c in rest if c == close]
        if not others:
            return rest.strip()
    for q, close in _QUOTE_PAIRS.items():
        if t[-1] == close and close != "'":  # a lone closing quote
            body = t[:-1]
            others = _quote_roles(body, q) if q == close else [c for c in body if c == q]
            if not others:
                return body.strip()
            break
    return t


def strip_wrapping(text: str) -> str:
    """Remove preambles, trailing chatter, markdown and wrapping quotes.

    Quotes inside the text (in-image text such as ``a sign that reads "OPEN"``)
    are kept; only quotes around the whole prompt go. Paragraph breaks are
    kept (see ``to_one_paragraph``). Returns "" if nothing but chatter is left.
    """
    t = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    t = _strip_markdown(t)
    for _ in range(6):
        before = t
        t = _unwrap_quotes(_drop_chatter(_drop_preamble(t)))
        if t == before:
            break
    return t


# ---------------------------------------------------------------- cut_repetition


def _copies_needed(period: int, units: list[_Unit]) -> int:
    if period == 1:
        return 4
    if period < 4:
        return 4 if all(len(u.norm) == 1 and is_cjk_char(u.norm) for u in units) else 3
    return 3 if period < 8 else 2


def _find_loop(units: list[_Unit], max_period: int = 80) -> tuple[int, int, int] | None:
    """Earliest periodic run: (start, period, end_exclusive) in unit indices."""
    toks = [u.norm for u in units]
    n, best = len(toks), None
    for p in range(1, min(max_period, n // 2) + 1):
        run = [0] * (n + 1)
        for j in range(n - p - 1, -1, -1):
            run[j] = run[j + 1] + 1 if toks[j] == toks[j + p] else 0
        for j in range(n - p):
            if best is not None and j >= best[0]:
                break
            if run[j] and run[j] >= p * (_copies_needed(p, units[j : j + p]) - 1):
                best = (j, p, j + p + run[j])
                break
    return best


def _loop_cut(text: str, units: list[_Unit], start: int, p: int, end: int) -> str:
    if end < len(units):  # a stutter with real text after it: drop the extra copies
        full = (end - start) // p
        return text[: units[start + p].start] + text[units[start + full * p].start :]
    first_end = units[start + p - 1]
    limit = units[min(start + 2 * p - 1, len(units) - 1)].end
    b = _BOUNDARY.search(text, first_end.start, limit)
    return text[: b.end() if b else first_end.end]


def _sentence_dup_cut(text: str) -> int | None:
    seen = set()
    for start, end in _sentences(text):
        key = " ".join(u.norm for u in _units(text[start:end]))
        if len(key.split()) >= 3:
            if key in seen:
                return start
            seen.add(key)
    return None


def _ngram_triple_cut(text: str, units: list[_Unit], n: int = 5) -> int | None:
    """An n-gram with 3+ content words seen 3+ times: cut before its 2nd occurrence."""
    where: dict[tuple[str, ...], list[int]] = {}
    for i in range(len(units) - n + 1):
        gram = tuple(u.norm for u in units[i : i + n])
        if sum(w not in STOPWORDS and len(w) > 1 for w in gram) < 3:
            continue
        where.setdefault(gram, []).append(i)
    hits = [v for v in where.values() if len(v) >= 3 and v[1] - v[0] >= n]
    if not hits:
        return None
    first, second = min(hits, key=lambda v: v[1])[:2]
    end1, pos2 = units[first + n - 1].end, units[second].start
    ends = [e for e in _sentence_ends(text) if end1 <= e <= pos2]
    if ends:
        return ends[-1]
    clauses = [m.end() for m in _CLAUSE.finditer(text, end1, pos2)]
    return clauses[-1] if clauses else pos2


def cut_repetition(text: str) -> tuple[str, bool]:
    """Cut degenerate repetition; return (text, whether anything was cut).

    Detected: a span repeated back to back (one word 4+ times, 2-7 words 3+
    times, 8+ words twice), a sentence that already appeared, and a 5-word
    phrase with 3+ content words that appears 3+ times. A loop that runs to the
    end of the text (greedy decoding) is cut after its first occurrence,
    moved forward to the next sentence or comma boundary inside the second
    copy; a stutter followed by other text just loses its extra copies. Words
    compare case- and punctuation-insensitively; CJK characters count as words.
    """
    t, changed = text.strip(), False
    for _ in range(20):
        units = _units(t)
        loop = _find_loop(units)
        cuts = [c for c in (_sentence_dup_cut(t), _ngram_triple_cut(t, units)) if c is not None]
        loop_first = loop is not None and (not cuts or units[loop[0] + loop[1]].start <= min(cuts))
        if loop_first:
            new = _loop_cut(t, units, *loop)
        elif cuts:
            new = t[: min(cuts)]
        else:
            break
        new = new.rstrip()
        if new == t or not new.strip():
            break
        t, changed = new, True
    return t, changed


# ----------------------------------------------------------- paragraphs and tags


def _ends_terminal(text: str) -> bool:
    core = text.rstrip().rstrip(_CLOSERS)
    return bool(core) and core[-1] in _TERMINAL


def _period_for(text: str) -> str:
    core = text.rstrip().rstrip(_CLOSERS)
    return "。" if core and is_cjk_char(core[-1]) else "."


def to_one_paragraph(text: str) -> str:
    """Join lines and paragraphs into one paragraph with single spaces.

    A line that does not end a sentence gets a period before the next one
    (headline-style lines become sentences, the next one capitalised); CJK text
    is joined without spaces.
    """
    out = ""
    for line in (ln.strip() for ln in text.splitlines()):
        if not any(ch.isalnum() for ch in line):  # empty, or a stray "." left by a line break
            continue
        if out:
            core = out.rstrip(_CLOSERS)
            if not (core and (core[-1] in _TERMINAL or core[-1] in ",;:，；：、")):
                out += _period_for(out)
                line = line[0].upper() + line[1:] if line[0].isascii() else line
            out += "" if is_cjk_char(line[0]) and out[-1] in "。！？，；：、" else " "
        out += line
    return re.sub(r"[ \t]+", " ", out).strip()


def _split_tags(text: str) -> list[str]:
    """Split on , ; | 、 newlines, not inside (), [] or {} (SD weights)."""
    parts, buf, depth = [], [], 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        if depth == 0 and ch in ",;|\n，；、":
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
    parts.append("".join(buf))
    return [p.strip() for p in parts if p.strip()]


def _tag_key(tag: str) -> str:
    key = re.sub(r":\s*\d+(?:\.\d+)?", "", tag.lower())
    key = re.sub(r"[()\[\]{}]", "", key)
    return re.sub(r"\s+", " ", key).strip(" .")


def dedupe_tags(text: str, *, max_tag_words: int = 10) -> str:
    """Normalise a comma-separated tag prompt.

    Separators (; | 、 newlines, doubled commas) become ", "; empty tags and
    duplicates (case-, spacing- and (weight:1.2)-insensitive; the first wins)
    go; a tag longer than ``max_tag_words`` words after the first tag is
    dropped as a stray sentence (the first tag, usually the subject, is kept
    whatever its length). Weighted groups like "(a, b:1.2)" stay whole.
    """
    seen, out = set(), []
    for raw in _split_tags(text):
        tag = re.sub(r"\s+", " ", raw).strip(" .。")
        key = _tag_key(tag)
        if not key or key in seen:
            continue
        if out and len(tag.split()) > max_tag_words:
            continue
        seen.add(key)
        out.append(tag)
    return ", ".join(out)


# ---------------------------------------------------------------------- lengths

_WORDISH = re.compile(f"[{_CJK}]|[^\\W\\d_{_CJK}]+|\\d+|[^\\w\\s{_CJK}]|_")


def estimate_encoder_tokens(text: str, encoder: str | None) -> int:
    """Estimate how many tokens a diffusion text encoder makes of ``text``.

    An estimate, not a count, for when no tokenizer is at hand offline
    (``promptx.text.encoder_count`` counts exactly where one is). It leans to
    over-counting but is no guarantee: for CLIP it under-counts rare or foreign
    short words ("quokka" is 3 tokens) and CJK text. Special tokens (BOS/EOS)
    are not included: compare with the usable length (75 for CLIP's 77, 511
    for a 512-token T5).

    - ``encoder`` starting with "clip": each letter run counts
      ceil(len / 8) (words over 8 characters count 2 or more), each digit 1
      (CLIP splits numbers into digits), each punctuation mark 1, each CJK
      character 2 (byte-level BPE).
    - T5, umT5 and anything else (or None): ceil(1.3 per word) plus one per
      punctuation mark; numbers count ceil(digits / 2); CJK characters 1 each.
    """
    clip = (encoder or "").lower().startswith("clip")
    words = punct = digits = cjk = 0
    clip_letters = 0
    for tok in _WORDISH.findall(text):
        if len(tok) == 1 and is_cjk_char(tok):
            cjk += 1
        elif tok.isdigit():
            digits += len(tok) if clip else math.ceil(len(tok) / 2)
        elif tok[0].isalpha():
            words += 1
            clip_letters += math.ceil(len(tok) / 8)
        else:
            punct += 1
    if clip:
        return clip_letters + digits + punct + 2 * cjk
    return math.ceil(1.3 * words) + digits + punct + cjk


def _finish(text: str, fmt: str) -> str:
    t = re.sub(r"\s+", " ", text).strip()
    if fmt == "tags":
        return t.strip(" ,;.。")
    t = t.rstrip(_TRAILING_JUNK)
    if t and not _ends_terminal(t):
        t += _period_for(t)
    if t[:1].isascii() and t[:1].islower():
        t = t[0].upper() + t[1:]
    return t


_DANGLING = re.compile(r"(?:\s+(?:a|an|the|and|or|with|of|in|on|at|to|for|by|from|as))+$", re.I)


def _hard_cut(text: str, fits, *, end: str) -> str:
    """Longest prefix of word units that fits, never fewer than one unit."""
    units = _units(text)
    if not units:
        return text.strip()
    best = text[: units[0].end].rstrip(_TRAILING_JUNK + ".")
    for u in units[1:]:
        cand = text[: u.end].rstrip(_TRAILING_JUNK + ".")
        cand = _DANGLING.sub("", cand) or cand
        if not fits(cand + end):
            break
        best = cand
    return best + end


def drop_unfinished(text: str, fmt: str) -> str:
    """``text`` without what a cut-off generation left unfinished: the words after the last
    sentence end (else after the last clause boundary; "" when neither is there), or for
    tags the last tag (which may be cut mid-phrase: "and a bouncy")."""
    t = text.rstrip()
    if fmt == "tags":
        return t[: t.rfind(",")] if "," in t else ""
    if _ends_terminal(t):
        return t
    ends = _sentence_ends(t, newlines=False)[:-1]
    if ends:
        return t[: ends[-1]]
    clauses = [m.start() for m in _CLAUSE.finditer(t) if t[: m.start()].strip()]
    return t[: clauses[-1]] if clauses else ""


def _tokens(text: str, encoder: str | None, counter: EncoderCounter | None) -> int:
    return counter.count(text) if counter is not None else estimate_encoder_tokens(text, encoder)


def _fit(
    text: str,
    max_words: int,
    max_tokens: int | None,
    encoder: str | None,
    fmt: str,
    counter: EncoderCounter | None = None,
):
    if max_words < 1 or (max_tokens is not None and max_tokens < 1):
        raise InvalidInputError("max_words and max_encoder_tokens must be at least 1")
    t = text.strip()

    def fits(s: str) -> bool:
        if count_words(s) > max_words:
            return False
        return max_tokens is None or _tokens(s, encoder, counter) <= max_tokens

    if not t or fits(t):
        return t, False
    if fmt == "tags":
        tags, kept = _split_tags(t), []
        if not tags:
            return t, False
        for tag in tags:
            if not fits(", ".join(kept + [tag])):
                break
            kept.append(tag)
        return (", ".join(kept) if kept else _hard_cut(tags[0], fits, end="")), True
    all_ends = _sentence_ends(t, newlines=False)
    ends = [e for e in all_ends if fits(t[:e].strip())]
    if ends:
        return t[: ends[-1]].strip(), True
    first = t[: all_ends[0]]
    period = _period_for(first)
    clauses = [m.start() for m in _CLAUSE.finditer(first)]
    fitting = [c for c in clauses if t[:c].strip() and fits(t[:c].rstrip(_TRAILING_JUNK) + period)]
    if fitting:
        return t[: fitting[-1]].rstrip(_TRAILING_JUNK) + period, True
    return _hard_cut(first, fits, end=period), True


def fit_length(
    text: str,
    *,
    max_words: int,
    max_encoder_tokens: int | None = None,
    encoder: str | None = None,
    fmt: Format = "paragraph",
    counter: EncoderCounter | None = None,
) -> str:
    """Fit ``text`` into ``max_words`` words and ``max_encoder_tokens`` encoder tokens.

    Tokens are counted by ``counter`` (``promptx.text.encoder_count``: exact CLIP BPE or a
    local tokenizer) when given, else estimated with ``estimate_encoder_tokens(s, encoder)``.
    Keeps the longest run of whole sentences that fits (whole tags for
    ``fmt="tags"``); if not even the first sentence fits, cuts it at the last
    comma/clause boundary that fits and ends with a period; failing that, at a
    word. Text that already fits is returned stripped but otherwise unchanged.
    Never returns "" for non-empty input (at least one word survives).
    """
    return _fit(text, max_words, max_encoder_tokens, encoder, fmt, counter)[0]


# ------------------------------------------------------------------------ chain


@dataclass(frozen=True)
class CleanResult:
    """The cleaned prompt and what cleaning had to do to get it."""

    text: str
    cut_repetition: bool
    truncated: bool
    #: encoder tokens of ``text`` (no BOS/EOS), by ``encoder_counter``; None when
    #: clean_output was given no counter, no encoder and no token budget
    encoder_tokens: int | None = None
    #: the counter's label: "clip-bpe", "tokenizer:DIR", "pipeline:tokenizer_3", "estimate"
    encoder_counter: str | None = None


def _strip_after(start: str, raw: str) -> str:
    """``strip_wrapping`` of what follows ``start`` when ``raw`` begins with it, else of all."""
    if not start or not raw.startswith(start):
        return strip_wrapping(raw)
    rest = raw[len(start) :]
    stripped = strip_wrapping(rest)
    return start + (" " if rest[:1].isspace() and stripped else "") + stripped


def clean_output(
    raw: str,
    *,
    fmt: Format,
    max_words: int,
    max_encoder_tokens: int | None = None,
    encoder: str | None = None,
    counter: EncoderCounter | None = None,
    keep_start: str = "",
    cut_off: bool = False,
) -> CleanResult:
    """strip_wrapping -> one paragraph (or tag list) -> cut_repetition ->
    dedupe tags -> tidy the ending -> fit_length.

    ``text`` is "" when the raw output held nothing but chatter; the caller
    then falls back to the original prompt (the assessment reports it).
    Paragraph and instruction output starts with a capital letter and ends
    with sentence punctuation; tag output has no trailing separator.
    Encoder tokens are counted by ``counter`` when given (see ``fit_length``), else
    estimated; the result carries the final text's count and the counter's name
    ("estimate" for the estimate) unless there was neither a counter, an encoder nor a
    token budget. ``keep_start``: where ``raw`` starts with it (the user's own words that
    opened the answer), it is never taken for a preamble ("Pixel art version: ...").
    ``cut_off``: the generation stopped at a token or word budget, so its last sentence (tag)
    is unfinished and is dropped (``drop_unfinished``), never closed with a period.
    """
    if fmt not in ("paragraph", "tags", "instruction"):
        raise InvalidInputError(
            f"unknown output format {fmt!r}; use paragraph, tags or instruction"
        )
    t = _strip_after(keep_start, raw)
    if fmt == "tags":
        t = ", ".join(ln.strip() for ln in t.splitlines() if ln.strip())
    else:
        t = to_one_paragraph(t)
    t, cut = cut_repetition(t)
    if cut_off and not cut:
        t = drop_unfinished(t, fmt)
    if fmt == "tags":
        t = dedupe_tags(t)
    t = _finish(t, fmt)
    t, truncated = _fit(t, max_words, max_encoder_tokens, encoder, fmt, counter)
    tokens = name = None
    if counter is not None or encoder is not None or max_encoder_tokens is not None:
        tokens = _tokens(t, encoder, counter)
        name = counter.name if counter is not None else "estimate"
    return CleanResult(
        text=t, cut_repetition=cut, truncated=truncated, encoder_tokens=tokens, encoder_counter=name
    )
