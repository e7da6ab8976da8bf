"""Tests for promptx.text.validate (is a cleaned output acceptable?) and promptx.text.language."""

import pytest

from promptx.text.language import detect_language
from promptx.text.cleanup import count_words
from promptx.text.validate import (
    degenerate_problem,
    quoted_spans,
    subject_problem,
    subject_words,
    talking_to_user,
)

REWRITE = (
    "A ginger tabby cat balancing on a red skateboard as it rolls down a sunlit street, "
    "its fur ruffled by the wind, low-angle tracking shot, golden hour light."
)


def check(original, text, *, min_words=30, **_):
    """Every problem the checks of promptx.text.validate find in ``text`` as a rewrite of
    ``original`` (as promptx.quality.assess reads them, plus a length floor of a third of
    ``min_words``)."""
    t = text.strip()
    if not t:
        return ["the output is empty"]
    problems = []
    need, have = max(5, min_words // 3), count_words(t)
    if have < need:
        problems.append(f"the output is too short ({have} words; at least {need} expected)")
    if original.strip():
        flat = " ".join(t.split())
        problems += [
            f'quoted text "{q}" from the prompt is missing from the output'
            for q in quoted_spans(original)
            if " ".join(q.split()) not in flat
        ]
        problems += [p for p in [subject_problem(original, t)] if p]
    problems += [p for p in [degenerate_problem(t)] if p]
    return problems + talking_to_user(t)


def test_a_real_rewrite_is_accepted():
    assert check("a cat on a skateboard", REWRITE) == []


def test_unrelated_output_loses_the_subject():
    problems = check(
        "a cat on a skateboard",
        "A serene mountain lake at dawn, mist drifting over still water, pine trees on the shore.",
    )
    assert problems == [
        'the output lost the subject of the prompt (none of "cat", "skateboard" appears)'
    ]


@pytest.mark.parametrize(
    ("original", "text"),
    [
        (
            "two cats on skateboards",
            "Two fluffy cats ride matching skateboards down a hill at sunset.",
        ),
        (
            "a person is skydiving",
            "A young woman in a red jumpsuit leaps from a plane high above the clouds.",
        ),
        (
            "a dog running happily",
            "A golden retriever puppy bounds across a sunny meadow, ears flapping.",
        ),
        ("skis", "A skier carves down a pristine slope under a deep blue winter sky."),
        (
            "a carrousel at night",
            "A glowing carousel spins under the night sky, painted horses rising and falling.",
        ),
        (
            "A photo of a red bus",
            "A double-decker bus waits at a rainy London stop, headlights glowing.",
        ),
        (
            "a horse galloping across an open field",
            "A chestnut horse gallops freely over a vast sunlit plain.",
        ),
        (
            "A boat sailing along the Seine with the Eiffel Tower in the background",
            "A small wooden sailboat drifts on the river Seine while the Eiffel Tower rises behind "
            "it.",
        ),
    ],
)
def test_subject_check_accepts_rewrites_with_different_wording(original, text):
    assert check(original, text, min_words=10) == []


@pytest.mark.parametrize(
    ("original", "text"),
    [
        ("a red bowl", "A red sports car speeds along a coastal road under a clear sky at noon."),
        (
            "a cinematic shot of a fox",
            "A cinematic shot of a lighthouse on a rocky cliff during a violent storm.",
        ),
        (
            "a bus and a traffic light",
            "A quiet forest clearing with ferns, moss and a small stream in soft light.",
        ),
    ],
)
def test_subject_check_is_not_fooled_by_colours_or_style_words(original, text):
    assert any("lost the subject" in p for p in check(original, text, min_words=10))


def test_subject_words_are_content_words_in_order():
    assert subject_words("A cinematic photo of two Cats on the skateboards, 4k") == [
        "two",
        "cat",
        "skateboard",
    ]
    assert subject_words("") == []
    assert subject_words("一只猫在滑板上") == ["猫", "滑", "板"]


@pytest.mark.parametrize(
    ("original", "quote"),
    [
        ('a neon sign that says "OPEN 24/7"', "OPEN 24/7"),
        ("a mug with 'World's Best Dad' printed on it", "World's Best Dad"),
        ("a poster reading “Hello World”", "Hello World"),
        ("一块写着「欢迎光临」的招牌", "欢迎光临"),
    ],
)
def test_quoted_text_must_survive_verbatim(original, quote):
    assert quoted_spans(original) == [quote]
    body = "A cozy shop front at night, warm light spilling onto the wet street, a cat sleeping."
    problems = check(original, body, min_words=10)
    assert f'quoted text "{quote}" from the prompt is missing from the output' in problems


def test_quoted_text_present_is_fine_even_in_other_quotes():
    original = 'a neon sign that says "OPEN 24/7"'
    text = "A buzzing neon sign glows with the words “OPEN 24/7” above a rainy diner door at night."
    assert check(original, text, min_words=10) == []


def test_quoted_text_case_must_match():
    original = 'a sign that says "OPEN"'
    text = "A wooden sign that says 'Open' hangs above a bakery door in the morning light."
    assert any('quoted text "OPEN"' in p for p in check(original, text, min_words=10))


def test_apostrophes_are_not_quotes():
    assert quoted_spans("the cat's toy and the dog's bone") == []


def test_chinese_input_translated_to_english_skips_the_lexical_check():
    assert check("一只猫在滑板上", REWRITE) == []


def test_chinese_output_for_chinese_input_uses_character_overlap():
    good = (
        "一只橘色的虎斑猫站在红色滑板上，沿着阳光明媚的街道滑行，"
        "毛发被风吹起，低角度跟拍，金色的光线。"
    )
    bad = "清晨宁静的山间湖泊，薄雾在平静的水面上飘荡，岸边是高大的松树，远处群山连绵。"
    assert check("一只猫在滑板上", good) == []
    assert check("一只猫在滑板上", bad) == [
        "the output lost the subject of the prompt (few of its characters appear)"
    ]


def test_english_input_with_cjk_output_skips_the_lexical_check():
    text = "一只橘色的虎斑猫站在红色滑板上，沿着阳光明媚的街道滑行，毛发被风吹起，低角度跟拍。"
    assert check("a cat on a skateboard", text) == []


def test_empty_output():
    assert check("a cat", "  ") == ["the output is empty"]


def test_too_short_output():
    assert check("a cat", "A cat.", min_words=30) == [
        "the output is too short (2 words; at least 10 expected)"
    ]
    assert check("a cat", "A fluffy cat naps.", min_words=0) == [
        "the output is too short (4 words; at least 5 expected)"
    ]


def test_degenerate_output():
    text = "cat cat cat cat cat cat on a skateboard cat cat"
    assert any(
        "degenerate" in p and '"cat"' in p
        for p in check("a cat on a skateboard", text, min_words=9)
    )


def test_an_output_that_still_loops_is_reported():
    text = "A cat rides a skateboard. The sun sets. The sun sets. The sun sets. The sun sets."
    assert "the output repeats itself" in check("a cat on a skateboard", text, min_words=9)


@pytest.mark.parametrize(
    "text",
    [
        "I'm sorry, but I cannot create images of a cat on a skateboard for you.",
        "As an AI language model, I can describe a cat on a skateboard in words.",
        "I cannot help with that request about a cat on a skateboard today.",
        "I’m unable to generate a cat on a skateboard, but here is an idea.",
    ],
)
def test_chatting_output(text):
    assert "the output is the model chatting, not a prompt" in check(
        "a cat on a skateboard", text, min_words=9
    )


@pytest.mark.parametrize(
    "text",
    [
        "Would you like the cat on the skateboard to be a ginger tabby or a black cat?",
        "What kind of cat should ride the skateboard in the picture you want to make?",
        "A cat on a skateboard. Could you tell me more about the style you want",
    ],
)
def test_question_output(text):
    assert "the output asks a question instead of being a prompt" in check(
        "a cat on a skateboard", text, min_words=9
    )


@pytest.mark.parametrize(
    "text",
    [
        "You should describe the cat and the skateboard in more detail, with the lighting.",
        "To create this image, use a strong model and describe the cat on the skateboard.",
        "Please provide more details about the cat and the skateboard you have in mind.",
    ],
)
def test_instructions_to_the_user(text):
    assert "the output gives instructions to the user instead of being a prompt" in check(
        "a cat on a skateboard", text, min_words=9
    )


def test_an_edit_instruction_is_not_mistaken_for_instructions_to_the_user():
    text = (
        "Make the sky a vivid purple sunset while keeping the house, "
        "the trees and the framing unchanged."
    )
    assert check("make the sky purple", text, task="i2i", fmt="instruction", min_words=30) == []


def test_a_question_inside_quoted_text_is_fine():
    original = 'a poster that says "Why not?"'
    text = 'A bold retro poster on a brick wall with the words "Why not?"'
    assert check(original, text, min_words=9) == []


def test_i2v_with_an_empty_prompt_runs_only_the_generic_checks():
    motion = "The woman slowly turns her head toward the camera as her hair drifts in the breeze."
    assert check("", motion, task="i2v", fmt="paragraph", min_words=30) == []
    assert check(
        "",
        "I'm sorry, I cannot see the image you describe here.",
        task="i2v",
        fmt="paragraph",
        min_words=30,
    ) == ["the output is the model chatting, not a prompt"]


def test_several_problems_are_all_reported():
    problems = check('a sign saying "HI"', "I cannot do that?", min_words=30)
    assert len(problems) == 5


# ----------------------------------------------------------------------- language


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("a cat on a skateboard", "en"),
        ("A cat, 4K, 16:9 — golden hour", "en"),
        ("一只猫在滑板上", "zh"),
        ("在静止的画面中，一个停车标志", "zh"),
        ("スケートボードに乗った猫", "ja"),
        ("猫がスケートボードに乗っている", "ja"),
        ("스케이트보드를 타는 고양이", "ko"),
        ("一只猫在滑板上，cinematic", "zh"),
        ("a photo of a 猫 on a skateboard at sunset", "en"),
        ("кошка на скейтборде", "other"),
        ("", "other"),
        ("1234 !!!", "other"),
    ],
)
def test_detect_language(text, lang):
    assert detect_language(text) == lang


def test_chatty_words_inside_quoted_text_are_fine():
    original = 'a protest sign that says "I can\'t stop"'
    text = 'A hand-painted protest sign that says "I can\'t stop" held high above a crowd at dusk.'
    assert check(original, text, min_words=9) == []


def test_numbers_alone_do_not_keep_the_subject():
    problems = check(
        "two cats on a skateboard", "Two hikers rest beside a mountain lake under a pale dawn sky."
    )
    assert any("lost the subject" in p for p in problems)
