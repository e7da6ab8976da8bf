"""enhance() end to end with the real embedded model, for the four tasks: free prose (strength
"full"), the decoding path. The default strength (vetted phrases) is tested in test_strength.py."""

from __future__ import annotations

import sys
import threading

import pytest

import promptx
from promptx.enhancer import StreamRevision
from promptx.errors import ImageError, InvalidInputError, PromptTooLongError, UnknownTargetError
from promptx.text.validate import degenerate_problem, talking_to_user

pytestmark = pytest.mark.slow
TOKENS = 96  # enough for a full prompt at a sentence boundary, short enough for CI


@pytest.fixture(scope="module")
def enhancer(model_dir):
    return promptx.Enhancer(quiet=True, strength="full")


def assert_valid(enhancer, result, prompt):
    assert isinstance(result, promptx.EnhancedPrompt)
    assert str(result) == result.text and result.text.strip()
    assert result.original_prompt == prompt
    if not result.fallback:
        profile = enhancer.profile(result.target)
        assert result.assessment is not None and result.assessment.passed
        assert not talking_to_user(result.text) and degenerate_problem(result.text) is None
        assert len(result.text.split()) <= profile.length.max_words
        assert result.stats.completion_tokens > 0 and result.stats.tokens_per_s > 0
    else:
        assert result.text == prompt and result.reason


@pytest.mark.parametrize(
    "target, prompt, kwargs",
    [
        ("image", "a red fox in a snowy forest", {}),
        ("video", "a cat on a skateboard", {}),
        (
            "image-to-video",
            "the woman turns and smiles",
            {"caption": "a woman in a yellow coat on a bridge"},
        ),
        ("image-to-image", "make it winter", {"caption": "a village street in summer"}),
    ],
)
def test_enhance_each_task(enhancer, target, prompt, kwargs):
    result = enhancer.enhance(prompt, target, seed=3, max_new_tokens=TOKENS, **kwargs)
    assert_valid(enhancer, result, prompt)
    assert (
        result.task
        == {"image": "t2i", "video": "t2v", "image-to-video": "i2v", "image-to-image": "i2i"}[
            target
        ]
    )


def test_same_seed_same_output(enhancer):
    first = enhancer.enhance("a lighthouse in a storm", "flux", seed=11, max_new_tokens=TOKENS)
    again = enhancer.enhance("a lighthouse in a storm", "flux", seed=11, max_new_tokens=TOKENS)
    assert first.text == again.text and first.target == "flux1"


def test_image_input_feeds_the_template(enhancer, shared_data):
    image = shared_data / "images" / "cogvideo_beach.png"
    result = enhancer.enhance("", "i2v", image=image, seed=1, max_new_tokens=TOKENS)
    assert_valid(enhancer, result, "")


def test_stream_yields_deltas_and_a_result(enhancer):
    stream = enhancer.stream("a fox running through snow", "video", seed=2, max_new_tokens=48)
    deltas = list(stream)
    assert deltas and all(isinstance(d, str) for d in deltas)
    assert stream.result is not None and stream.result.stats.completion_tokens > 0


def test_leaving_a_stream_early_stops_its_decode(enhancer, monkeypatch):
    pulled = []
    start = enhancer.backend.start

    def counting_start(messages, options):
        run = start(messages, options)
        inner = run._deltas

        def counted():
            for delta in inner:
                pulled.append(delta)
                yield delta

        run._deltas = counted()
        return run

    monkeypatch.setattr(enhancer.backend, "start", counting_start)
    stream = enhancer.stream("a fox running through snow", "video", seed=2, max_new_tokens=200)
    for _ in stream:
        break  # the consumer leaves after the first delta
    assert enhancer._lock.acquire(timeout=120)  # the stream let go of the model
    enhancer._lock.release()
    assert stream.result is None and 1 <= len(pulled) < 20  # a full decode pulls ~100 deltas


def test_long_prompt_passes_through_unless_forced(enhancer):
    long_prompt = " ".join(["a quiet mountain lake under a pale morning sky"] * 20)
    result = enhancer.enhance(long_prompt, "ltx")
    assert result.skipped and not result.fallback and result.text == " ".join(long_prompt.split())


def test_a_prompt_in_a_language_the_embedded_model_cannot_read_passes_through_unless_forced(
    enhancer,
):
    assert enhancer.backend.languages == frozenset({"en"})
    prompt = "一只猫在滑板上"
    for target in ("wan-t2v", "video"):  # keeps the language / answers in English
        result = enhancer.enhance(prompt, target, seed=1)
        assert result.skipped and not result.fallback and result.text == prompt
        assert "English prompts only" in result.reason and "Chinese" in result.reason
    forced = enhancer.enhance(prompt, "wan-t2v", seed=1, force=True, max_new_tokens=24)
    assert not forced.skipped and forced.stats.completion_tokens > 0
    assert not enhancer.enhance(
        "42", "image", seed=1, max_new_tokens=24
    ).skipped  # no letters: no language


def test_enhance_many_keeps_order(enhancer):
    results = enhancer.enhance_many(["a red car", "a blue boat"], "sdxl", seed=4, max_new_tokens=64)
    assert [r.original_prompt for r in results] == ["a red car", "a blue boat"]
    for result in results:
        assert_valid(enhancer, result, result.original_prompt)


def test_bad_inputs_raise_typed_errors(enhancer, tmp_path):
    with pytest.raises(InvalidInputError, match="empty"):
        enhancer.enhance("   ", "video")
    with pytest.raises(UnknownTargetError, match="video"):
        enhancer.enhance("a cat", "no-such-target")
    with pytest.raises(InvalidInputError):
        enhancer.enhance(42, "video")
    with pytest.raises(InvalidInputError, match="style"):
        enhancer.enhance("a cat", "video", style="no-such-style")
    with pytest.raises(ImageError):
        enhancer.enhance("make it blue", "i2i", image=tmp_path / "missing.png")
    (tmp_path / "fake.png").write_text("not an image")
    with pytest.raises(ImageError):
        enhancer.enhance("make it blue", "i2i", image=tmp_path / "fake.png")
    with pytest.raises(PromptTooLongError):
        enhancer.enhance(
            "9 " * 9000, "video", force=True, max_new_tokens=4096
        )  # > 8192 tokens in any prompt style


def test_import_promptx_does_not_import_torch():
    import subprocess

    code = (
        "import sys, promptx; promptx.Enhancer; promptx.EnhancedPrompt; "
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_enhance_many_batches_and_matches_one_by_one(model_dir, fp32_model):
    """With a drafter attached, enhance_many decodes in one batch; greedy results equal
    enhance()'s."""
    from engine.bench import random_drafter
    from engine.generator import Generator
    from promptx.backends.embedded import EmbeddedBackend

    backend = EmbeddedBackend.around(Generator(*fp32_model), "embedded-test")
    backend.generator.drafter = random_drafter(backend.generator.model)
    batched_calls = []
    original = backend.generate_many
    backend.generate_many = lambda requests: (
        batched_calls.append(len(requests)) or original(requests)
    )
    # first attempts only: whether a retry follows depends on the assessment, not on batching
    enhancer = promptx.Enhancer(backend=backend, retries=0, strength="full")
    prompts = ["a red car", "a heron fishing at dawn"]
    many = enhancer.enhance_many(prompts, "video", temperature=0, max_new_tokens=32)
    assert batched_calls == [2]
    one_by_one = [enhancer.enhance(p, "video", temperature=0, max_new_tokens=32) for p in prompts]
    assert [r.text for r in many] == [r.text for r in one_by_one]
    assert all(r.stats.completion_tokens > 0 for r in many)
    prompts = prompts + ["a lighthouse at night"]
    alone = [r.text for r in one_by_one] + [
        enhancer.enhance(prompts[-1], "video", temperature=0, max_new_tokens=32).text
    ]
    concurrent, barrier = {}, threading.Barrier(len(prompts))

    def call(prompt):
        barrier.wait()
        concurrent[prompt] = enhancer.enhance(
            prompt, "video", temperature=0, max_new_tokens=32
        ).text

    threads = [threading.Thread(target=call, args=(p,)) for p in prompts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert concurrent == dict(zip(prompts, alone))  # concurrent callers get their own text...
    assert max(enhancer.batcher.batch_sizes) >= 2  # ...decoded together (the first may start alone)
    with pytest.raises(InvalidInputError, match="batch_size"):
        enhancer.enhance_many(prompts, "video", batch_size=0)


def test_generation_stops_once_the_word_budget_is_passed(enhancer):
    from promptx.backends.base import GenerationOptions
    from promptx.profiles.render import render_messages
    from promptx.profiles.schema import count_words

    messages = render_messages(enhancer.profile("video"), "a cat on a skateboard")
    output = enhancer.backend.start(
        messages, GenerationOptions(max_words=12, max_new_tokens=200, seed=1)
    ).finish()
    assert output.finish_reason == "budget" and 12 < count_words(output.text) <= 14
    assert output.completion_tokens < 40


def test_the_template_prefix_is_what_prompts_share(enhancer):
    from promptx.profiles.render import render_messages

    backend, profile = enhancer.backend, enhancer.profile("video")
    first, second = (render_messages(profile, p) for p in ("a cat", "two dogs running on a beach"))
    ids_first, ids_second = backend.encode(first), backend.encode(second)
    n = backend._prefix_len(first, ids_first)
    if backend.generator.prefixes is None:
        assert n == 0
        return
    assert 100 < n < len(ids_first) and ids_first[:n] == ids_second[:n]
    assert n == backend._prefix_len(second, ids_second)


def test_a_stream_whose_attempt_is_rejected_ends_with_the_final_text(enhancer):
    # 10 tokens leave no whole sentence: every attempt fails and the prompt comes back
    stream = enhancer.stream("a fox running through snow", "video", seed=2, max_new_tokens=10)
    items = list(stream)
    assert stream.result.fallback and stream.revised
    assert isinstance(items[-1], StreamRevision) and items[-1] == stream.result.text
    assert not any(isinstance(item, StreamRevision) for item in items[:-1])


def test_an_accepted_stream_is_not_revised_unless_its_text_changed(enhancer):
    stream = enhancer.stream("a lighthouse at dusk", "video", seed=1, max_new_tokens=TOKENS)
    items = list(stream)
    spelled = " ".join("".join(items[:-1] if stream.revised else items).split())
    assert stream.revised == (spelled != " ".join(stream.result.text.split()))
    assert (items[-1] if stream.revised else spelled) == (
        stream.result.text if stream.revised else spelled
    )


@pytest.mark.parametrize(
    "target, tokens", [("video", 40), ("video", 80), ("sdxl", 30), ("flux1", 40)]
)
def test_a_token_budget_never_cuts_a_sentence_or_tag(enhancer, monkeypatch, target, tokens):
    raws = []
    generate = enhancer.generate

    def recording(messages, options):
        output = generate(messages, options)
        raws.append(output)
        return output

    monkeypatch.setattr(enhancer, "generate", recording)
    result = enhancer.enhance(
        "a lighthouse keeper climbing the stairs at night", target, seed=4, max_new_tokens=tokens
    )
    if result.fallback:
        return
    raw = " ".join(raws[result.stats.attempts - 1].text.split())
    if target == "sdxl":
        last = result.text.split(",")[-1].strip()
        assert f"{last}," in raw or raws[-1].finish_reason not in ("length", "budget")
    else:
        assert result.text[-1] in ".!?"
        last_words = " ".join(result.text.split()[-3:])[:-1]
        assert last_words + result.text[-1] in raw or last_words + "." in raw


def test_the_hottest_temperature_gives_no_word_salad(enhancer):
    """Temperature 2 (the allowed maximum) makes the small model write non-words; the assessment
    rejects them and the prompt comes back instead."""
    for prompt in ("a red fox in snow", "an old tram in the rain"):
        result = enhancer.enhance(prompt, "video", seed=1, temperature=2.0, max_new_tokens=TOKENS)
        assert result.fallback and result.text == prompt
