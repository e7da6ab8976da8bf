"""Tests for promptx.text.cleanup: raw small-model output -> one usable prompt."""

import pytest

from promptx.errors import InvalidInputError
from promptx.text.cleanup import (
    CleanResult,
    clean_output,
    count_words,
    cut_repetition,
    dedupe_tags,
    estimate_encoder_tokens,
    fit_length,
    strip_wrapping,
    to_one_paragraph,
)

PROMPT = "A ginger tabby cat balances on a red skateboard."

# ----------------------------------------------------------------- strip_wrapping


@pytest.mark.parametrize(
    "raw",
    [
        f"Sure, here is an enhanced prompt:\n\n{PROMPT}",
        f"Sure! Here's an enhanced prompt: {PROMPT}",
        f"Enhanced prompt: {PROMPT}",
        f"Enhanced Prompt:\n{PROMPT}",
        f"Here's a detailed version:\n{PROMPT}",
        f"Certainly! Here is the rewritten prompt for your video:\n\n{PROMPT}",
        f"Okay. Prompt: {PROMPT}",
        f"Here is an enhanced version of your prompt. {PROMPT}",
        f"I'd be happy to help with that prompt!\n{PROMPT}",
        f"**Enhanced Prompt:** {PROMPT}",
        f"## Enhanced prompt\n\n{PROMPT}",
        f"# A cat on a skateboard\n\n{PROMPT}",
        f"```\n{PROMPT}\n```",
        f"```text\n{PROMPT}\n```",
        f'"{PROMPT}"',
        f"“{PROMPT}”",
        f"'{PROMPT}'",
        f'"{PROMPT[:-1]}".',
        f'Enhanced prompt: "{PROMPT}"',
        f"Original: a cat on a skateboard\nEnhanced prompt: {PROMPT}",
        f"{PROMPT}\n\nI hope this helps! Let me know if you want any changes.",
        f"{PROMPT} I hope this helps!",
        f"{PROMPT} Let me know if you'd like a different style.",
        f"{PROMPT}\n\nFeel free to adjust the colors.",
        f"{PROMPT}\n\nThis prompt emphasizes the motion and the lighting.",
        f"{PROMPT}\n\nNote: I added lighting details.",
        f"{PROMPT} (Note: the skateboard color was my choice.)",
        f"{PROMPT}\n\nI've added details about the fur and the light.",
        f"{PROMPT}\n\nNegative prompt: blurry, low quality",
        f"{PROMPT}\n\nAlternatively: A black cat on a longboard.",
        f'Sure!\n\nEnhanced prompt:\n\n"{PROMPT}"\n\nEnjoy!',
    ],
)
def test_strip_wrapping_removes_preambles_chatter_markdown_and_quotes(raw):
    assert strip_wrapping(raw) == PROMPT


def test_strip_wrapping_removes_inline_markdown():
    raw = "A **ginger** cat on a *red* skateboard, `cinematic`, [golden light](http://x.y)."
    assert strip_wrapping(raw) == "A ginger cat on a red skateboard, cinematic, golden light."


def test_a_heading_word_before_the_text_goes():
    assert strip_wrapping("Motion: The bubbles swirl and rise.") == "The bubbles swirl and rise."
    assert strip_wrapping("Scene: a quiet harbor at dawn.") == "a quiet harbor at dawn."
    assert (
        strip_wrapping("Motionless bubbles: they hang in the dark.")
        == "Motionless bubbles: they hang in the dark."
    )


def test_html_tags_go_but_a_lora_tag_stays():
    out = clean_output(
        "A <b>ginger</b> cat rides a skateboard.<br>Sharp focus.<br>.",
        fmt="paragraph",
        max_words=50,
    )
    assert out.text == "A ginger cat rides a skateboard. Sharp focus."
    assert strip_wrapping("a cat, <lora:fluffy:0.8>, night") == "a cat, <lora:fluffy:0.8>, night"


def test_strip_wrapping_flattens_bullets_but_keeps_their_text():
    raw = "Here's a detailed version:\n- A cat on a skateboard\n* Neon lights\n1. Rainy street"
    assert strip_wrapping(raw) == "A cat on a skateboard\nNeon lights\nRainy street"


def test_strip_wrapping_keeps_quotes_inside_the_text():
    raw = 'A neon sign that reads "OPEN" glows above the door.'
    assert strip_wrapping(raw) == raw
    starts_and_ends_quoted = '"OPEN" glows on the sign, and the cat says "hi"'
    assert strip_wrapping(starts_and_ends_quoted) == starts_and_ends_quoted
    wrapped_with_inner = '"A sign that reads "OPEN" above a cat."'
    assert strip_wrapping(wrapped_with_inner) == 'A sign that reads "OPEN" above a cat.'
    apostrophes = "'The cat's skateboard and the dog's ball.'"
    assert strip_wrapping(apostrophes) == "The cat's skateboard and the dog's ball."


def test_strip_wrapping_removes_a_lone_quote_left_by_a_cut_output():
    assert strip_wrapping('"A cat on a skateboard at dusk') == "A cat on a skateboard at dusk"


@pytest.mark.parametrize(
    "text",
    [
        "Cinematic style: a cat rides a skateboard through neon rain.",
        "A neon sign reads: OPEN all night.",
        "Great white shark gliding through a kelp forest.",
        "(masterpiece:1.2), cat, skateboard",
        "This is a photo of a cat on a skateboard.",
        "A clock showing 5:30 above a sleeping cat.",
    ],
)
def test_strip_wrapping_leaves_real_prompts_alone(text):
    assert strip_wrapping(text) == text


def test_strip_wrapping_of_pure_chatter_is_empty():
    assert strip_wrapping("Sure! Here is the enhanced prompt:") == ""


# ----------------------------------------------------------------- cut_repetition


def test_cut_repetition_cuts_a_greedy_sentence_loop_after_its_first_occurrence():
    raw = (
        "A cat rides a skateboard down the street. The sun sets behind the hills. "
        "The sun sets behind the hills. The sun sets behind the hills. The sun sets"
    )
    assert cut_repetition(raw) == (
        "A cat rides a skateboard down the street. The sun sets behind the hills.",
        True,
    )


def test_cut_repetition_cuts_a_two_sentence_cycle():
    raw = (
        "A cat rides a skateboard. The wind ruffles its fur. The crowd cheers loudly. "
        "The wind ruffles its fur. The crowd cheers loudly. The wind ruffles its fur."
    )
    text, cut = cut_repetition(raw)
    assert cut
    assert text == "A cat rides a skateboard. The wind ruffles its fur. The crowd cheers loudly."


def test_cut_repetition_cuts_a_phrase_loop_at_a_comma():
    raw = (
        "A cat on a skateboard, rolling down the street, rolling down the street, "
        "rolling down the street, rolling down the street, rolling down"
    )
    assert cut_repetition(raw) == ("A cat on a skateboard, rolling down the street,", True)


def test_cut_repetition_keeps_one_whole_sentence_when_the_loop_starts_mid_sentence():
    raw = (
        "A dog runs on the rocks. The waves crash on the rocks. "
        "The waves crash on the rocks. The waves crash on the"
    )
    assert cut_repetition(raw) == ("A dog runs on the rocks. The waves crash on the rocks.", True)


def test_cut_repetition_collapses_a_stutter_followed_by_real_text():
    assert cut_repetition("A very very very very tall tree stands in a field.") == (
        "A very tall tree stands in a field.",
        True,
    )


def test_cut_repetition_cuts_a_loop_with_variations():
    raw = (
        "The cat sits on the mat, with a warm golden glow. The dog sits on the rug, "
        "with a warm golden glow. The bird sits on a branch, with a warm golden glow."
    )
    assert cut_repetition(raw) == ("The cat sits on the mat, with a warm golden glow.", True)


def test_cut_repetition_cuts_a_cjk_loop():
    text, cut = cut_repetition("一只猫在滑板上，一只猫在滑板上，一只猫在滑板上，一只猫在滑板上")
    assert cut and text == "一只猫在滑板上，"


def test_cut_repetition_is_case_and_punctuation_insensitive():
    raw = "Golden light. A cat rides. golden light! A CAT RIDES, golden light. a cat rides"
    text, cut = cut_repetition(raw)
    assert cut and text == "Golden light. A cat rides."


@pytest.mark.parametrize(
    "text",
    [
        "A ginger cat balances on a red skateboard as it rolls down a sunlit street, its fur "
        "ruffled by the wind, while the camera tracks alongside at a low angle.",
        "The runner from Team A takes the lead. The runner from Team B follows closely. "
        "At the final lap the runner from Team C sprints past both of them.",
        "Side by side, two dogs run along the beach; the waves roll in, the waves roll out.",
        "A cat, a dog and a bird sit on a bench. The cat sleeps; the dog watches the bird.",
        "walking, walking, walking through the rain",
    ],
)
def test_cut_repetition_leaves_normal_prompts_alone(text):
    assert cut_repetition(text) == (text, False)


# ------------------------------------------------------------- paragraphs and tags


def test_to_one_paragraph_joins_lines_and_adds_missing_periods():
    raw = "A cat on a skateboard\n\nNeon lights reflect on the wet street.\nRain falls,\nslowly"
    assert to_one_paragraph(raw) == (
        "A cat on a skateboard. Neon lights reflect on the wet street. Rain falls, slowly"
    )


def test_to_one_paragraph_joins_cjk_without_spaces():
    assert to_one_paragraph("一只猫在滑板上。\n\n夕阳西下。") == "一只猫在滑板上。夕阳西下。"
    assert to_one_paragraph("一只猫\n夕阳") == "一只猫。夕阳"


def test_dedupe_tags_normalises_separators_and_drops_duplicates():
    raw = (
        "masterpiece, best quality,, cat, Cat ,  (cat:1.2); "
        "skateboard\n neon lights | best quality."
    )
    assert dedupe_tags(raw) == "masterpiece, best quality, cat, skateboard, neon lights"


def test_dedupe_tags_keeps_weighted_groups_whole():
    assert dedupe_tags("(red, blue:1.1), [cat], cat, red") == "(red, blue:1.1), [cat], red"


def test_dedupe_tags_drops_stray_sentences_but_keeps_a_long_first_tag():
    raw = (
        "a ginger cat riding a red skateboard down a sunny hill at dusk, golden hour, "
        "this is a long sentence that the model added to the tags for no good reason, 8k"
    )
    assert dedupe_tags(raw) == (
        "a ginger cat riding a red skateboard down a sunny hill at dusk, golden hour, 8k"
    )


def test_dedupe_tags_handles_cjk_separators():
    assert dedupe_tags("猫，滑板、猫；夕阳") == "猫, 滑板, 夕阳"


# ------------------------------------------------------------------------ lengths

PARAGRAPH = (
    "A ginger cat balances on a red skateboard. It rolls down a sunlit street at golden hour. "
    "The camera tracks alongside at a low angle. Dust motes glitter in the warm light."
)


def test_count_words_counts_cjk_characters_and_skips_punctuation():
    assert count_words("A cat, on a skateboard - fast!") == 6
    assert count_words("一只猫在滑板上。") == 7
    assert count_words("") == 0


def test_fit_length_returns_text_that_fits_unchanged():
    assert fit_length(PARAGRAPH, max_words=100) == PARAGRAPH


@pytest.mark.parametrize(
    ("max_words", "expected"),
    [
        (31, PARAGRAPH.rsplit(" Dust", 1)[0]),
        (
            24,
            "A ginger cat balances on a red skateboard. "
            "It rolls down a sunlit street at golden hour.",
        ),
        (12, "A ginger cat balances on a red skateboard."),
        (8, "A ginger cat balances on a red skateboard."),
    ],
)
def test_fit_length_cuts_at_the_last_sentence_boundary_that_fits(max_words, expected):
    out = fit_length(PARAGRAPH, max_words=max_words)
    assert out == expected
    assert count_words(out) <= max_words


def test_fit_length_cuts_at_a_clause_when_no_sentence_fits():
    text = "A ginger cat balances on a red skateboard, its fur ruffled by the wind, at dusk."
    assert (
        fit_length(text, max_words=14)
        == "A ginger cat balances on a red skateboard, its fur ruffled by the wind."
    )
    assert fit_length(text, max_words=9) == "A ginger cat balances on a red skateboard."


def test_fit_length_cuts_at_a_word_as_a_last_resort_and_never_returns_empty():
    assert fit_length(PARAGRAPH, max_words=5) == "A ginger cat balances."
    assert fit_length(PARAGRAPH, max_words=1) == "A."
    assert (
        fit_length("Supercalifragilistic", max_words=1, max_encoder_tokens=1, encoder="clip") != ""
    )


def test_fit_length_does_not_end_on_a_dangling_article():
    assert (
        fit_length("A cat sits on the old wooden fence near a barn", max_words=6)
        == "A cat sits on the old."
    )


def test_fit_length_respects_the_encoder_token_estimate():
    out = fit_length(PARAGRAPH, max_words=100, max_encoder_tokens=20, encoder="clip_l")
    assert out == (
        "A ginger cat balances on a red skateboard. It rolls down a sunlit street at golden hour."
    )
    assert estimate_encoder_tokens(out, "clip_l") <= 20


def test_fit_length_for_tags_cuts_at_a_comma():
    tags = "cat, red skateboard, golden hour, neon lights, rain, 8k"
    out = fit_length(tags, max_words=6, fmt="tags")
    assert out == "cat, red skateboard, golden hour"
    assert fit_length(tags, max_words=100, max_encoder_tokens=9, encoder="clip", fmt="tags") == (
        "cat, red skateboard, golden hour"
    )
    assert (
        fit_length("a very long first tag with many words", max_words=3, fmt="tags")
        == "a very long"
    )


def test_fit_length_handles_cjk_sentences():
    text = "一只猫在滑板上。夕阳西下，街道金黄。镜头缓缓推进。"
    assert fit_length(text, max_words=16) == "一只猫在滑板上。夕阳西下，街道金黄。"
    assert fit_length(text, max_words=10) == "一只猫在滑板上。"
    assert (
        fit_length("一只橘色的猫在红色滑板上，夕阳西下", max_words=12)
        == "一只橘色的猫在红色滑板上。"
    )


def test_fit_length_rejects_a_zero_budget():
    with pytest.raises(InvalidInputError):
        fit_length(PARAGRAPH, max_words=0)
    with pytest.raises(InvalidInputError):
        fit_length(PARAGRAPH, max_words=10, max_encoder_tokens=0)


def test_estimate_encoder_tokens_for_clip_counts_long_words_digits_and_punctuation():
    assert estimate_encoder_tokens("a cat", "clip") == 2
    assert estimate_encoder_tokens("skateboarding", "clip") == 2  # > 8 characters
    assert estimate_encoder_tokens("cat, dog.", "CLIP-L") == 4
    assert estimate_encoder_tokens("8k", "clip") == 2
    assert estimate_encoder_tokens("1024", "clip") == 4  # CLIP splits digits
    assert estimate_encoder_tokens("猫", "clip") == 2


def test_estimate_encoder_tokens_for_t5_is_1_3_per_word_plus_punctuation():
    assert estimate_encoder_tokens("a cat on a skateboard", "t5") == 7  # ceil(5 * 1.3)
    assert estimate_encoder_tokens("a cat on a skateboard.", "umt5") == 8
    assert estimate_encoder_tokens("a cat on a skateboard", None) == 7
    assert estimate_encoder_tokens("一只猫", "umt5") == 3


def test_estimate_encoder_tokens_errs_on_the_high_side_of_a_word_count():
    for enc in ("clip", "t5"):
        assert estimate_encoder_tokens(PARAGRAPH, enc) >= count_words(PARAGRAPH)


# -------------------------------------------------------------------------- chain

GREEDY_RAW = (
    "Sure! Here's an enhanced prompt:\n\n"
    '"A ginger tabby cat rides a red skateboard down a sunny street. '
    "The cat's fur glows in the golden light. The cat's fur glows in the golden light. "
    "The cat's fur glows in the golden light. The cat's fur glows in\""
)


def test_clean_output_on_a_greedy_loop_with_preamble_and_quotes():
    result = clean_output(GREEDY_RAW, fmt="paragraph", max_words=200)
    assert result == CleanResult(
        text="A ginger tabby cat rides a red skateboard down a sunny street. "
        "The cat's fur glows in the golden light.",
        cut_repetition=True,
        truncated=False,
    )


def test_the_users_opening_words_are_never_a_preamble():
    raw = "Pixel art version: the three men sit by the fire. Keep the lake. I hope this helps!"
    kept = clean_output(raw, fmt="instruction", max_words=60, keep_start="Pixel art version")
    assert kept.text == "Pixel art version: the three men sit by the fire. Keep the lake."
    assert (
        clean_output(raw, fmt="instruction", max_words=60).text
        == "The three men sit by the fire. Keep the lake."
    )
    assert (
        clean_output(
            "Make it snow", fmt="instruction", max_words=60, keep_start="Make it snow"
        ).text
        == "Make it snow."
    )
    other = clean_output(
        "Here is the instruction: Add snow.",
        fmt="instruction",
        max_words=60,
        keep_start="Make it snow",
    )
    assert other.text == "Add snow."  # not the opening: cleaned as usual


def test_clean_output_flattens_markdown_into_one_finished_paragraph():
    raw = "**Enhanced Prompt:**\n\n- a cat on a skateboard\n- neon lights, rain\n\nHope this helps!"
    result = clean_output(raw, fmt="paragraph", max_words=200)
    assert result.text == "A cat on a skateboard. Neon lights, rain."
    assert not result.cut_repetition and not result.truncated


def test_clean_output_reports_truncation():
    result = clean_output(PARAGRAPH, fmt="paragraph", max_words=12)
    assert result == CleanResult("A ginger cat balances on a red skateboard.", False, True)


def test_clean_output_for_tags():
    raw = "Sure! masterpiece, cat, cat, skateboard,\nneon lights, masterpiece."
    result = clean_output(raw, fmt="tags", max_words=200, max_encoder_tokens=75, encoder="clip")
    assert result.text == "masterpiece, cat, skateboard, neon lights"
    assert not result.truncated


def test_clean_output_for_an_edit_instruction():
    raw = "Edit instruction: change the sky to a purple sunset while keeping the house unchanged"
    result = clean_output(raw, fmt="instruction", max_words=80)
    assert result.text == "Change the sky to a purple sunset while keeping the house unchanged."


def test_clean_output_of_pure_chatter_is_empty():
    assert clean_output("Sure! Here is the prompt:", fmt="paragraph", max_words=100).text == ""


def test_clean_output_rejects_an_unknown_format():
    with pytest.raises(InvalidInputError):
        clean_output("a cat", fmt="poem", max_words=10)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "raw, fmt, kept",
    [
        (
            "A lighthouse at dusk. Warm light casts shadows across the",
            "paragraph",
            "A lighthouse at dusk.",
        ),
        (
            "A lighthouse at dusk, warm light spilling from the lamp room, shadows across the",
            "paragraph",
            "A lighthouse at dusk, warm light spilling from the lamp room.",
        ),
        (
            "A lighthouse at dusk. Waves crash below.",
            "paragraph",
            "A lighthouse at dusk. Waves crash below.",
        ),
        ("lighthouse, dusk, warm light, and a bouncy", "tags", "lighthouse, dusk, warm light"),
    ],
)
def test_a_cut_off_generation_loses_its_unfinished_end(raw, fmt, kept):
    assert clean_output(raw, fmt=fmt, max_words=80, cut_off=True).text == kept


@pytest.mark.parametrize(
    "raw, fmt", [("A lighthouse keeper climbs the", "paragraph"), ("a bouncy", "tags")]
)
def test_a_cut_off_generation_with_nothing_whole_is_empty(raw, fmt):
    assert clean_output(raw, fmt=fmt, max_words=80, cut_off=True).text == ""


def test_markup_is_removed_from_outputs_and_prompt_syntax_kept():
    raw = (
        "A fox <b>in</b> snow<script>alert(1)</script>, "
        '<lora:fox:0.7> <span class="x">at dawn</span>.'
    )
    assert (
        clean_output(raw, fmt="paragraph", max_words=80).text
        == "A fox in snow, <lora:fox:0.7> at dawn."
    )
