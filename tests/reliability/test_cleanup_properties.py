"""Property tests of the clean-up (``promptx.text.cleanup.clean_output``) over generated texts.

Texts are built from random sentences, words, HTML markup, markdown and tag lists with
``random.Random(seed)`` (fixed seeds: the same texts every run, no hypothesis dependency), and
cleaned with the budgets of real profiles (``video``: 120 words; ``sdxl``: tags, 45 words, 75
CLIP tokens) and with smaller word budgets that force cuts. Properties:

- no HTML tag survives, nor the content of ``<script>``/``<style>`` or a comment, nor markdown;
- no cut word: every word of the output is a whole word of the input (the last one before the
  final period too);
- with a word budget: the output is within it and ends at a sentence boundary of the uncut text
  (where not even its first sentence fits: at a whole word of it, then a period);
- tags: every output tag is a whole tag of the input, none repeated, within 45 words and 75 tokens.

A property that fails on a real product bug is ``xfail(strict=True)`` with the smallest failing
input in its reason.
"""

from __future__ import annotations

import random
import re
from typing import Callable, Iterable

import pytest

from promptx.profiles.registry import registry_for
from promptx.text.cleanup import clean_output, count_words, estimate_encoder_tokens

TEXTS = 300  # generated texts per property

WORDS = (
    "cat dog lighthouse harbor golden misty river violet ancient bridge lantern forest crimson "
    "quiet glass tower meadow storm silver fox snow market neon rain velvet window dune orchid "
    "copper train amber cliff garden mirror shadow canyon marble ember willow falcon pebble "
    "saffron harbour cobalt"
).split()
TAG_WORDS = (
    "masterpiece detailed cinematic portrait landscape sunset neon rain bokeh watercolor sharp "
    "soft warm cold golden hour studio light film grain wide angle close up red scarf old tram "
    "misty forest city night castle dragon knight ocean wave"
).split()
SECRET = (
    "zzcode",
    "zzstyle",
    "zzcomment",
    "zzurl",
)  # words that sit only inside markup to be removed
_HTML_TAG = re.compile(r"</?[A-Za-z!][^<>]*>")
_WORD = re.compile(r"[^\W_]+")


def _profile(name: str):
    return registry_for(None).get(name)


VIDEO, SDXL = _profile("video"), _profile("sdxl")


# ------------------------------------------------------------------------------- generators


def _sentence(rng: random.Random, words: tuple | list = WORDS) -> str:
    chosen = [rng.choice(words) for _ in range(rng.randint(3, 10))]
    if len(chosen) > 4 and rng.random() < 0.3:
        chosen[rng.randrange(1, len(chosen) - 1)] += ","
    return " ".join(chosen).capitalize() + rng.choice(".....!?")


def _decorated(rng: random.Random, sentence: str) -> str:
    """``sentence`` with markup or markdown around some of its words, or as a markdown line."""
    words = sentence.split(" ")
    i = rng.randrange(len(words))
    word = words[i]
    core, tail = word.rstrip(",.!?"), word[len(word.rstrip(",.!?")) :]
    wrap = rng.choice(
        [
            "<b>{}</b>",
            "<i>{}</i>",
            '<span class="x">{}</span>',
            "<em>{}</em>",
            "<strong>{}</strong>",
            "**{}**",
            "*{}*",
            "`{}`",
            "[{}](http://example.com/zzurl)",
            "<a href='http://x.y/zzurl'>{}</a>",
            "{}",
        ]
    )
    words[i] = wrap.format(core) + tail
    text = " ".join(words)
    return rng.choice(
        ["{}", "{}", "{}", "- {}", "* {}", "1. {}", "> {}", "<p>{}</p>", "{}<br>", "<div>{}</div>"]
    ).format(text)


_BLOCKS = [
    "<script>zzcode(1); var zzcode = 2;</script>",
    "<script type='text/javascript'>\nzzcode()\n</script>",
    "<style>.zzstyle { color: red }</style>",
    "<!-- zzcomment -->",
    "<!-- zzcomment\nzzcomment -->",
    "<br/>",
    "<hr>",
    "<p></p>",
    "\n\n",
    "\n",
    "<iframe src='x'>zzcode</iframe>",
    "<noscript>zzcode</noscript>",
    '<img src="zzurl.png" alt="x">',
]


def _paragraph_text(rng: random.Random) -> str:
    parts = []
    if rng.random() < 0.2:
        parts.append("# " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) + "\n")
    for _ in range(rng.randint(1, 22)):
        sentence = _sentence(rng)
        parts.append(_decorated(rng, sentence) if rng.random() < 0.5 else sentence)
        if rng.random() < 0.25:
            parts.append(rng.choice(_BLOCKS))
    if rng.random() < 0.1:
        fence = "```\n" + _sentence(rng) + "\n```"
        parts.insert(rng.randrange(len(parts) + 1), "\n" + fence + "\n")
    text = ""
    for part in parts:  # whitespace between the parts (a block tag glued to text: tested below)
        text += (
            part
            if not text or text.endswith("\n") or part.startswith("\n")
            else rng.choice([" ", " ", "\n"]) + part
        )
    return text


def _tag(rng: random.Random) -> str:
    tag = " ".join(rng.choice(TAG_WORDS) for _ in range(rng.randint(1, 3)))
    return f"({tag}:{rng.choice(['1.1', '1.2', '0.8'])})" if rng.random() < 0.15 else tag


def _tags_text(rng: random.Random) -> tuple[str, set[str]]:
    """A tag list with markup and odd separators, and the set of its whole tags."""
    tags = [_tag(rng) for _ in range(rng.randint(3, 40))]
    text = ""
    for i, tag in enumerate(tags):
        shown = rng.choice(
            ["{}"] * 6 + ["<b>{}</b>", "**{}**", "<i>{}</i>", "<span>{}</span>"]
        ).format(tag)
        if i:
            text += rng.choice(
                [", "] * 8
                + [
                    ",",
                    " , ",
                    "; ",
                    " | ",
                    "\n",
                    ",, ",
                    ",<br>",
                    ", <script>zzcode()</script>, ",
                    ", <!-- zzcomment -->",
                ]
            )
        text += shown
    if rng.random() < 0.2:
        text += rng.choice([",", ", ", ".", "\n"])
    return text, set(tags)


def _texts(make: Callable[[random.Random], object], count: int = TEXTS, base: int = 0) -> Iterable:
    for seed in range(base, base + count):
        yield seed, make(random.Random(seed))


# ------------------------------------------------------------------------------ properties


def _failures(cases) -> list[tuple[str, str]]:
    return sorted(cases, key=lambda c: len(c[0]))


def _report(failures: list[tuple[str, str]], total: int) -> str:
    raw, why = failures[0]
    return f"{len(failures)} of {total} texts fail; the smallest: {raw!r}\n  -> {why}"


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _markup_left(out: str) -> str | None:
    if _HTML_TAG.search(out):
        return f"an HTML tag survives: {_HTML_TAG.search(out).group()!r}"
    for secret in SECRET:
        if secret in out:
            return f"markup content survives: {secret!r}"
    for mark in ("**", "```", "](", "\n", "<br", "&lt;"):
        if mark in out:
            return f"markdown or a line break survives: {mark!r}"
    return None


def _paragraph_problem(raw: str, budget: int) -> str | None:
    full = clean_output(raw, fmt="paragraph", max_words=10**6).text
    out = clean_output(raw, fmt="paragraph", max_words=budget).text
    left = _markup_left(out)
    if left:
        return left
    strange = sorted(_words(out) - _words(raw))
    if strange:
        return f"cut or made-up words {strange} in {out!r}"
    if count_words(out) > budget:
        return f"{count_words(out)} words over the budget of {budget}: {out!r}"
    if out and not re.search(r"[.!?…][\"'”’)\]]*$", out):
        return f"does not end a sentence: {out!r}"
    first = re.split(r"(?<=[.!?])\s", full, maxsplit=1)[0]
    if count_words(first) > budget:  # not even one sentence fits: cut at a clause or a word
        core = out.rstrip(".!?")
        if not full.startswith(core) or full[len(core) : len(core) + 1] not in tuple(" ,;:.!?"):
            return f"not cut at a word of the uncut text:\n     cut:  {out!r}\n     full: {full!r}"
    elif not full.startswith(out) or full[len(out) : len(out) + 1] not in ("", " "):
        return f"not whole sentences of the uncut text:\n     cut:  {out!r}\n     full: {full!r}"
    if full and not out:
        return "nothing left of a text with words"
    return None


@pytest.mark.parametrize(
    "budget", [VIDEO.length.max_words, 60, 30, 15, 6, 2], ids=lambda b: f"max_words={b}"
)
def test_paragraphs_keep_whole_words_and_sentences_within_the_budget_and_no_markup(budget):
    texts = list(_texts(_paragraph_text, base=budget))
    failures = [(raw, why) for _seed, raw in texts if (why := _paragraph_problem(raw, budget))]
    assert not failures, _report(_failures(failures), len(texts))


def test_the_generated_paragraphs_exercise_cuts_markup_and_markdown():
    """The generator reaches what the properties are about (else they would pass vacuously)."""
    texts = [raw for _seed, raw in _texts(_paragraph_text)]
    assert sum("<script" in t for t in texts) > 20 and sum("**" in t for t in texts) > 20
    assert sum("<!--" in t for t in texts) > 10 and sum("](" in t for t in texts) > 10
    cut = sum(clean_output(t, fmt="paragraph", max_words=30).truncated for t in texts)
    assert cut > len(texts) // 3, cut


def _tags_problem(raw: str, whole: set[str], profile) -> str | None:
    length = profile.length
    out = clean_output(
        raw,
        fmt="tags",
        max_words=length.max_words,
        max_encoder_tokens=length.max_encoder_tokens,
        encoder=length.encoder,
    ).text
    full = clean_output(raw, fmt="tags", max_words=10**6).text
    left = _markup_left(out)
    if left:
        return left
    tags = out.split(", ") if out else []
    cut = [t for t in tags if t not in whole]
    if cut:
        return f"not whole tags of the input: {cut} in {out!r}"
    if len(tags) != len(set(tags)):
        return f"a tag repeated: {out!r}"
    if count_words(out) > length.max_words:
        return f"{count_words(out)} words over {length.max_words}: {out!r}"
    if estimate_encoder_tokens(out, length.encoder) > length.max_encoder_tokens:
        return f"over {length.max_encoder_tokens} encoder tokens: {out!r}"
    if full.split(", ")[: len(tags)] != tags:
        return f"not the first tags of the uncut list:\n     cut:  {out!r}\n     full: {full!r}"
    if not out:
        return "no tag left"
    return None


def test_sdxl_tags_stay_whole_unrepeated_within_the_budget_and_without_markup():
    texts = list(_texts(_tags_text))
    failures = [
        (raw, why) for _seed, (raw, whole) in texts if (why := _tags_problem(raw, whole, SDXL))
    ]
    assert not failures, _report(_failures(failures), len(texts))
    cut = sum(
        clean_output(
            raw, fmt="tags", max_words=45, max_encoder_tokens=75, encoder="clip-l"
        ).truncated
        for _seed, (raw, _whole) in texts
    )
    assert cut > len(texts) // 4, cut  # the budget was reached often enough to matter


# ----------------------------------------------------------------- found by the properties


def _split_tag_text(rng: random.Random) -> str:
    """Sentences with a tag split by another tag ('<scr<b>ipt>'): one pass of tag removal joins
    it."""
    sentences = [_sentence(rng) for _ in range(rng.randint(1, 4))]
    trick = rng.choice(
        [
            "<scr<b>ipt>zzcode(1)</script>",
            "<<i>script>zzcode()<</i>/script>",
            "<sty<b>le>.zzstyle{}</style>",
            "<i<b>frame src=x>zzcode</iframe>",
        ]
    )
    sentences.insert(rng.randrange(len(sentences) + 1), trick)
    return " ".join(sentences)


def test_a_tag_split_by_another_tag_does_not_survive():
    texts = list(_texts(_split_tag_text, count=100))
    failures = []
    for _seed, raw in texts:
        out = clean_output(raw, fmt="paragraph", max_words=10**6).text
        if why := _markup_left(out):
            failures.append((raw, f"{why} in {out!r}"))
    assert not failures, _report(_failures(failures), len(texts))


def _comment_text(rng: random.Random) -> tuple[str, str]:
    """Unrepeated sentences with a comment that holds an opening <script> or <style> tag between
    them, and the text without the comment."""
    words = rng.sample(WORDS, 24)
    sentences = [
        " ".join(words[i : i + 4]).capitalize() + "."
        for i in range(0, rng.choice([8, 12, 16, 24]), 4)
    ]
    at = rng.randrange(1, len(sentences)) if len(sentences) > 1 else 1
    comment = rng.choice(["<!-- <script> -->", "<!-- old: <style> -->", "<!--<script src=x>-->"])
    return " ".join(sentences[:at] + [comment] + sentences[at:]), " ".join(sentences)


def test_a_comment_holding_a_script_tag_does_not_swallow_the_text_after_it():
    texts = list(_texts(_comment_text, count=100))
    failures = []
    for _seed, (raw, plain) in texts:
        out = clean_output(raw, fmt="paragraph", max_words=10**6).text
        if out != plain:
            failures.append((raw, f"{out!r}, expected {plain!r}"))
    assert not failures, _report(_failures(failures), len(texts))


_BLOCK_TAGS = ("<p>", "</p><p>", "<div>", "<li>", "<h2>", "<tr><td>", "<td>", "<blockquote>")


def _glued_block_text(rng: random.Random) -> tuple[str, list[str]]:
    """Unrepeated sentences joined by an opening block tag with no space ("fox.<p>Owl"), and the
    sentences."""
    words = rng.sample(WORDS, 24)
    sentences = [
        " ".join(words[i : i + 4]).capitalize() + "."
        for i in range(0, rng.choice([8, 12, 16, 24]), 4)
    ]
    return "".join(s + rng.choice(_BLOCK_TAGS) for s in sentences[:-1]) + sentences[-1], sentences


def test_an_opening_block_tag_between_sentences_keeps_them_apart():
    texts = list(_texts(_glued_block_text, count=100))
    failures = []
    for _seed, (raw, sentences) in texts:
        out = clean_output(raw, fmt="paragraph", max_words=10**6).text
        first = clean_output(raw, fmt="paragraph", max_words=5).text
        if out != " ".join(sentences) or first != sentences[0]:
            failures.append(
                (
                    raw,
                    f"{out!r} and at 5 words {first!r}, expected {' '.join(sentences)!r} and "
                    f"{sentences[0]!r}",
                )
            )
    assert not failures, _report(_failures(failures), len(texts))
