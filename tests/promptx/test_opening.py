"""A profile with ``opening = "prompt"``: the answer starts with the user's words and the
model continues them (request, backend encoding, enhance and stream with the real model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptx import Enhancer
from promptx.enhancer import _joined
from promptx.profiles.registry import builtin_template_dir, default_registry
from promptx.options import EnhanceOptions
from promptx.request import EnhanceRequest


def opening_profile(name: str = "video"):
    return default_registry().get(name).model_copy(update={"opening": "prompt"})


def test_the_opening_is_the_prompt_capitalised_without_its_final_stop():
    request = EnhanceRequest.build(opening_profile(), "a cat on a skateboard.")
    assert request.opening == "A cat on a skateboard"


def test_no_opening_for_tags_a_translation_or_a_profile_that_lets_the_model_start():
    assert EnhanceRequest.build(opening_profile("sdxl"), "a cat").opening == ""
    assert (
        EnhanceRequest.build(opening_profile(), "一只猫在滑板上").opening == ""
    )  # answered in English
    assert EnhanceRequest.build(default_registry().get("video"), "a cat").opening == ""


def test_the_opened_last_attempt_applies_where_an_opening_can():
    video = default_registry().get("video")
    opened = EnhanceRequest.build(video, "a cat on a skateboard").opened()
    assert opened.opening == "A cat on a skateboard" and opened.profile.name == "video"
    assert (
        EnhanceRequest.build(video, "a cat").opened().opening == "A video of a cat"
    )  # framed: under three words
    assert (
        EnhanceRequest.build(default_registry().get("sdxl"), "a cat on a skateboard").opened()
        is None
    )
    assert EnhanceRequest.build(video, "一只猫在滑板上玩耍").opened() is None  # answered in English
    assert (
        EnhanceRequest.build(opening_profile(), "a cat on a skateboard").opened() is None
    )  # opened already
    remote = EnhanceRequest.build(video, "a cat on a skateboard", continue_answer=False)
    assert remote.opened() is None


def test_a_short_prompt_is_framed_by_its_task_and_a_lone_number_is_named_a_number():
    registry = default_registry()
    cases = [
        ("image", "bond", "A picture of bond"),
        ("wan-t2v", "golden ratio", "A video of golden ratio"),
        ("flux1", "42", "The number 42"),
        ("video", "1,000.", "The number 1,000"),
        ("image", "U.S. 101", "A picture of U.S. 101"),
    ]
    framed = {
        prompt: EnhanceRequest.build(registry.get(name), prompt).opened()
        for name, prompt, _ in cases
    }
    assert [framed[prompt] and framed[prompt].opening for _, prompt, _ in cases] == [
        o for _, _, o in cases
    ]
    assert framed["42"].profile.opening == "frame" and framed["42"].profile.name == "flux1"
    assert (
        EnhanceRequest.build(registry.get("image-to-video"), "bond").opened() is None
    )  # no frame for i2v
    assert EnhanceRequest.build(registry.get("sdxl"), "bond").opened() is None  # tags


def test_only_a_prompt_in_a_language_the_model_cannot_read_is_skipped():
    wan, english = default_registry().get("wan-t2v"), frozenset({"en"})
    skipped = {
        p: EnhanceRequest.build(wan, p, model_languages=english).skip_reason
        for p in (
            "一只猫在滑板上",
            "a cat 在滑板上",
            "un gâteau très épais à côté",
            "a cat",
            "42 !",
            "un chat sur une planche",
            "a latte on the table",
        )
    }
    assert [p for p, reason in skipped.items() if reason] == [
        "一只猫在滑板上",
        "a cat 在滑板上",
        "un gâteau très épais à côté",
        "un chat sur une planche",
    ]
    assert (
        "this Chinese one" in skipped["一只猫在滑板上"]
        and "French" in skipped["un gâteau très épais à côté"]
    )
    assert (
        EnhanceRequest.build(wan, "一只猫在滑板上").skip_reason is None
    )  # a model of unknown languages
    forced = EnhanceRequest.build(
        wan, "一只猫在滑板上", EnhanceOptions(force=True), model_languages=english
    )
    assert forced.skip_reason is None


def test_the_continuation_joins_its_opening_with_a_space_only_where_a_word_follows():
    assert _joined("A cat", " rides a board.") == "A cat rides a board."
    assert _joined("A cat", ", tail up, rides.") == "A cat, tail up, rides."
    assert _joined("A cat", "rides.") == "A cat rides."
    assert _joined("", "Text.") == "Text."


@pytest.fixture(scope="module")
def opening_enhancer(model_dir, tmp_path_factory):
    folder = Path(tmp_path_factory.mktemp("templates"))
    text = (builtin_template_dir() / "video.toml").read_text(encoding="utf-8")
    (folder / "video.toml").write_text(
        text.replace("\nmax_new_tokens", '\nopening = "prompt"\nmax_new_tokens', 1),
        encoding="utf-8",
    )
    enhancer = Enhancer(model_dir, templates_dir=folder, quiet=True, retries=0)
    assert enhancer.profile("video").opening == "prompt"
    return enhancer


@pytest.mark.slow
def test_the_backend_continues_a_last_assistant_message(opening_enhancer):
    backend = opening_enhancer.backend
    chat = [{"role": "system", "content": "Describe scenes."}, {"role": "user", "content": "a cat"}]
    tokenizer = backend.generator.tokenizer
    ids = backend.encode(chat + [{"role": "assistant", "content": "A cat"}])
    assert ids == tokenizer.encode_chat(chat) + tokenizer.encode("A cat")


@pytest.mark.slow
def test_enhance_and_stream_begin_with_the_users_words(opening_enhancer):
    result = opening_enhancer.enhance("a red kite over a hill", "video", seed=0)
    # an answer that fails the assessment falls back to the prompt itself
    assert result.text.startswith("A red kite over a hill") or (
        result.fallback and result.text == "a red kite over a hill"
    ), result
    stream = opening_enhancer.stream("a red kite over a hill", "video", seed=0, max_new_tokens=40)
    streamed = "".join(stream)
    assert streamed.startswith("A red kite over a hill")
    assert stream.result is not None and stream.result.stats.completion_tokens > 0


@pytest.mark.slow
def test_a_framed_answer_keeps_a_lone_number(opening_enhancer):
    framed = default_registry().get("image").model_copy(update={"opening": "frame"})
    result = opening_enhancer.enhance("42", framed, seed=0)
    assert result.fallback or (
        result.text.startswith("The number 42") and result.assessment.passed
    ), result
    stream = opening_enhancer.stream("bond", framed, seed=0, max_new_tokens=30)
    assert "".join(stream).startswith("A picture of bond")
