"""Language identification (promptx.languages) and what it decides: a prompt the English-only
parts cannot read passes through with the language named, and ``result.language`` says it."""

import pytest

import promptx
from promptx.errors import InvalidInputError
from promptx.languages import describe_language, identify_language


@pytest.mark.parametrize(
    "text, code",
    [
        ("a cat on a skateboard", "en"),
        ("a cyberpunk samurai with a katana in Neo-Tokyo", "en"),
        ("a cafe in Paris, la vie en rose", "en"),
        ("Los Angeles skyline at night", "en"),
        ("skateboarding dog", "en"),
        ("Zendaya", "en"),  # a lone name is not evidence of anything
        ("een zwarte kat op het dak", "nl"),
        ("Köpek parkta koşuyor", "tr"),
        ("gato negro", "es"),
        ("un chat noir sur le toit", "fr"),
        ("ein Hund läuft im Park", "de"),
        ("una donna cammina sulla spiaggia", "it"),
        ("cão correndo na praia", "pt"),
        ("Kot śpi na kanapie", "pl"),
        ("kucing hitam di atas atap", "id"),
        ("一只猫在草地上睡觉", "zh"),
        ("猫が寝ている", "ja"),
        ("고양이가 잔디 위에서 잔다", "ko"),
        ("Кошка спит на диване", "ru"),
        ("a golden retriever running on the beach at sunset, 夕阳下的海滩", "en+zh"),
        ("🐱🐶", "other"),
        ("42", "other"),
    ],
)
def test_identifies_the_language(text, code):
    assert identify_language(text) == code


def test_describes_languages_and_mixes():
    assert describe_language("es") == "Spanish"
    assert describe_language("en+zh") == "mixed English and Chinese"
    assert describe_language("other") == "unidentified"


@pytest.mark.parametrize(
    "prompt, code, name",
    [
        ("een zwarte kat op het dak", "nl", "Dutch"),
        ("gato negro", "es", "Spanish"),
        ("Köpek parkta koşuyor", "tr", "Turkish"),
        ("一只猫在草地上睡觉", "zh", "Chinese"),
        ("a red fox walking through the forest, 雪花飘落", "en+zh", "mixed English and Chinese"),
    ],
)
@pytest.mark.parametrize("strength", ["light", "medium", "full"])
def test_foreign_and_mixed_prompts_pass_through_named(prompt, code, name, strength):
    result = promptx.enhance(prompt, "video", strength=strength, seed=1)
    assert result.skipped and not result.fallback
    assert result.text == prompt
    assert result.language == code
    assert name in result.reason


def test_an_english_prompt_is_enhanced_and_says_english():
    result = promptx.enhance("a cat on a skateboard", "video", seed=1)
    assert not result.skipped and result.text.startswith("A cat on a skateboard")
    assert result.language == "en"


@pytest.mark.parametrize("prompt", ["x", "🐱", "!!", "🔥🔥🔥", "?"])
def test_a_prompt_without_words_is_passed_through(prompt):
    result = promptx.enhance(prompt, "video", seed=1)
    assert result.skipped and result.text == prompt
    assert "no words" in result.reason


def test_one_cjk_character_is_a_word():
    result = promptx.enhance("猫", "video", seed=1)
    assert "no words" not in (result.reason or "")


@pytest.mark.parametrize("language", ["xx", "klingon", "e n", "", 5])
def test_an_unknown_output_language_is_refused_up_front(language):
    with pytest.raises(InvalidInputError, match="language"):
        promptx.enhance("a cat", "video", language=language)


@pytest.mark.parametrize("language", ["en", "keep", "es", "pt-BR", "zh_CN", "german", "EN"])
def test_known_output_languages_are_accepted(language):
    assert promptx.enhance("a cat on a skateboard", "video", language=language, seed=1).text
