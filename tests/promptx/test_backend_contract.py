"""The Backend contract: a second backend is a subclass implementing its abstract members, nothing
else.

The backend here writes what a test tells it to (a scripted writer), which is what lets these
tests check the Enhancer's side of the contract: the chat it sends, the prompt style it honours,
the assessment and fallback it applies to what comes back. The embedded model's own behaviour is
tested in test_enhance.py.
"""

from __future__ import annotations

import pytest

from promptx import Enhancer
from promptx.backends import Backend, GenerationOptions, GenerationOutput, GenerationRun
from promptx.errors import InvalidInputError


class ScriptedBackend(Backend):
    """Answers each call with the next scripted text and records the chats it was sent."""

    name = "scripted"
    model_name = "script"

    def __init__(self, answers: list[str], prompt_style: str = "full") -> None:
        self.answers, self.chats, self.prompt_style = list(answers), [], prompt_style

    @property
    def context_window(self) -> int:
        return 4096

    def count_prompt_tokens(self, messages) -> int:
        return sum(len(m["content"].split()) for m in messages)

    def start(self, messages, options: GenerationOptions) -> GenerationRun:
        self.chats.append(messages)
        text = self.answers.pop(0)

        def deltas(run: GenerationRun):
            for word in text.split(" "):
                yield word + " "
            run.output = GenerationOutput(
                text=text,
                prompt_tokens=self.count_prompt_tokens(messages),
                completion_tokens=len(text.split()),
                finish_reason="stop",
                latency_s=0.01,
                tokens_per_s=100.0,
            )

        return GenerationRun(deltas)


FAITHFUL = (
    "A ginger cat rides a red skateboard down a quiet sunlit street, its paws spread wide for "
    "balance and its tail held high. Warm late afternoon light, shallow depth of field, "
    "a low camera angle and soft shadows on the asphalt, crisp detailed photograph."
)
INVENTED = (
    "A ginger cat rides a skateboard while a barking dog chases it down the street and a boy on a "
    "bicycle cheers from the pavement, warm light, low camera angle, detailed photograph."
)


def test_a_subclass_is_all_a_new_backend_needs():
    backend = ScriptedBackend([FAITHFUL])
    result = Enhancer(backend=backend, retries=0).enhance("a cat on a skateboard", "image", seed=1)
    assert result.text.startswith("A ginger cat rides") and not result.fallback
    assert result.stats.backend == "scripted" and result.stats.attempts == 1
    assert len(backend.chats[0]) > 2  # full style: system + few-shot examples + input


def test_a_rejected_output_is_retried_then_falls_back_with_the_finding():
    backend = ScriptedBackend([INVENTED, INVENTED, INVENTED])
    result = Enhancer(backend=backend, retries=1).enhance("a cat", "image", seed=1)
    assert result.fallback and result.text == "a cat"
    assert "dog" in result.reason and result.stats.attempts == 3  # two free, one framed


CONTINUED = (
    "rolls down a quiet sunlit street, paws spread wide for balance and tail held high. Warm late "
    "afternoon light, shallow depth of field, a low camera angle, crisp detailed photograph."
)


def test_after_the_retries_a_last_attempt_opens_the_answer_with_the_users_words():
    backend = ScriptedBackend([INVENTED, INVENTED, CONTINUED])
    result = Enhancer(backend=backend, retries=1).enhance("a cat on a skateboard", "image", seed=1)
    assert not result.fallback and result.stats.attempts == 3
    assert result.text.startswith("A cat on a skateboard rolls down a quiet sunlit street")
    assert [chat[-1]["role"] for chat in backend.chats[:2]] == ["user", "user"]  # the free attempts
    assert backend.chats[2][-1] == {"role": "assistant", "content": "A cat on a skateboard"}


def test_no_opened_attempt_without_a_retry_and_a_framed_one_for_a_prompt_under_three_words():
    backend = ScriptedBackend([INVENTED])
    assert (
        Enhancer(backend=backend, retries=0)
        .enhance("a cat on a skateboard", "image", seed=1)
        .fallback
    )
    backend = ScriptedBackend([INVENTED.replace("skateboard", "mat")] * 2 + [" " + CONTINUED])
    result = Enhancer(backend=backend, retries=1).enhance("a cat", "image", seed=1)
    assert not result.fallback and result.text.startswith(
        "A picture of a cat rolls down a quiet sunlit street"
    )
    assert [chat[-1]["role"] for chat in backend.chats] == ["user", "user", "assistant"]
    assert backend.chats[2][-1]["content"] == "A picture of a cat"


def test_enhance_many_runs_one_by_one_on_a_backend_that_does_not_batch():
    backend = ScriptedBackend([FAITHFUL, FAITHFUL], prompt_style="short")
    results = Enhancer(backend=backend, retries=0).enhance_many(
        ["a cat on a skateboard"] * 2, "image", seed=1
    )
    assert [r.fallback for r in results] == [False, False]
    assert [len(chat) for chat in backend.chats] == [2, 2]  # short style: system + input only


def test_something_that_is_not_a_backend_is_refused():
    with pytest.raises(InvalidInputError, match="must subclass promptx.backends.Backend"):
        Enhancer(backend=object())

    class Incomplete(Backend):
        name = "incomplete"

    with pytest.raises(TypeError):
        Incomplete()


def test_enhancing_inside_an_open_stream_is_refused_not_a_hang():
    enhancer = Enhancer(backend=ScriptedBackend([FAITHFUL, FAITHFUL]), retries=0)
    stream = enhancer.stream("a cat on a skateboard", "image", seed=1)
    for _ in stream:
        with pytest.raises(InvalidInputError, match="streaming in this thread"):
            enhancer.enhance("a cat on a skateboard", "image", seed=1)
        with pytest.raises(InvalidInputError, match="streaming in this thread"):
            enhancer.enhance_many(["a cat"], "image")
        break
    assert enhancer.enhance("a cat on a skateboard", "image", seed=1).text.startswith(
        "A ginger cat"
    )


def test_results_report_the_text_encoder_count_of_the_returned_text():
    tags = (
        "ginger cat, red skateboard, quiet sunlit street, paws spread wide for balance, tail held "
        "high, warm late afternoon light, shallow depth of field, low camera angle, "
        "soft shadows on asphalt, crisp detailed photograph, " * 3
    )
    result = Enhancer(backend=ScriptedBackend([tags]), retries=0).enhance(
        "a cat on a skateboard", "sdxl", seed=1
    )
    from promptx.text.encoder_count import counter_for

    counter = counter_for("clip-l")
    assert (
        result.stats.encoder_counter == counter.name
        and result.stats.encoder_tokens == counter.count(result.text)
    )
    assert result.stats.encoder_tokens <= 75  # SDXL's CLIP budget, cut by whole tags
    video = Enhancer(backend=ScriptedBackend([FAITHFUL]), retries=0).enhance(
        "a cat on a skateboard", "wan", seed=1
    )
    assert (
        video.stats.encoder_counter == "estimate" and video.stats.encoder_tokens > 20
    )  # umT5: no tokenizer here


def test_a_backend_that_declares_its_languages_is_not_asked_to_enhance_another():
    english_only = ScriptedBackend([])
    english_only.languages = frozenset({"en"})
    result = Enhancer(backend=english_only).enhance("一只猫在滑板上", "wan-t2v", seed=1)
    assert result.skipped and result.text == "一只猫在滑板上" and english_only.chats == []
    anything = ScriptedBackend(
        [
            "一只橘猫踩着滑板穿过安静的街道，尾巴高高翘起，午后暖光，低机位跟拍，画面清晰细腻，写实风格。"
        ]
    )
    assert (
        not Enhancer(backend=anything, retries=0)
        .enhance("一只猫在滑板上", "wan-t2v", seed=1)
        .skipped
    )
    assert len(anything.chats) == 1  # languages=None (a remote model): tried


def test_an_output_that_only_lost_the_camera_move_is_kept_with_a_sentence_that_makes_it():
    unmoved = (
        "A ginger cat rides a red skateboard down a quiet sunlit street, its paws spread wide for "
        "balance and its tail held high as the wheels rattle over the cracks in the asphalt. Warm "
        "late afternoon light falls across the parked cars and shop windows, long soft shadows "
        "stretch behind the board, and leaves drift along the kerb. Realistic footage, "
        "shallow depth of field."
    )
    result = Enhancer(backend=ScriptedBackend([unmoved]), retries=0).enhance(
        "a cat on a skateboard, camera pans left", "video", seed=1
    )
    assert not result.fallback and result.stats.attempts == 1
    assert result.text == unmoved + " The camera pans slowly to the left."


def test_the_view_a_prompt_names_is_said_at_the_end_of_an_output_that_drops_it():
    cup = (
        "A white porcelain cup stands on the left of a polished silver fork on a pale oak table, a "
        "thin curl of steam rising from the cup while soft morning light falls across the grain of "
        "the wood and catches the edge of the fork. Realistic photograph, shallow depth of field."
    )
    result = Enhancer(backend=ScriptedBackend([cup]), retries=0).enhance(
        "a cup on the left of a fork, front view", "image", seed=1
    )
    assert not result.fallback and result.text == cup + " Front view."
