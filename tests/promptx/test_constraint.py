"""The decoding constraint on the real tokenizer and model: what it masks, and that a
constrained speculative decode equals the constrained plain decode (greedy, fp32) and
keeps the constrained distribution (sampling, chi-square)."""

from __future__ import annotations

import pytest
import torch

from engine.decode.autoregressive import decode_autoregressive
from engine.decode.sampling import SamplingParams, TokenMask, next_token_distribution, sample_token
from engine.decode.stats import DecodeStats
from engine.decode.stopping import StopChecker
from engine.speculative.loop import FixedTree, TreeConfig, decode_speculative, verify_pass
from engine.speculative.tree import DraftTree
from engine.speculative.verify import verify_sampling
from promptx.quality.constraint import DecodingConstraint, VocabularyIndex
from tests.engine.test_speculative import chi_square_p_value

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vocab(fp32_model):
    _, tok = fp32_model
    return tok, VocabularyIndex(tok.token_texts())


def banned_texts(vocab, prompt, context=None):
    tok, index = vocab
    ids = index.banned_ids(DecodingConstraint.for_prompt(prompt, context))
    return {tok.token_texts()[i] for i in ids}, ids


def test_the_mask_holds_back_unlicensed_subjects_pronouns_and_quotes(vocab):
    banned, _ = banned_texts(vocab, "a cat on a skateboard")
    assert {" dog", " man", " woman", " you", " your", '"'} <= banned
    assert not {" cat", " kitten", " cats", " skateboard", " street", " camera", " light"} & banned


def test_person_pronouns_are_masked_only_where_no_one_may_be_meant(vocab):
    banned, _ = banned_texts(vocab, "In a still frame, a stop sign")
    assert {" she", " he", " her", " his", " someone", " figure", " people"} <= banned
    banned, _ = banned_texts(vocab, "a cat on a skateboard")
    assert not {" she", " her", " his"} & banned
    banned, _ = banned_texts(vocab, "a busy street at night")  # passers-by yes, "she" no
    assert {" she", " someone", " woman"} <= banned and not {" people", " pedestrians"} & banned


def test_the_mask_allows_what_the_prompt_licenses(vocab):
    banned, _ = banned_texts(vocab, "a person walking on a busy street")
    assert not {" man", " woman", " people", " pedestrians", " cars"} & banned
    assert " dog" in banned
    banned, _ = banned_texts(vocab, 'a sign that says "OPEN" for you')
    assert not {'"', " you"} & banned
    banned, _ = banned_texts(vocab, "make it winter", context="a golden retriever in a garden")
    assert not {" dog", " retriever"} & banned


def test_a_static_camera_masks_the_words_that_move_it(vocab):
    banned, _ = banned_texts(vocab, "a purple and yellow abstract painting, camera static")
    assert {" zoom", " pan", " tilt"} <= banned and not {" camera", " still", " slowly"} & banned
    banned, _ = banned_texts(vocab, "a purple and yellow abstract painting, camera pans left")
    assert not {" zoom", " pan", " tilt"} & banned


def test_a_drawn_picture_masks_the_words_that_make_it_a_photo(vocab):
    banned, _ = banned_texts(vocab, "a sketch of a train")
    assert {" photo", " photograph"} & banned and not {" sketch", " train", " pencil"} & banned
    banned, _ = banned_texts(vocab, "a cat sitting on a box with a drawing of an elephant on it")
    assert not {" photo", " photograph"} & banned


def test_a_stylized_picture_masks_the_words_that_make_it_realistic(vocab):
    banned, _ = banned_texts(vocab, "a cartoon of a train going to the moon")
    assert " realistic" in banned and not {" cartoon", " train", " moon"} & banned
    banned, _ = banned_texts(vocab, "a realistic cartoon of a train")
    assert " realistic" not in banned


def test_a_time_of_day_masks_the_times_it_rules_out(vocab):
    banned, _ = banned_texts(vocab, "an empty street at night")
    assert {" morning", " sunrise", " noon"} <= banned and not {
        " night",
        " street",
        " evening",
    } & banned
    banned, _ = banned_texts(vocab, "a harbour at dusk that turns to night, timelapse")
    assert not {" morning", " night"} & banned
    banned, _ = banned_texts(vocab, "make it night", context="a lake at sunrise under a pink sky")
    assert " noon" in banned and " sunrise" not in banned  # the image's own time may be named


PROMPTS = ["a cat on a skateboard", "a red car by the sea", "a lighthouse in a storm"]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_constrained_greedy_speculative_equals_constrained_plain(
    fp32_model, vocab, trained_drafter, prompt
):
    model, tok = fp32_model
    _, ids_banned = banned_texts(vocab, prompt)
    mask = TokenMask(ids_banned)
    # the drafter is steered towards banned tokens: its proposals must be rejected every time
    params = SamplingParams(max_new_tokens=64, repetition_penalty=1.1, banned=mask)
    ids = tok.encode_chat(
        [{"role": "user", "content": f"Describe a video of {prompt} with people."}]
    )
    stop = StopChecker(tok.eos_token_ids, params.max_new_tokens)
    plain = list(decode_autoregressive(model, ids, params, stop))
    for config in (TreeConfig.chain(4), TreeConfig(budget=16, max_depth=5, top_k=4)):
        stop = StopChecker(tok.eos_token_ids, params.max_new_tokens)
        spec = [
            t
            for c in decode_speculative(
                model, trained_drafter, ids, params, stop, DecodeStats(), FixedTree(config)
            )
            for t in c
        ]
        assert spec == plain
    assert not set(plain) & set(mask.ids)
    free = list(
        decode_autoregressive(
            model,
            ids,
            SamplingParams(max_new_tokens=64, repetition_penalty=1.1),
            StopChecker(tok.eos_token_ids, 64),
        )
    )
    if set(free) & set(mask.ids):
        assert free != plain  # the mask changed what an unconstrained decode wrote


def test_sampling_with_a_mask_follows_the_masked_distribution(fp32_model):
    model, tok = fp32_model
    ids = tok.encode_chat([{"role": "user", "content": "Describe a dog in a park."}])
    logits = model(torch.tensor([ids]), model.new_cache(len(ids) + 4)).logits[0, -1]
    free = SamplingParams(temperature=1.0, top_p=0.95)
    top = next_token_distribution(logits, [], free).topk(4).indices.tolist()
    mask = TokenMask(top[:2])  # ban the two likeliest tokens
    params = SamplingParams(temperature=1.0, top_p=0.95, banned=mask)
    p = next_token_distribution(logits, [], params)
    assert float(p[top[0]]) == 0.0 and float(p[top[1]]) == 0.0 and abs(float(p.sum()) - 1) < 1e-5
    generator = torch.Generator().manual_seed(3)
    n = 3000
    counts: dict[int, int] = {}
    for _ in range(n):
        t = sample_token(logits, [], params, generator)
        counts[t] = counts.get(t, 0) + 1
    assert chi_square_p_value(counts, {i: float(v) for i, v in enumerate(p) if v > 0}, n) > 1e-3


def test_tree_verification_with_a_mask_keeps_the_masked_distribution(fp32_model):
    """Children that include banned tokens: sampled verification never accepts them and its
    first token follows the masked target distribution."""
    model, tok = fp32_model
    ids = tok.encode_chat([{"role": "user", "content": "Describe a cat in a garden."}])
    cache = model.new_cache(len(ids) + 16)
    model(torch.tensor([ids[:-1]]), cache)
    cache.commit(len(ids) - 1)
    root = ids[-1]
    free = SamplingParams(temperature=0.9, top_p=0.95)
    root_p = next_token_distribution(model(torch.tensor([[root]]), cache).logits[0, -1], [], free)
    first = root_p.topk(4).indices.tolist()
    mask = TokenMask(first[:2])
    params = SamplingParams(temperature=0.9, top_p=0.95, banned=mask)
    tree = DraftTree(torch.tensor(first), torch.full((4,), -1), -torch.arange(4.0))
    logits, _, _ = verify_pass(model, cache, root, tree)
    generator = torch.Generator().manual_seed(0)
    n = 3000
    counts: dict[int, int] = {}
    for _ in range(n):
        token = verify_sampling(tree, logits, [], params, generator).tokens[0]
        counts[token] = counts.get(token, 0) + 1
    assert not set(counts) & set(mask.ids)
    p = next_token_distribution(logits[0], [], params)
    assert chi_square_p_value(counts, {i: float(v) for i, v in enumerate(p) if v > 0}, n) > 1e-3
