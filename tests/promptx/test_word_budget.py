"""The incremental word-budget stop stops exactly where decoding the whole output would."""

from __future__ import annotations

import random

import pytest

from promptx.backends.word_budget import WordBudgetStop, word_bounds
from promptx.text.cleanup import strip_wrapping
from promptx.text.language import count_words

TEXTS = [
    "Sure! Here is the enhanced prompt: A ginger cat rides a red skateboard down a sunlit street, "
    "its tail held high, warm late-afternoon light, low camera angle, 35mm film look.",
    '**Prompt:** "A lighthouse on a cliff at dusk, waves crashing below, cinematic wide shot."',
    "一只橘猫在阳光明媚的街道上滑着红色滑板，尾巴高高翘起，暖色调，低机位拍摄。",
    "Neon-lit Tokyo alley, rain-slick asphalt; a woman in a yellow raincoat walks past café signs "
    'reading "OPEN" — handheld camera, shallow depth of field, naïve colour grading.',
]


@pytest.fixture(scope="module")
def tokenizer(model_dir):
    from engine.weights.tokenizer import ChatTokenizer

    return ChatTokenizer(model_dir)


@pytest.fixture(scope="module")
def bounds(tokenizer):
    return word_bounds(tokenizer.token_texts())


def whole_output_check(decode, limit):
    """The old predicate: decode everything after every token."""

    def over(tokens):
        text = decode(tokens)
        return count_words(text) > limit and count_words(strip_wrapping(text)) > limit

    return over


def first_stop(predicate, ids):
    for n in range(1, len(ids) + 1):
        if predicate(ids[:n]):
            return n
    return None


def test_the_bounds_never_undercount(tokenizer, bounds):
    rng = random.Random(0)
    samples = [tokenizer.encode(t) for t in TEXTS]
    samples += [[rng.randrange(tokenizer.vocab_size) for _ in range(40)] for _ in range(200)]
    for ids in samples:
        for n in range(1, len(ids) + 1):
            assert count_words(tokenizer.decode(ids[:n])) <= sum(bounds[t] for t in ids[:n]), ids[
                :n
            ]


@pytest.mark.parametrize("limit", [1, 3, 8, 15, 40])
def test_it_stops_at_the_same_token_as_the_whole_output_check(tokenizer, bounds, limit):
    rng = random.Random(limit)
    samples = [tokenizer.encode(t) for t in TEXTS]
    samples += [[rng.randrange(tokenizer.vocab_size) for _ in range(60)] for _ in range(30)]
    for ids in samples:
        fast = WordBudgetStop(limit, bounds, tokenizer.decode)
        assert first_stop(fast, ids) == first_stop(whole_output_check(tokenizer.decode, limit), ids)


def test_it_decodes_rarely(tokenizer, bounds):
    ids = tokenizer.encode(" ".join(["a red fox runs through deep snow at dawn."] * 12))
    stop = WordBudgetStop(90, bounds, tokenizer.decode)
    n = first_stop(stop, ids)
    assert n is not None and count_words(tokenizer.decode(ids[:n])) == 91
    assert stop.exact_counts < n / 4, f"{stop.exact_counts} decodes for {n} tokens"
