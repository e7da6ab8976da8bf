"""Drafter training (engine.training): TTT mask/positions/loss, data shards, vocab, loop, stage 2,
CLI items."""

from __future__ import annotations

import json

import pytest
import torch

from engine.decode.sampling import SamplingParams
from engine.runtime.model import Transformer
from engine.speculative.checkpoint import load_drafter
from engine.training import data as data_mod
from engine.training.data import (
    GenerationItem,
    Record,
    generate_batch,
    generate_dataset,
    generate_reference,
    read_records,
    split_records,
)
from engine.training.lowrank import candidate_recall, collect_states, train_lowrank
from engine.training.train import (
    TrainConfig,
    build_drafter,
    latest_checkpoint,
    train_drafter,
    train_step,
    warm_start,
)
from engine.training.ttt import (
    PrefixCache,
    label_mask,
    steps_start,
    target_features,
    ttt_forward,
    ttt_loss,
    ttt_mask,
    ttt_positions,
)
from engine.training.vocab import select_draft_vocab, token_counts, vocab_coverage
from tests.tiny import TINY_CONFIG, make_tiny_target

CFG = TINY_CONFIG
EOS = (1,)


pytestmark = pytest.mark.usefixtures("one_thread")
make_target = make_tiny_target


@pytest.fixture(scope="module")
def target() -> Transformer:
    return make_target()


def make_records(
    n: int = 4, seed: int = 0, prompt: int = 12, response: int = 20, prefix: int = 6
) -> list[Record]:
    gen = torch.Generator().manual_seed(seed)
    shared = torch.randint(2, 128, (prefix,), generator=gen).tolist()
    records = []
    for i in range(n):
        tail = torch.randint(2, 128, (prompt - prefix,), generator=gen).tolist()
        resp = torch.randint(
            2, 40, (response - i,), generator=gen
        ).tolist()  # skewed: vocab selection has a signal
        ids = shared + tail + resp
        records.append(Record(f"r{i}", ids, [0] * prompt + [1] * len(resp), prefix_len=prefix))
    return records


def batch_features(target, drafter, records, steps):
    from engine.training.train import collate

    seqs, tokens, loss_mask, prefix = collate(records)
    labels = label_mask(loss_mask)
    vocab_ids = drafter.draft_to_target() if drafter.d2t is not None else None
    feats = target_features(
        target,
        seqs,
        labels,
        vocab_ids=vocab_ids,
        prefix_lens=prefix,
        prefix_cache=PrefixCache(target),
    )
    return tokens, labels, feats


# ---- TTT layout ---------------------------------------------------------------------------------
def test_ttt_mask_hand_checked():
    rows = [
        # step 0: causal over step-0 keys
        "1000 0000 0000",
        "1100 0000 0000",
        "1110 0000 0000",
        "1111 0000 0000",
        # step 1: step-0 keys j <= i, plus its own key
        "1000 1000 0000",
        "1100 0100 0000",
        "1110 0010 0000",
        "1111 0001 0000",
        # step 2: step-0 keys j <= i, the same position of step 1, itself
        "1000 1000 1000",
        "1100 0100 0100",
        "1110 0010 0010",
        "1111 0001 0001",
    ]
    expected = torch.tensor([[c == "1" for c in r.replace(" ", "")] for r in rows])
    assert torch.equal(ttt_mask(4, 3), expected)
    queries, keys = ttt_positions(4, 3)
    assert [q.tolist() for q in queries] == [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5]]
    assert keys.tolist() == [0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5]


def test_ttt_mask_with_start_is_the_restriction_of_the_full_mask():
    t, k, start = 7, 4, 3
    full = ttt_mask(t, k)
    keep = list(range(t)) + [t * s + i for s in range(1, k) for i in range(start, t)]
    assert torch.equal(ttt_mask(t, k, start), full[keep][:, keep])
    queries, keys = ttt_positions(t, k, start)
    assert queries[2].tolist() == [5, 6, 7, 8]
    assert torch.equal(keys, ttt_positions(t, k)[1][keep])


@pytest.mark.parametrize("window", [None, 3])
def test_ttt_steps_equal_serving_chain(target, window):
    """Step k at position i == a depth-k draft chain below root i, as engine.speculative.loop runs
    it."""
    drafter, _ = build_drafter(target, window=window, seed=3)
    drafter.eval()
    tokens = torch.randint(2, 128, (1, 10), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        taps = target(tokens, target.new_cache(10), taps=True).taps
        hidden = drafter.fuse(taps)
        outs = ttt_forward(drafter, hidden, tokens, steps=4)
        i = 5
        cache = drafter.new_cache(32)  # catch-up: entries 0..i
        out = drafter(hidden[:, : i + 1], tokens[:, 1 : i + 2], cache)
        cache.commit(i + 1)
        assert torch.allclose(out[0, i], outs[0][0, i], atol=1e-5)
        h = out[:, i]
        key_pos = list(range(i + 1))
        for depth in range(1, 4):  # chain: prefix + ancestors + itself
            key_pos.append(i + depth)
            n = cache.length + 1
            h = drafter(
                h[:, None],
                tokens[:, i + depth + 1 : i + depth + 2],
                cache,
                positions=torch.tensor([i + depth]),
                mask=torch.ones(1, n, dtype=torch.bool),
                key_positions=torch.tensor(key_pos),
            )[:, 0]
            cache.commit(1)
            assert torch.allclose(h[0], outs[depth][0, i], atol=1e-5), depth


def test_start_skip_gives_the_same_loss(target):
    drafter, _ = build_drafter(target, seed=1)
    records = make_records(3)
    tokens, labels, feats = batch_features(target, drafter, records, 5)
    start = steps_start(labels, 5)
    assert start > 0
    with torch.no_grad():
        hidden = drafter.fuse(feats.taps)
        full = ttt_loss(drafter, ttt_forward(drafter, hidden, tokens, 5, 0), feats, labels, 0)
        fast = ttt_loss(
            drafter, ttt_forward(drafter, hidden, tokens, 5, start), feats, labels, start
        )
    assert torch.allclose(full.loss, fast.loss, atol=1e-5)
    assert full.step_count == fast.step_count


def test_loss_mask_excludes_prompt_tokens(target):
    from engine.training.train import collate
    from engine.training.ttt import TargetFeatures, step_rows

    drafter, _ = build_drafter(target, seed=1)
    records = make_records(2, prompt=12, response=10)
    _, _, loss_mask, _ = collate(records)
    tokens, labels, feats = batch_features(target, drafter, records, 3)
    # label j <=> token j+1 is a response token: the first label predicts the first response token
    assert labels[0].nonzero().flatten().tolist() == list(range(11, 21))
    assert labels[1].nonzero().flatten().tolist() == list(range(11, 20))
    assert (
        feats.offset == 11 and feats.logits.shape[1] == tokens.shape[1] - 11
    )  # no prompt rows at all
    with torch.no_grad():
        outs = ttt_forward(drafter, drafter.fuse(feats.taps), tokens, 3)
        for k, bi, qi, j in step_rows(outs, labels, 0):
            assert len(bi) == 19
            assert (j == qi + k + 1).all() and bool(loss_mask[bi, j + 1].all())
        base = ttt_loss(drafter, outs, feats, labels)
        assert base.step_count == [19, 19, 19]
        # a response label's target distribution matters
        tweak = TargetFeatures(feats.taps, feats.logits.clone(), feats.argmax, feats.offset)
        tweak.logits[0, 3] = torch.randn(tweak.logits.shape[-1]) * 5
        assert not torch.allclose(ttt_loss(drafter, outs, tweak, labels).loss, base.loss)
        # whatever the drafter outputs at prompt positions (no label), the loss is the same
        poked = [o.clone() for o in outs]
        poked[0][:, :9] += 10.0
        assert torch.allclose(ttt_loss(drafter, poked, feats, labels).loss, base.loss)


def test_training_steps_lower_the_loss(target):
    drafter, _ = build_drafter(target, seed=0)
    records = make_records(2)
    params = [p for n, p in drafter.named_parameters()]
    opt = torch.optim.AdamW(params, lr=1e-2, betas=(0.9, 0.95))
    cache = PrefixCache(target)
    losses = []
    for _ in range(6):
        res = train_step(target, drafter, records, steps=5, prefix_cache=cache)
        opt.zero_grad()
        res.loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 0.5)
        opt.step()
        losses.append(float(res.loss.detach()))
    # the soft cross-entropy is bounded below by the target's entropy: look for a steady decrease
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < losses[0] - 0.5, losses
    assert cache.hits > 0  # the shared prefix was computed once
    assert all(p.grad is None for p in target.parameters())


def test_prefix_cache_features_equal_plain(target):
    drafter, _ = build_drafter(target, seed=0)
    records = make_records(2)
    from engine.training.train import collate

    seqs, tokens, loss_mask, prefix = collate(records)
    labels = label_mask(loss_mask)
    a = target_features(target, seqs, labels)
    b = target_features(target, seqs, labels, prefix_lens=prefix, prefix_cache=PrefixCache(target))
    assert torch.allclose(a.taps, b.taps, atol=1e-4) and torch.allclose(
        a.logits, b.logits, atol=1e-4
    )


# ---- vocabulary ---------------------------------------------------------------------------------
def test_vocab_selection_keeps_most_frequent_and_maps_ids(target):
    seqs = [[5, 5, 5, 9, 9, 7, 3, 3, 3, 3], [9, 100, 3]]
    masks = [[0, 1, 1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1]]
    counts = token_counts(seqs, 128, masks)
    assert counts[3] == 5 and counts[5] == 2 and counts[9] == 3 and counts[7] == 1
    ids = select_draft_vocab(counts, 3)
    assert ids.tolist() == [3, 5, 9]  # top 3 by count, ascending ids
    assert select_draft_vocab(counts, 4, always=(1,)).tolist() == [1, 3, 5, 9]
    assert select_draft_vocab(counts, 4).tolist() == [
        3,
        5,
        7,
        9,
    ]  # ties (7 and 100: 1 each) -> smaller id
    assert select_draft_vocab(counts, 7).tolist() == [
        0,
        1,
        3,
        5,
        7,
        9,
        100,
    ]  # unseen: smallest ids fill up
    assert vocab_coverage(counts, ids) == pytest.approx(10 / 12)

    records = [Record("a", s, m) for s, m in zip(seqs, masks)]
    drafter, info = build_drafter(target, records, draft_vocab_size=4, always_include=EOS)
    assert drafter.draft_to_target().tolist() == [1, 3, 5, 9]
    assert drafter.d2t.tolist() == [1, 2, 3, 6]
    assert drafter.t2d.nonzero().flatten().tolist() == [1, 3, 5, 9]
    assert torch.equal(drafter.lm_head.weight, target.lm_head.weight[[1, 3, 5, 9]])
    assert info["coverage"] == pytest.approx(10 / 12, abs=1e-4)
    out = torch.randn(2, CFG.hidden_size)
    _, top = drafter.topk(out, 2)
    assert set(top.flatten().tolist()) <= {1, 3, 5, 9}


def test_reduced_vocab_training_runs(target):
    records = make_records(2)
    drafter, info = build_drafter(target, records, draft_vocab_size=32, always_include=EOS)
    res = train_step(target, drafter, records, steps=3)
    res.loss.backward()
    assert drafter.lm_head.weight.grad is not None and res.step_count[0] > 0


# ---- data ---------------------------------------------------------------------------------------
def items_for(
    n: int = 2, greedy: bool = True, max_new: int = 12, prefix: int = 5
) -> list[GenerationItem]:
    gen = torch.Generator().manual_seed(7)
    shared = torch.randint(2, 128, (prefix,), generator=gen).tolist()
    items = []
    for i in range(n):
        prompt = shared + torch.randint(2, 128, (3 + 2 * i,), generator=gen).tolist()
        params = SamplingParams(
            temperature=0.0 if greedy else 0.9,
            top_p=1.0 if greedy else 0.9,
            repetition_penalty=1.1,
            max_new_tokens=max_new + i,
            seed=None if greedy else 10 + i,
        )
        items.append(
            GenerationItem(
                f"item{i}", tuple(prompt), params, prefix_len=prefix, meta={"task": "t2i"}
            )
        )
    return items


@pytest.mark.parametrize("greedy", [True, False])
def test_batched_generation_matches_the_reference_decoder(target, greedy):
    items = items_for(3, greedy=greedy)
    batched = generate_batch(target, items, ())
    for item, (tokens, finish) in zip(items, batched):
        ref, ref_finish = generate_reference(target, item, ())
        assert tokens == ref and finish == ref_finish == "length"


def test_batched_generation_stops_rows_on_eos(target):
    items = items_for(3, greedy=True, max_new=12)
    ref = [generate_reference(target, it, ())[0] for it in items]
    eos = ref[1][4]  # make row 1 stop at its 5th token
    batched = generate_batch(target, items, (eos,))
    for item, (tokens, finish) in zip(items, batched):
        expect, expect_finish = generate_reference(target, item, (eos,))
        assert tokens == expect and finish == expect_finish
    assert batched[1][0][-1] == eos and batched[1][1] == "eos"


@pytest.mark.parametrize("fmt", ["jsonl", "pt"])
def test_data_generation_writes_resumable_shards(target, tmp_path, fmt):
    items = items_for(2)
    first = generate_dataset(
        target,
        items[:1],
        tmp_path,
        eos_ids=EOS,
        batch_size=2,
        shard_size=1,
        fmt=fmt,
        progress=False,
    )
    assert first.generated == 1
    second = generate_dataset(
        target, items, tmp_path, eos_ids=EOS, batch_size=2, shard_size=1, fmt=fmt, progress=False
    )
    assert (second.skipped, second.generated) == (1, 1)
    third = generate_dataset(
        target, items, tmp_path, eos_ids=EOS, batch_size=2, fmt=fmt, progress=False
    )
    assert third.generated == 0
    records = read_records(tmp_path)
    assert sorted(r.id for r in records) == ["item0", "item1"]
    assert len(list(tmp_path.glob(f"shard-*.{fmt}"))) == 2
    for record in records:
        item = next(it for it in items if it.id == record.id)
        assert record.input_ids[: len(item.prompt_ids)] == list(item.prompt_ids)
        assert record.loss_mask == [0] * len(item.prompt_ids) + [1] * (
            len(record.input_ids) - len(item.prompt_ids)
        )
        assert record.prompt_len == len(item.prompt_ids) and record.prefix_len == 5
        assert record.meta["task"] == "t2i" and record.meta["repetition_penalty"] == 1.1
    meta = json.loads((tmp_path / "dataset.json").read_text())
    assert meta["format"] == fmt and meta["eos_ids"] == [1]
    with pytest.raises(data_mod.DataError):  # another target: refused
        generate_dataset(make_target(9), items, tmp_path, eos_ids=EOS, progress=False)


def test_a_run_stopped_early_keeps_the_given_order_beyond_one_window(target, tmp_path):
    items = items_for(8, max_new=3)
    for i, item in enumerate(items):  # two prefixes, interleaved (round-robin order)
        if i % 2:
            items[i] = GenerationItem(
                item.id, (99,) + item.prompt_ids[1:], item.params, item.prefix_len, {"task": "t2v"}
            )
    generate_dataset(target, items, tmp_path, eos_ids=EOS, batch_size=2, window=4, progress=False)
    order = [r.id for r in read_records(tmp_path)]
    assert set(order[:4]) == {
        "item0",
        "item1",
        "item2",
        "item3",
    }  # sorted by prefix inside a window only
    tasks = [r.meta["task"] for r in read_records(tmp_path)]
    assert tasks[0] == tasks[1] and tasks[2] == tasks[3] != tasks[0]  # a batch shares its prefix


def test_torn_jsonl_line_is_ignored(tmp_path):
    good = Record("a", [1, 2, 3], [0, 1, 1]).to_json()
    (tmp_path / "shard-00000.jsonl").write_text(good + "\n" + good[:10])
    assert [r.id for r in read_records(tmp_path)] == ["a"]
    store = data_mod.ShardStore(tmp_path)
    assert store.done == {"a"} and not store.append(Record("a", [1], [1]))
    store.append(Record("b", [4, 5], [0, 1]))
    store.close()
    assert [r.id for r in read_records(tmp_path)] == ["a", "b"]


def test_split_is_deterministic():
    records = [Record(f"id{i}", [1, 2], [0, 1]) for i in range(50)]
    train, val = split_records(records, 0.1)
    assert len(val) == 5 and len(train) == 45
    assert split_records(records, 0.1)[1] == val
    assert len(split_records(records[:2], 0.01)[1]) == 1


# ---- loop, checkpoints, resume ------------------------------------------------------------------
def small_config(**kw) -> TrainConfig:
    base = dict(
        epochs=1,
        batch_size=2,
        lr=2e-3,
        warmup_steps=1,
        ttt_steps=3,
        checkpoint_every=2,
        val_every=0,
        val_records=2,
        val_prompts=1,
        val_max_new_tokens=6,
        tree_budget=4,
        tree_depth=3,
        tree_top_k=2,
    )
    base.update(kw)
    return TrainConfig(**base)


def test_train_save_load_and_resume(target, tmp_path):
    records = make_records(6)
    train, val = records[:5], records[5:]

    def fresh():
        return build_drafter(target, train, draft_vocab_size=64, always_include=EOS, seed=0)[0]

    drafter = fresh()
    result = train_drafter(
        target,
        drafter,
        train,
        tmp_path / "a",
        small_config(max_steps=4),
        val_records=val,
        eos_ids=EOS,
        progress=False,
    )
    assert result.steps == 4 and result.steps_run == 4
    assert result.validation["greedy"]["tau"] >= 1.0 and "step_acc" in result.validation["val"]
    log = [
        json.loads(line) for line in (tmp_path / "a" / "train_log.jsonl").read_text().splitlines()
    ]
    assert [e["step"] for e in log if "loss" in e] == [1, 2, 3, 4]
    # save -> load of the trained drafter gives the same network
    loaded = load_drafter(tmp_path / "a" / "drafter", target)
    for (name, p), q in zip(drafter.state_dict().items(), loaded.state_dict().values()):
        assert torch.equal(p, q), name
    x = torch.randn(1, 3, CFG.hidden_size)
    assert torch.equal(drafter.logits(x), loaded.logits(x))

    # interrupted after 2 steps, resumed to 4: the same weights as the uninterrupted run
    part = train_drafter(
        target,
        fresh(),
        train,
        tmp_path / "b",
        small_config(max_steps=4, checkpoint_every=2),
        eos_ids=EOS,
        progress=False,
    )
    assert part.steps == 4
    import shutil

    shutil.rmtree(tmp_path / "b" / "checkpoints" / "step-0000004")
    shutil.rmtree(tmp_path / "b" / "drafter")
    assert latest_checkpoint(tmp_path / "b").name == "step-0000002"
    resumed_drafter = fresh()
    resumed = train_drafter(
        target,
        resumed_drafter,
        train,
        tmp_path / "b",
        small_config(max_steps=4),
        eos_ids=EOS,
        progress=False,
    )
    assert resumed.steps == 4 and resumed.steps_run == 2
    for (name, p), q in zip(drafter.state_dict().items(), resumed_drafter.state_dict().values()):
        assert torch.allclose(p, q, atol=1e-6), name
    with pytest.raises(ValueError, match="other data"):
        train_drafter(
            target, fresh(), train[:4], tmp_path / "b", small_config(max_steps=6), progress=False
        )


def test_warm_start_continues_from_a_trained_drafter(target, tmp_path):
    records = make_records(6)
    first = build_drafter(target, records[:5], draft_vocab_size=64, always_include=EOS, seed=0)[0]
    train_drafter(
        target,
        first,
        records[:5],
        tmp_path / "a",
        small_config(max_steps=2),
        eos_ids=EOS,
        progress=False,
    )
    other = make_records(6, seed=3)
    kept, _ = warm_start(target, tmp_path / "a" / "drafter", other, revocab=False)
    for (name, p), q in zip(first.state_dict().items(), kept.state_dict().values()):
        assert torch.equal(p, q), name  # the trained weights and vocabulary, as saved
    drafter, info = warm_start(target, tmp_path / "a" / "drafter", other, always_include=EOS)
    assert info["draft_vocab_size"] == 64 and info["coverage"] >= info["coverage_before"]
    old_ids, new_ids = first.draft_to_target().tolist(), drafter.draft_to_target().tolist()
    for i, t in enumerate(new_ids):  # a head row travels with its token
        expected = (
            first.lm_head.weight[old_ids.index(t)] if t in old_ids else target.lm_head.weight[t]
        )
        assert torch.equal(drafter.lm_head.weight[i], expected), t
    assert torch.equal(drafter.fc.weight, first.fc.weight)
    before = {k: v.clone() for k, v in drafter.state_dict().items()}
    result = train_drafter(
        target,
        drafter,
        other,
        tmp_path / "b",
        small_config(max_steps=2),
        eos_ids=EOS,
        progress=False,
    )
    assert result.steps == 2
    assert torch.equal(drafter.d2t, before["d2t"])  # the vocabulary stays
    assert not torch.equal(drafter.fc.weight, before["fc.weight"])


def test_cli_refuses_architecture_options_with_init(tmp_path):
    from click.testing import CliRunner

    from promptx.cli.main import main

    (tmp_path / "data").mkdir()
    (tmp_path / "init").mkdir()
    result = CliRunner().invoke(
        main,
        [
            "draft",
            "train",
            "--data",
            str(tmp_path / "data"),
            "--out",
            str(tmp_path / "o"),
            "--init",
            str(tmp_path / "init"),
            "--window",
            "64",
            "--draft-vocab",
            "512",
        ],
    )
    assert (
        result.exit_code == 2
        and "--draft-vocab, --window cannot be combined with --init" in result.output
    )


# ---- stage 2 ------------------------------------------------------------------------------------
def test_lowrank_stage_increases_candidate_recall(target):
    records = make_records(4, response=24)
    drafter, _ = build_drafter(target, records, seed=0, lowrank_rank=4, lowrank_candidates=8)
    states = collect_states(target, drafter, records, steps=3)
    assert states.shape[1] == CFG.hidden_size and len(states) > 100
    before = candidate_recall(drafter, states, (1, 4))
    frozen = {n: p.clone() for n, p in drafter.named_parameters() if not n.startswith("lowrank_")}
    losses = train_lowrank(drafter, states, steps=150, lr=1e-2, batch_rows=128, progress=False)
    after = candidate_recall(drafter, states, (1, 4))
    assert losses[-1] < losses[0]
    assert after["recall@1"] > before["recall@1"] and after["recall@4"] > before["recall@4"]
    for n, p in drafter.named_parameters():
        if n in frozen:
            assert torch.equal(p, frozen[n]), n


# ---- CLI side: rendering prompts into items -----------------------------------------------------
class FakeTokenizer:
    """Character-level chat tokenizer over a 128-token vocabulary (ids 2..127; 1 = EOS)."""

    eos_token_ids = EOS

    def render_chat(self, messages, add_generation_prompt=True):
        text = "".join(f"<{m['role']}>{m['content']}|" for m in messages)
        return text + ("<assistant>" if add_generation_prompt else "")

    def encode(self, text):
        return [2 + ord(c) % 126 for c in text]

    def encode_chat(self, messages):
        return self.encode(self.render_chat(messages))


def test_cli_items_and_generation_on_two_prompts(target, tmp_path):
    from promptx.draft_prompts import build_items, load_prompt_specs
    from promptx.profiles.registry import default_registry

    prompts = tmp_path / "prompts"
    (prompts / "t2i_compbench").mkdir(parents=True)
    (prompts / "partiprompts.tsv").write_text("Prompt\tCategory\na red bicycle\tX\n")
    (prompts / "vbench_all_dimension.txt").write_text("a dog running on the beach\n")
    specs = load_prompt_specs(prompts, ("t2i", "t2v"))
    assert [s.prompt for s in specs["t2i"]] == ["a red bicycle"]
    items = build_items(
        FakeTokenizer(),
        default_registry(),
        specs,
        limit=2,
        seed=0,
        greedy_fraction=1.0,
        max_new_tokens=4,
    )
    assert sorted(it.meta["task"] for it in items) == ["t2i", "t2v"]
    for item in items:
        assert 0 < item.prefix_len < len(item.prompt_ids) and item.params.greedy
        assert item.params.max_new_tokens == 4
    again = build_items(
        FakeTokenizer(),
        default_registry(),
        specs,
        limit=2,
        seed=0,
        greedy_fraction=1.0,
        max_new_tokens=4,
    )
    assert [it.id for it in again] == [it.id for it in items]
    # the tiny target answers them (its rope covers 256 positions: keep the tail of the long chat
    # prompts)
    short = [GenerationItem(it.id, it.prompt_ids[-40:], it.params, 0, it.meta) for it in items]
    out = tmp_path / "data"
    assert generate_dataset(target, short, out, eos_ids=EOS, progress=False).generated == 2
    assert generate_dataset(target, short, out, eos_ids=EOS, progress=False).generated == 0
    assert len(read_records(out)) == 2
