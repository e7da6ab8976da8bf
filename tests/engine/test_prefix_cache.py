"""Prompt-prefix KV reuse: a warm prefill computes exactly what a cold one does."""

from __future__ import annotations

import torch

from engine.decode.autoregressive import decode_autoregressive
from engine.decode.prefix_cache import PrefixCache, prefill_split
from engine.decode.sampling import SamplingParams
from engine.decode.stats import DecodeStats
from engine.decode.stopping import StopChecker
from engine.speculative.loop import decode_speculative
from tests.tiny import make_tiny_target

PROMPT = [3, 17, 42, 9, 88, 5, 61, 7, 23, 99, 14, 2]


def _prefill(model, prefixes, prefix_len):
    cache = model.new_cache(32)
    out = prefill_split(model, PROMPT, cache, prefixes, prefix_len)
    return out.logits, cache


def test_warm_prefill_equals_cold_from_memory_and_from_disk(one_thread, tmp_path):
    model = make_tiny_target()
    cold_logits, cold_cache = _prefill(model, PrefixCache("tiny", tmp_path), 8)
    assert len(list(tmp_path.glob("*.safetensors"))) == 1
    memory = PrefixCache("tiny", tmp_path)
    memory.save(PROMPT[:8], cold_cache.k[:, 0, :, :8], cold_cache.v[:, 0, :, :8])
    for prefixes in (memory, PrefixCache("tiny", tmp_path)):  # in memory; a new process (disk)
        logits, cache = _prefill(model, prefixes, 8)
        assert torch.equal(logits, cold_logits)
        assert cache.length == len(PROMPT)
        assert torch.equal(cache.k[:, :, :, :12], cold_cache.k[:, :, :, :12])


def test_split_prefill_matches_one_pass_prefill_closely(one_thread, tmp_path):
    model = make_tiny_target()
    split_logits, _ = _prefill(model, PrefixCache("tiny", tmp_path), 8)
    one_pass = model(torch.tensor([PROMPT]), model.new_cache(32), logits_at=slice(-1, None)).logits
    assert torch.allclose(split_logits, one_pass, atol=1e-5)


def test_other_identity_or_tokens_miss_and_damaged_files_are_misses(tmp_path):
    k = torch.randn(2, 1, 4, 3)
    store = PrefixCache("model-a", tmp_path)
    store.save([1, 2, 3, 4], k, k)
    assert PrefixCache("model-a", tmp_path).load([1, 2, 3, 4]) is not None
    assert PrefixCache("model-b", tmp_path).load([1, 2, 3, 4]) is None
    assert PrefixCache("model-a", tmp_path).load([1, 2, 3, 5]) is None
    for path in tmp_path.glob("*.safetensors"):
        path.write_bytes(b"not a tensor file")
    assert PrefixCache("model-a", tmp_path).load([1, 2, 3, 4]) is None


def test_the_disk_keeps_at_most_disk_entries_files(tmp_path):
    store = PrefixCache("m", tmp_path, disk_entries=2, memory_entries=1)
    for n in range(4):
        store.save([n], torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2))
    assert len(list(tmp_path.glob("*.safetensors"))) == 2
    assert len(store._memory) == 1


def test_a_prefix_as_long_as_the_prompt_leaves_one_token_to_run(one_thread, tmp_path):
    model = make_tiny_target()
    logits, cache = _prefill(model, PrefixCache("tiny", tmp_path), len(PROMPT) + 5)
    assert cache.length == len(PROMPT) and logits.shape[1] == 1


def test_decoding_with_a_stored_prefix_gives_the_same_tokens(one_thread, tmp_path):
    """A plain decode (``decode_speculative`` without a drafter, as ``Generator.stream`` runs it)
    gives the reference decoder's tokens, and a stored prefix gives the same ones again."""
    model = make_tiny_target()
    params = SamplingParams(max_new_tokens=10, temperature=0.8, seed=4)

    def decode(**prefix) -> tuple[list[int], DecodeStats]:
        stop, stats = StopChecker((), params.max_new_tokens), DecodeStats()
        chunks = decode_speculative(model, None, PROMPT, params, stop, stats, **prefix)
        return [token for chunk in chunks for token in chunk], stats

    reference = list(decode_autoregressive(model, PROMPT, params, StopChecker((), 10)))
    plain, stats = decode()
    assert plain == reference and len(plain) == 10
    assert stats.target_forwards == 9 and not stats.accepted_lengths  # no rounds: nothing drafted
    cold, _ = decode(prefixes=PrefixCache("tiny", tmp_path), prefix_len=9)
    warm, _ = decode(prefixes=PrefixCache("tiny", tmp_path), prefix_len=9)  # read from disk
    assert len(list(tmp_path.glob("*.safetensors"))) == 1
    assert cold == warm and len(cold) == 10


def test_an_unwritable_cache_directory_only_costs_speed(tmp_path, one_thread):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    model = make_tiny_target()
    prefixes = PrefixCache("tiny", blocker / "prefixes")
    logits, cache = _prefill(model, prefixes, 8)  # the write fails quietly
    assert (
        cache.length == len(PROMPT) and prefixes.load(PROMPT[:8]) is not None
    )  # memory still serves
    assert PrefixCache("tiny", blocker / "prefixes").load(PROMPT[:8]) is None
