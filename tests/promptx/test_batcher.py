"""Concurrent callers of one backend are decoded in batches; one failure stays with its caller."""

from __future__ import annotations

import threading
import time

import pytest

from promptx.backends.base import GenerationOptions, GenerationOutput
from promptx.backends.batcher import RequestBatcher
from promptx.errors import PromptTooLongError


def fake_generate_many(calls):
    def generate_many(requests):
        calls.append([m[0]["content"] for m, _ in requests])
        time.sleep(0.2)
        if any(m[0]["content"] == "too long" for m, _ in requests):
            raise PromptTooLongError("too long")
        return [
            GenerationOutput(
                text=m[0]["content"].upper(),
                prompt_tokens=1,
                completion_tokens=1,
                finish_reason="eos",
                latency_s=0.2,
                tokens_per_s=5.0,
            )
            for m, _ in requests
        ]

    return generate_many


def run_concurrently(batcher, prompts):
    results, barrier = {}, threading.Barrier(len(prompts))

    def call(prompt):
        barrier.wait()
        try:
            results[prompt] = batcher.generate(
                [{"role": "user", "content": prompt}], GenerationOptions()
            )
        except PromptTooLongError as exc:
            results[prompt] = exc

    threads = [threading.Thread(target=call, args=(p,)) for p in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    return results


def test_concurrent_requests_share_batches_and_each_gets_its_own_output():
    calls = []
    batcher = RequestBatcher(fake_generate_many(calls), max_batch=3)
    prompts = [f"prompt {i}" for i in range(7)]
    results = run_concurrently(batcher, prompts)
    assert {p: r.text for p, r in results.items()} == {p: p.upper() for p in prompts}
    assert max(batcher.batch_sizes) > 1 and max(batcher.batch_sizes) <= 3
    assert sorted(p for call in calls for p in call) == sorted(prompts)


def test_a_failing_request_fails_alone():
    calls = []
    batcher = RequestBatcher(fake_generate_many(calls))
    results = run_concurrently(batcher, ["a", "too long", "b", "c"])
    assert isinstance(results["too long"], PromptTooLongError)
    assert {p: results[p].text for p in "abc"} == {"a": "A", "b": "B", "c": "C"}


def test_a_lone_caller_decodes_at_once():
    calls = []
    batcher = RequestBatcher(fake_generate_many(calls))
    started = time.perf_counter()
    assert batcher.generate([{"role": "user", "content": "x"}], GenerationOptions()).text == "X"
    assert time.perf_counter() - started < 1.0 and calls == [["x"]]
    with pytest.raises(ValueError):
        RequestBatcher(fake_generate_many(calls), max_batch=0)


def test_only_callers_that_have_met_wait_for_company():
    """A lone caller on a quiet backend skips the gathering window; once callers have met
    (one arrived while another decoded), a leader waits the window for others to join."""
    calls = []
    batcher = RequestBatcher(fake_generate_many(calls), max_batch=4, gather_s=1.5)

    def alone() -> float:
        started = time.perf_counter()
        batcher.generate([{"role": "user", "content": "alone"}], GenerationOptions())
        return time.perf_counter() - started

    assert alone() < 1.0  # 0.2 s decoding, no window
    run_concurrently(batcher, ["a", "b", "c"])
    assert alone() >= 1.5  # waited the whole window: nobody came


def test_an_interrupt_reaches_every_caller_of_its_batch_and_nothing_spins():
    def interrupted(requests):
        time.sleep(0.1)
        raise KeyboardInterrupt

    batcher = RequestBatcher(interrupted)
    with pytest.raises(KeyboardInterrupt):
        batcher.generate([{"role": "user", "content": "x"}], GenerationOptions())
    assert list(batcher.batch_sizes) == [1] and not batcher._leading and batcher._queue == []


def test_the_word_budget_does_not_count_a_preamble():
    from types import SimpleNamespace

    from engine.decode.sampling import SamplingParams
    from engine.decode.stopping import StopChecker
    from promptx.backends.embedded import EmbeddedBackend

    words = (
        "Sure! Here is a detailed prompt for the video model: "
        "A red fox runs through deep snow at dawn ."
    ).split()
    backend = EmbeddedBackend.__new__(EmbeddedBackend)
    backend._word_bounds = None
    backend.generator = SimpleNamespace(
        tokenizer=SimpleNamespace(
            decode=lambda tokens: " ".join(words[t] for t in tokens),
            token_texts=lambda: [" " + w for w in words],
        ),
        stop_checker=lambda params, stop_if=None: StopChecker(
            (), params.max_new_tokens, stop_if=stop_if
        ),
    )
    stop = backend._stop_checker(SamplingParams(max_new_tokens=50), GenerationOptions(max_words=8))
    used = stop.accept_many(range(len(words)))
    assert stop.finish_reason == "budget"
    assert used == 19  # 10 preamble words do not count: the 9th word after it stops the text
