"""Tests of the template profiles: schema, shipped files, registry and rendering.

Pure data tests: no model and no torch.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from promptx.errors import InvalidInputError, TemplateError, UnknownTargetError
from promptx.profiles.registry import (
    ENV_VAR,
    TemplateRegistry,
    builtin_template_dir,
    default_registry,
    get_profile,
    load_profile_file,
)
from promptx.profiles.render import DEFAULT_I2V_PROMPT, image_line, render_messages, substitute
from promptx.profiles.schema import Profile, count_words, template_placeholders

REGISTRY = TemplateRegistry()
NAMES = REGISTRY.names()
WAN_NEGATIVE = (
    "Bright tones, overexposed, static, blurred details, subtitles, style, works, paintings, "
    "images, static, overall gray, worst quality, low quality, JPEG compression residue, ugly, "
    "incomplete, extra fingers, poorly drawn hands, poorly drawn faces, deformed, disfigured, "
    "misshapen limbs, fused fingers, still picture, messy background, three legs, many people "
    "in the background, walking backwards"
)

VALID = """\
name = "NAME"
task = "t2i"
generator = "Test Gen"
description = "A profile for tests."
aliases = ["ALIAS"]
format = "paragraph"
language = "english"
enhance_threshold_words = 5
max_new_tokens = 60
system_prompt = "Rewrite for {generator} in {min_words}-{max_words} words. {language_rule} {style}"
styles = { cinematic = "Make it cinematic." }

[length]
min_words = 3
max_words = 20

[[examples]]
input = "a cat"
output = "a fluffy gray cat asleep on a sunny windowsill"
"""


def write_profile(directory: Path, name: str, text: str = VALID, alias: str | None = None) -> Path:
    path = directory / f"{name}.toml"
    text = text.replace('"NAME"', f'"{name}"').replace('"ALIAS"', f'"{alias or name + "-alias"}"')
    path.write_text(text, encoding="utf-8")
    return path


def styled(name: str) -> list[tuple[str, str | None]]:
    return [(name, None)] + [(name, s) for s in REGISTRY.get(name).styles]


# --- shipped templates --------------------------------------------------------------------


def test_required_profiles_ship():
    required = {
        "image",
        "video",
        "image-to-video",
        "image-to-image",
        "wan-t2v",
        "wan-i2v",
        "ltx-video",
        "hunyuan-video",
        "cogvideox",
        "flux1",
        "flux2",
        "flux2-edit",
        "sd3",
        "sdxl",
        "qwen-image",
    }
    assert required <= set(NAMES)
    assert builtin_template_dir().joinpath("image.toml").is_file()


@pytest.mark.parametrize(("name", "style"), [c for n in NAMES for c in styled(n)])
def test_every_template_renders_every_style(name, style):
    profile = REGISTRY.get(name)
    caption = "a lighthouse" if profile.wants_image else None
    messages = render_messages(profile, "a lighthouse at dusk", style=style, caption=caption)
    roles = [m["role"] for m in messages]
    assert roles == ["system"] + ["user", "assistant"] * len(profile.examples) + ["user"]
    system = messages[0]["content"]
    assert "{" not in system and "}" not in system
    assert str(profile.length.max_words) in system
    assert "only" in system.lower()  # "output only the prompt"
    if style is not None:
        assert profile.styles[style] in system
    assert "a lighthouse at dusk" in messages[-1]["content"]
    if profile.wants_image:
        assert messages[-1]["content"].startswith("Image: a lighthouse.")


@pytest.mark.parametrize("name", NAMES)
def test_profile_basics(name):
    profile = REGISTRY.get(name)
    budget = profile.length
    assert 2 <= len(profile.examples) <= 3
    assert {"cinematic", "anime", "photographic"} <= set(profile.styles)
    assert budget.min_words <= budget.max_words
    assert profile.enhance_threshold_words < budget.max_words
    assert profile.max_new_tokens >= 1.5 * budget.max_words
    assert 60 <= count_words(profile.system_prompt) <= 160
    assert profile.wants_image == (profile.task in ("i2v", "i2i"))
    assert REGISTRY.source(name).stem == name


@pytest.mark.parametrize("name", NAMES)
def test_examples_respect_word_budget(name):
    profile = REGISTRY.get(name)
    for ex in profile.examples:
        assert profile.length.min_words <= count_words(ex.output) <= profile.length.max_words
        assert bool(ex.image) == profile.wants_image


def test_tags_examples_are_comma_separated_and_fit_clip():
    tag_profiles = [p for p in REGISTRY.profiles() if p.format == "tags"]
    assert [p.name for p in tag_profiles] == ["sdxl"]
    sdxl = tag_profiles[0]
    assert sdxl.length.encoder == "clip-l" and sdxl.length.max_encoder_tokens == 75
    assert 40 <= sdxl.length.max_words <= 50
    for ex in sdxl.examples:
        tags = [t.strip() for t in ex.output.split(",")]
        assert len(tags) >= 8
        assert all(t and len(t.strip("()").split()) <= 4 for t in tags), tags
        assert not ex.output.rstrip().endswith(".")
        # every word is at least one CLIP token and so is every punctuation mark
        assert len(re.findall(r"[A-Za-z]+|\d|[^\w\s]", ex.output)) <= 70


def test_model_conventions():
    wan = REGISTRY.get("wan-t2v")
    assert wan.language == "keep" and wan.negative_prompt == WAN_NEGATIVE
    assert REGISTRY.get("wan-i2v").negative_prompt == WAN_NEGATIVE
    assert REGISTRY.get("qwen-image").language == "keep"
    ltx = REGISTRY.get("ltx-video")
    assert ltx.enhance_threshold_words == 120
    assert ltx.should_enhance("word " * 120) and not ltx.should_enhance("word " * 121)
    assert ltx.should_enhance("word " * 121, force=True)
    assert (
        REGISTRY.get("cogvideox").length.min_words
        <= 100
        <= REGISTRY.get("cogvideox").length.max_words
    )
    edit = REGISTRY.get("flux2-edit")
    assert (edit.task, edit.format, edit.length.min_words, edit.length.max_words) == (
        "i2i",
        "instruction",
        50,
        80,
    )
    for ex in REGISTRY.get("qwen-image").examples:
        assert not re.search(r"\b(no|not|without|never|nobody)\b", ex.output, re.I), ex.output
    for ex in REGISTRY.get("flux1").examples + REGISTRY.get("qwen-image").examples:
        for quoted in re.findall(r'"([^"]+)"', ex.input):
            assert f'"{quoted}"' in ex.output


# --- registry ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("t2i", "image"),
        ("text-to-image", "image"),
        ("t2v", "video"),
        ("text-to-video", "video"),
        ("i2v", "image-to-video"),
        ("i2i", "image-to-image"),
        ("edit", "image-to-image"),
        ("wan", "wan-t2v"),
        ("flux", "flux1"),
        ("flux2-i2i", "flux2-edit"),
        ("hunyuan", "hunyuan-video"),
        ("cogvideo", "cogvideox"),
        ("ltx", "ltx-video"),
        ("qwen", "qwen-image"),
        ("WAN", "wan-t2v"),
        (" Flux ", "flux1"),
        ("SDXL", "sdxl"),
    ],
)
def test_aliases_resolve_case_insensitively(alias, name):
    assert REGISTRY.get(alias).name == name
    assert alias in REGISTRY


def test_unknown_target_lists_valid_names():
    with pytest.raises(UnknownTargetError) as info:
        REGISTRY.get("midjourney")
    message = str(info.value)
    assert "midjourney" in message
    assert all(name in message for name in NAMES)
    assert isinstance(info.value, KeyError)


def test_default_registry_is_cached():
    assert default_registry() is default_registry()
    assert get_profile("wan").name == "wan-t2v"


def test_user_dir_overrides_builtin_and_adds_profile(tmp_path):
    write_profile(tmp_path, "image", VALID.replace("A profile for tests.", "My image."))
    write_profile(tmp_path, "mine")
    registry = TemplateRegistry([tmp_path])
    assert registry.get("image").description == "My image."
    assert registry.source("image") == tmp_path / "image.toml"
    assert registry.get("mine-alias").name == "mine"
    assert "t2i" not in registry  # the override replaced the builtin, aliases included
    assert set(NAMES) | {"mine"} == set(registry.names())


def test_env_var_adds_user_dirs(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    write_profile(first, "one")
    write_profile(second, "two")
    monkeypatch.setenv(ENV_VAR, f"{first}{os.pathsep}{second}")
    assert {"one", "two"} <= set(TemplateRegistry().names())


def test_missing_user_dir_raises(tmp_path):
    with pytest.raises(TemplateError, match="does not exist"):
        TemplateRegistry([tmp_path / "nope"])


def test_duplicate_alias_names_both_files(tmp_path):
    write_profile(tmp_path, "mine", alias="wan")
    with pytest.raises(TemplateError) as info:
        TemplateRegistry([tmp_path])
    assert str(info.value).startswith(str(tmp_path / "mine.toml"))
    assert "wan-t2v.toml" in str(info.value)


def test_alias_equal_to_other_profile_name(tmp_path):
    write_profile(tmp_path, "mine", alias="sdxl")
    with pytest.raises(TemplateError, match="sdxl.toml"):
        TemplateRegistry([tmp_path])


# --- bad files ----------------------------------------------------------------------------

BAD_FILES = {
    "syntax": (lambda t: t.replace('task = "t2i"', 'task = "t2i'), "TOML syntax"),
    "missing": (
        lambda t: re.sub(r"(?m)^system_prompt = .*\n", "", t),
        "system_prompt: Field required",
    ),
    "wrong-type": (
        lambda t: t.replace("max_words = 20", 'max_words = "many"'),
        "length.max_words: Input should be a valid integer",
    ),
    "bad-task": (lambda t: t.replace('task = "t2i"', 'task = "t2a"'), "task:"),
    "placeholder": (
        lambda t: t.replace("{style}", "{prompt.__class__}"),
        "system_prompt: unknown placeholder {prompt.__class__}",
    ),
    "template-brace": (
        lambda t: t.replace("aliases =", 'user_template = "{prompt} {oops"\naliases ='),
        "user_template: unbalanced",
    ),
    "no-prompt": (
        lambda t: t.replace("aliases =", 'user_template = "just text"\naliases ='),
        "user_template: must contain {prompt}",
    ),
    "stem": (lambda t: t.replace('name = "NAME"', 'name = "other"'), "name:"),
    "default-style": (
        lambda t: t.replace("aliases =", 'default_style = "noir"\naliases ='),
        "default_style: 'noir'",
    ),
    "min-max": (lambda t: t.replace("min_words = 3", "min_words = 30"), "length:"),
    "long-example": (
        lambda t: t.replace("a fluffy gray cat", "a " + "very " * 30 + "cat"),
        "examples.0.output",
    ),
    "extra": (
        lambda t: t.replace("aliases =", 'colour = "red"\naliases ='),
        "colour: Extra inputs",
    ),
    "own-alias": (
        lambda t: t.replace('["ALIAS"]', '["BAD"]'),
        "aliases: 'bad' is the profile's own name",
    ),
    "no-examples": (
        lambda t: t.replace("[length]", "examples = []\n[length]").split("[[")[0],
        "examples: List should have at least 1 item",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_names_file_and_field(tmp_path, case):
    mutate, expected = BAD_FILES[case]
    path = write_profile(tmp_path, "bad", mutate(VALID))
    with pytest.raises(TemplateError) as info:
        load_profile_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert expected in message, message
    with pytest.raises(TemplateError):
        TemplateRegistry([tmp_path])


def test_valid_fixture_loads(tmp_path):
    profile = load_profile_file(write_profile(tmp_path, "good"))
    assert isinstance(profile, Profile) and profile.aliases == ["good-alias"]


def test_i2v_needs_image_placeholder_and_example_images(tmp_path):
    text = VALID.replace('task = "t2i"', 'task = "i2v"')
    with pytest.raises(TemplateError, match=r"user_template: .*\{image\}"):
        load_profile_file(write_profile(tmp_path, "vid", text))
    text = text.replace("aliases =", 'user_template = "{image} {prompt}"\naliases =')
    with pytest.raises(TemplateError, match=r"examples\.0\.image"):
        load_profile_file(write_profile(tmp_path, "vid", text))


# --- rendering ----------------------------------------------------------------------------


def test_substitution_is_data_only():
    profile = REGISTRY.get("image")
    prompt = "a sign saying {max_words} and {prompt.__class__} and {style} {{x}}"
    messages = render_messages(profile, prompt)
    assert messages[-1]["content"] == prompt
    assert prompt not in messages[0]["content"]
    override = render_messages(profile, prompt, system_prompt="Rewrite: {prompt} ({max_words})")
    assert override[0]["content"] == f"Rewrite: {prompt} (90)"


def test_substitute_and_placeholders():
    assert substitute("{{prompt}} {prompt}", {"prompt": "{x}"}) == "{prompt} {x}"
    assert template_placeholders("{{literal}} {image} {prompt}") == {"image", "prompt"}
    for bad in ("{nope}", "{prompt.__class__}", "{}", "{prompt", "prompt}"):
        with pytest.raises(ValueError):
            template_placeholders(bad)


def test_system_prompt_override_is_checked():
    profile = REGISTRY.get("video")
    with pytest.raises(InvalidInputError, match="unknown placeholder"):
        render_messages(profile, "x", system_prompt="Do {evil}")
    with pytest.raises(InvalidInputError):
        render_messages(profile, "x", system_prompt="   ")
    messages = render_messages(
        profile, "x", system_prompt="Be brief.", style="anime", language="zh"
    )
    assert messages[0]["content"] == (f"Be brief.\n{profile.styles['anime']}\nWrite in Chinese.")


def test_unknown_style_lists_styles():
    with pytest.raises(InvalidInputError) as info:
        render_messages(REGISTRY.get("sdxl"), "a cat", style="vaporwave")
    assert all(s in str(info.value) for s in REGISTRY.get("sdxl").styles)
    assert render_messages(REGISTRY.get("sdxl"), "a cat", style="ANIME")


@pytest.mark.parametrize(
    ("name", "language", "rule"),
    [
        ("image", None, "Write in English."),
        ("wan-t2v", None, "Write in the same language as the input."),
        ("wan-t2v", "en", "Write in English."),
        ("wan-t2v", "English", "Write in English."),
        ("image", "keep", "Write in the same language as the input."),
        ("image", "zh", "Write in Chinese."),
        ("image", "pt-BR", "Write in Portuguese."),
        ("image", "german", "Write in German."),
    ],
)
def test_language_rule(name, language, rule):
    assert rule in render_messages(REGISTRY.get(name), "a cat", language=language)[0]["content"]


def test_bad_language_raises():
    with pytest.raises(InvalidInputError, match="language"):
        render_messages(REGISTRY.get("image"), "a cat", language="x1")


def test_empty_prompts():
    messages = render_messages(REGISTRY.get("i2v"), "  ", caption="a harbor")
    assert messages[-1]["content"] == f"Image: a harbor.\nMotion: {DEFAULT_I2V_PROMPT}"
    for name in ("image", "video", "i2i", "sdxl"):
        with pytest.raises(InvalidInputError, match="empty prompt"):
            render_messages(REGISTRY.get(name), "")


def test_image_inputs():
    messages = render_messages(
        REGISTRY.get("flux2-edit"),
        "make it night",
        image_facts="1024x768, landscape (4:3)",
        caption="a town square.",
    )
    assert messages[-1]["content"] == (
        "Image: a town square. Format: 1024x768, landscape (4:3).\nEdit: make it night"
    )
    assert image_line("512x512, square", None) == "Image: 512x512, square."
    assert image_line(None, None) == "Image: no description given."
    with pytest.raises(InvalidInputError, match="takes no image"):
        render_messages(REGISTRY.get("image"), "a cat", caption="a dog")


def test_count_words():
    assert count_words("a red  bike, by the wall — ok") == 7
    assert count_words("一只猫在滑板上") == 7
    assert count_words("a cat 在滑板上") == 6
    assert count_words("  ") == 0


def test_modules_do_not_import_torch():
    code = (
        "import sys, promptx.profiles.schema, promptx.profiles.render, promptx.profiles.registry\n"
        "promptx.profiles.registry.default_registry()\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)
