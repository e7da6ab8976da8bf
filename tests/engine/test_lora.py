"""LoRA fine-tuning (engine.training.lora, engine.training.sft) on a tiny random target."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
import torch.nn.functional as F

from engine.training.data import Record
from engine.training.lora import (
    AdapterError,
    LoRALinear,
    apply_adapter_to_dir,
    attach_lora,
    load_adapter,
    merge_lora,
    read_adapter_info,
    read_adapter_note,
    save_adapter,
)
from engine.training.sft import SFTConfig, answer_loss, train_lora
from engine.weights.loading import load_transformer
from tests.tiny import TINY_CONFIG, make_tiny_target

pytestmark = pytest.mark.usefixtures("one_thread")
CFG = TINY_CONFIG


def logits_of(model, tokens: list[int]) -> torch.Tensor:
    """Logits of every position through the inference path (KV cache, inference mode)."""
    return model(torch.tensor([tokens]), model.new_cache(64)).logits[0]


def randomise_lora(model, seed: int = 3) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, LoRALinear):
                m.lora_B.copy_(torch.randn(m.lora_B.shape, generator=gen) * 0.05)


def copy_task(n: int, seed: int = 0) -> list[Record]:
    """Records whose answer repeats the prompt: learnable by a tiny model in a few steps."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        prompt = torch.randint(
            4, CFG.vocab_size, (int(torch.randint(4, 9, (1,), generator=gen)),), generator=gen
        ).tolist()
        answer = prompt + [1]
        out.append(
            Record(
                f"r{i}", [2] + prompt + [3] + answer, [0] * (len(prompt) + 2) + [1] * len(answer)
            )
        )
    return out


def save_hf_dir(model, directory) -> None:
    """Write a Transformer as a Hugging Face style directory (q/k/v and gate/up unfused)."""
    from safetensors.torch import save_file

    state, cfg = {}, model.config
    q, kv = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
    for name, tensor in model.state_dict().items():
        hf = "model." + name
        if name.endswith("qkv_proj.weight"):
            for part, t in zip("qkv", tensor.split([q, kv, kv])):
                state[hf.replace("qkv_proj", f"{part}_proj")] = t.clone()
        elif name.endswith("gate_up_proj.weight"):
            gate, up = tensor.chunk(2)
            (
                state[hf.replace("gate_up_proj", "gate_proj")],
                state[hf.replace("gate_up_proj", "up_proj")],
            ) = gate.clone(), up.clone()
        elif name == "lm_head.weight":
            state[name] = tensor.clone()
        else:
            state[hf] = tensor.clone()
    directory.mkdir(parents=True, exist_ok=True)
    save_file(state, str(directory / "model.safetensors"))
    (directory / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), default=list))


def test_a_fresh_adapter_changes_nothing_and_only_adapters_train():
    model = make_tiny_target()
    tokens = list(range(5, 20))
    before = logits_of(model, tokens)
    info = attach_lora(model, rank=4, alpha=8)
    assert torch.equal(logits_of(model, tokens), before)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert len(trainable) == 2 * 4 * CFG.num_hidden_layers  # A and B of qkv, o, gate_up, down
    assert info.scale == 2.0


def test_the_training_forward_matches_the_inference_forward():
    model = make_tiny_target()
    attach_lora(model, rank=4)
    randomise_lora(model)
    records = copy_task(3)
    with torch.no_grad():
        loss, count, _ = answer_loss(model, records)
    total, n = 0.0, 0
    for r in records:
        logits = logits_of(model, r.input_ids)
        rows = [t for t in range(len(r.input_ids) - 1) if r.loss_mask[t + 1]]
        total += float(
            F.cross_entropy(
                logits[rows], torch.tensor(r.input_ids)[[t + 1 for t in rows]], reduction="sum"
            )
        )
        n += len(rows)
    assert count == n
    assert float(loss) == pytest.approx(total / n, rel=1e-5)


def test_merged_weights_give_the_adapters_logits(tmp_path):
    model = make_tiny_target()
    save_hf_dir(model, tmp_path / "base")
    info = attach_lora(model, rank=4, alpha=8)
    randomise_lora(model)
    tokens = list(range(7, 30))
    adapted = logits_of(model, tokens)
    path = save_adapter(
        model, tmp_path / "adapter.safetensors", dataclasses.replace(info, extra='{"x": 1}')
    )
    assert (
        read_adapter_info(path).rank == 4
        and len(load_adapter(path)[1]) == 2 * 4 * CFG.num_hidden_layers
    )

    apply_adapter_to_dir(
        tmp_path / "base", path
    )  # the prepare-time path (HF names, fused rows split)
    from_dir = load_transformer(tmp_path / "base")
    assert torch.allclose(logits_of(from_dir, tokens), adapted, atol=1e-4)
    assert read_adapter_note(tmp_path / "base")["extra"] == {"x": 1}
    assert not torch.allclose(
        logits_of(make_tiny_target(), tokens), adapted, atol=1e-3
    )  # it did change
    merged = merge_lora(model)  # the in-memory path
    assert not any(isinstance(m, LoRALinear) for m in merged.modules())
    assert torch.allclose(logits_of(merged, tokens), adapted, atol=1e-4)


def test_an_adapter_for_another_shape_is_refused(tmp_path):
    model = make_tiny_target()
    save_hf_dir(model, tmp_path / "base")
    other = make_tiny_target(cfg=dataclasses.replace(CFG, hidden_size=32, head_dim=8))
    info = attach_lora(other, rank=2)
    path = save_adapter(other, tmp_path / "other.safetensors", info)
    with pytest.raises(AdapterError, match="does not fit"):
        apply_adapter_to_dir(tmp_path / "base", path)
    (tmp_path / "junk.safetensors").write_bytes(b"not a file")
    with pytest.raises(AdapterError, match="not a readable adapter"):
        read_adapter_info(tmp_path / "junk.safetensors")


def test_training_lowers_the_answer_loss_and_resumes_exactly(tmp_path):
    records, val = copy_task(16), copy_task(4, seed=9)
    config = SFTConfig(
        max_steps=6, batch_size=4, lr=1e-2, warmup_steps=2, checkpoint_every=3, val_every=0
    )

    torch.manual_seed(0)
    model = make_tiny_target()
    straight = train_lora(
        model,
        attach_lora(model, rank=4, alpha=8),
        records,
        tmp_path / "a",
        config,
        val_records=val,
        progress=False,
    )
    log = [
        json.loads(line) for line in (tmp_path / "a" / "tune_log.jsonl").read_text().splitlines()
    ]
    losses = [e["loss"] for e in log if "loss" in e]
    assert len(losses) == 6 and losses[-1] < losses[0]
    assert straight.validation["val_loss"] > 0 and straight.tokens_per_s > 0

    class Interrupted(Exception):
        pass

    def interrupt(model, step):
        raise Interrupted

    torch.manual_seed(0)
    stopped = make_tiny_target()
    with pytest.raises(Interrupted):  # killed after the step-3 checkpoint...
        train_lora(
            stopped,
            attach_lora(stopped, rank=4, alpha=8),
            records,
            tmp_path / "b",
            dataclasses.replace(config, val_every=3),
            check=interrupt,
            progress=False,
        )
    calls = []
    torch.manual_seed(0)
    resumed_model = make_tiny_target()
    info = attach_lora(resumed_model, rank=4, alpha=8)
    resumed = train_lora(
        resumed_model,
        info,
        records,
        tmp_path / "b",
        dataclasses.replace(config),
        progress=False,
        log=calls.append,
    )  # ...then rerun: it goes on to step 6
    assert resumed.steps_run == 3 and any("resumed" in c for c in calls)
    a = load_adapter(straight.adapter_path)[1]
    b = load_adapter(resumed.adapter_path)[1]
    assert a.keys() == b.keys()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_bf16_training_passes_learn_and_keep_float32_adapters(tmp_path):
    records = copy_task(16)
    config = SFTConfig(
        max_steps=6,
        batch_size=4,
        lr=1e-2,
        warmup_steps=2,
        checkpoint_every=100,
        val_every=0,
        autocast="bfloat16",
    )
    torch.manual_seed(0)
    model = make_tiny_target()
    trained = train_lora(
        model, attach_lora(model, rank=4, alpha=8), records, tmp_path, config, progress=False
    )
    log = [json.loads(line) for line in (tmp_path / "tune_log.jsonl").read_text().splitlines()]
    losses = [e["loss"] for e in log if "loss" in e]
    assert len(losses) == 6 and losses[-1] < losses[0]
    tensors = load_adapter(trained.adapter_path)[1]
    assert all(t.dtype == torch.float32 for t in tensors.values())
    assert any(float(t.abs().max()) > 0 for name, t in tensors.items() if "lora_B" in name)
    other = make_tiny_target()
    with pytest.raises(ValueError, match="precision"):
        train_lora(
            other,
            attach_lora(other, rank=2),
            records,
            tmp_path / "bad",
            dataclasses.replace(config, autocast="int8"),
            progress=False,
        )


def test_a_checkpoint_of_other_data_is_not_resumed(tmp_path):
    config = SFTConfig(max_steps=2, batch_size=4, checkpoint_every=1)
    model = make_tiny_target()
    train_lora(model, attach_lora(model, rank=2), copy_task(8), tmp_path, config, progress=False)
    model = make_tiny_target()
    with pytest.raises(ValueError, match="other data"):
        train_lora(
            model,
            attach_lora(model, rank=2),
            copy_task(8, seed=5),
            tmp_path,
            config,
            progress=False,
        )
