"""Drafter export to the serving layouts (engine.speculative.export) and ``promptx draft export``.

No serving engine runs here (none installs on a CPU-only machine); what is checked is what
their loaders read: the config parses with transformers, tensor names, shapes and dtypes
follow vLLM's and SGLang's EAGLE-3 rules, and reading the export back gives the same logits.
The real shipped drafter on the real embedded target; a tiny random target for the
variants the shipped drafter does not have (full vocabulary, low-rank head) and refusals.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from engine.speculative.drafter import Drafter, DrafterConfig
from engine.speculative.export import (
    ExportError,
    check_declared_taps,
    export_drafter,
    export_tensors,
    import_eagle3,
)
from tests.tiny import make_tiny_drafter, make_tiny_target

SHIPPED = Path(__file__).resolve().parents[2] / "promptx" / "drafters" / "smollm2-135m-instruct"
LAYER = (
    "input_layernorm",
    "hidden_norm",
    "post_attention_layernorm",
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
)
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def exports(tmp_path_factory, fp32_model, trained_drafter):
    """The shipped drafter written in both layouts: {format: directory}."""
    target, _ = fp32_model
    root = tmp_path_factory.mktemp("export")
    return {
        fmt: export_drafter(
            trained_drafter,
            root / fmt,
            fmt,
            target=target,
            verifier_name="/srv/target",
            verifier_architectures=["LlamaForCausalLM"],
            speculative_tokens=5,
        ).directory
        for fmt in ("eagle3", "speculators")
    }


def tensors_of(directory: Path) -> dict[str, torch.Tensor]:
    with safe_open(str(directory / "model.safetensors"), "pt") as handle:
        return {name: handle.get_tensor(name) for name in handle.keys()}


def config_of(directory: Path) -> dict:
    return json.loads((directory / "config.json").read_text())


# ---- eagle3: config and tensors -----------------------------------------------------------------
def test_eagle3_config_parses_with_transformers(exports, fp32_model, trained_drafter):
    from transformers import AutoConfig

    target, _ = fp32_model
    c = AutoConfig.from_pretrained(exports["eagle3"])
    assert type(c).__name__ == "LlamaConfig" and c.architectures == ["LlamaForCausalLMEagle3"]
    assert (c.num_hidden_layers, c.vocab_size, c.draft_vocab_size) == (
        1,
        target.config.vocab_size,
        4096,
    )
    assert (c.hidden_size, c.target_hidden_size, c.head_dim) == (576, 576, 64)
    assert (c.num_attention_heads, c.num_key_value_heads, c.intermediate_size) == (9, 3, 1536)
    assert c.tie_word_embeddings is False and c.hidden_act == "silu"
    assert c.norm_before_residual is False  # residual = h before hidden_norm, as in promptx's layer
    assert c.eagle_config == {"use_aux_hidden_state": True}
    assert (
        c.layer_types == ["sliding_attention"]
        and c.sliding_window == trained_drafter.config.window == 128
    )
    assert c.fc_norm is True and c.norm_before_fc is False and c.norm_output is False
    raw = config_of(exports["eagle3"])
    for key in (
        "norm_before_residual",
        "draft_vocab_size",
        "target_hidden_size",
        "torch_dtype",
        "rms_norm_eps",
        "rope_theta",
        "max_position_embeddings",
    ):
        assert key in raw, key  # written explicitly, not left to defaults
    assert raw["torch_dtype"] == "float32" and raw["rope_theta"] == target.config.rope_theta
    assert "aux_hidden_state_layer_ids" not in json.dumps(raw)  # default taps: no explicit ids


def test_eagle3_tensors_follow_the_loaders(exports, trained_drafter):
    t, h, vocab = tensors_of(exports["eagle3"]), 576, 49152
    expected = (
        {"fc.weight", "norm.weight", "lm_head.weight", "d2t", "t2d"}
        | {f"midlayer.{name}.weight" for name in LAYER}
        | {f"fc_norm.{i}.weight" for i in range(3)}
    )
    assert set(t) == expected and not any(name.startswith("layers.") for name in t)
    assert t["fc.weight"].shape == (h, 3 * h)
    for proj, rows in (("q", 9 * 64), ("k", 3 * 64), ("v", 3 * 64)):
        assert t[f"midlayer.self_attn.{proj}_proj.weight"].shape == (rows, 2 * h)
    assert t["midlayer.self_attn.o_proj.weight"].shape == (h, 9 * 64)
    assert t["lm_head.weight"].shape == (config_of(exports["eagle3"])["draft_vocab_size"], h)
    assert all(t[f"fc_norm.{i}.weight"].shape == (h,) for i in range(3))
    assert all(v.dtype == torch.float32 for k, v in t.items() if k not in ("d2t", "t2d"))
    d2t, t2d = t["d2t"], t["t2d"]
    assert d2t.dtype == torch.int64 and t2d.dtype == torch.bool and t2d.shape == (vocab,)
    target_ids = torch.arange(len(d2t)) + d2t  # target id = i + d2t[i]
    assert torch.equal(target_ids, trained_drafter.draft_to_target().cpu())
    assert int(t2d.sum()) == 4096 and bool(t2d[target_ids].all())
    assert torch.equal(t["lm_head.weight"], trained_drafter.lm_head.weight)
    assert torch.equal(t["fc_norm.1.weight"], trained_drafter.chunk_norms[1].weight)


# ---- speculators --------------------------------------------------------------------------------
def test_speculators_layout(exports):
    raw = config_of(exports["speculators"])
    assert (
        raw["architectures"] == ["Eagle3Speculator"] and raw["speculators_model_type"] == "eagle3"
    )
    assert raw["norm_before_residual"] is False and raw["draft_vocab_size"] == 4096
    assert raw["target_hidden_size"] == 576 and raw["fc_norm"] is True
    spec = raw["speculators_config"]
    assert spec["proposal_methods"][0]["speculative_tokens"] == 5
    assert spec["verifier"] == {
        "name_or_path": "/srv/target",
        "architectures": ["LlamaForCausalLM"],
    }
    layer = raw["transformer_layer_config"]
    assert (
        layer["model_type"] == "llama"
        and layer["num_hidden_layers"] == 1
        and layer["vocab_size"] == 49152
    )
    assert layer["layer_types"] == ["sliding_attention"] and layer["sliding_window"] == 128
    assert "aux_hidden_state_layer_ids" not in json.dumps(raw)
    from transformers import LlamaConfig

    assert LlamaConfig(**layer).head_dim == 64

    spec_t, flat_t = tensors_of(exports["speculators"]), tensors_of(exports["eagle3"])
    assert not any(name.startswith("midlayer.") for name in spec_t)
    renamed = {name.replace("layers.0.", "midlayer.", 1): value for name, value in spec_t.items()}
    assert renamed.keys() == flat_t.keys()
    assert all(torch.equal(renamed[name], flat_t[name]) for name in flat_t)


# ---- reading back -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_inputs(fp32_model):
    """Taps of the target over a real text longer than the drafter's window, and the next tokens."""
    target, tokenizer = fp32_model
    text = (
        "A lighthouse keeper climbs the spiral stairs at dusk, lamp in hand, "
        "while storm clouds roll in over the harbour and fishing boats hurry home. "
    ) * 8
    ids = tokenizer.encode(text)[:161]
    assert len(ids) == 161
    with torch.inference_mode():
        taps = target(torch.tensor([ids]), target.new_cache(len(ids)), taps=True).taps
    return taps[:, :-1], torch.tensor([ids[1:]])


@torch.inference_mode()
def draft_logits(drafter, taps, tokens):
    out = drafter(drafter.fuse(taps), tokens, drafter.new_cache(taps.shape[1] + 1))
    return drafter.logits(out)


def engine_reference_logits(
    directory: Path, embed: torch.Tensor, taps: torch.Tensor, tokens: torch.Tensor
):
    """Draft-vocab logits computed from the export's files alone, written from vLLM's llama_eagle3
    forward (not from promptx's Drafter): fc_norm per chunk, fc, residual = h before hidden_norm,
    neox rope, sliding window W = keys at most W-1 positions back, final norm, lm_head."""
    import torch.nn.functional as F

    c, w = config_of(directory), tensors_of(directory)
    eps, hd, nq, nkv = (
        c["rms_norm_eps"],
        c["head_dim"],
        c["num_attention_heads"],
        c["num_key_value_heads"],
    )
    norm = lambda x, name: F.rms_norm(x, (x.shape[-1],), w[name], eps)  # noqa: E731
    lin = lambda x, name: x @ w[name].t()  # noqa: E731
    chunks = taps.chunk(3, dim=-1)
    if c["fc_norm"]:
        chunks = [norm(x, f"fc_norm.{i}.weight") for i, x in enumerate(chunks)]
    h = lin(torch.cat(chunks, dim=-1), "fc.weight")  # [1, T, H]
    residual = h
    x = torch.cat(
        [
            norm(F.embedding(tokens, embed), "midlayer.input_layernorm.weight"),
            norm(h, "midlayer.hidden_norm.weight"),
        ],
        dim=-1,
    )
    t = x.shape[1]
    q = lin(x, "midlayer.self_attn.q_proj.weight").view(1, t, nq, hd).transpose(1, 2)
    k = lin(x, "midlayer.self_attn.k_proj.weight").view(1, t, nkv, hd).transpose(1, 2)
    v = lin(x, "midlayer.self_attn.v_proj.weight").view(1, t, nkv, hd).transpose(1, 2)
    inv = 1.0 / c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = torch.outer(torch.arange(t, dtype=torch.float64), inv)
    cos, sin = torch.cat([ang, ang], -1).cos().float(), torch.cat([ang, ang], -1).sin().float()
    rot = lambda y: y * cos + torch.cat([-y[..., hd // 2 :], y[..., : hd // 2]], -1) * sin  # noqa: E731
    q, k = rot(q), rot(k)
    k, v = k.repeat_interleave(nq // nkv, dim=1), v.repeat_interleave(nq // nkv, dim=1)
    pos = torch.arange(t)
    mask = pos[None, :] <= pos[:, None]
    if c.get("layer_types") == ["sliding_attention"]:
        mask &= pos[None, :] > pos[:, None] - c["sliding_window"]
    attn = (
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        .transpose(1, 2)
        .reshape(1, t, nq * hd)
    )
    residual = residual + lin(attn, "midlayer.self_attn.o_proj.weight")
    y = norm(residual, "midlayer.post_attention_layernorm.weight")
    mlp = lin(
        F.silu(lin(y, "midlayer.mlp.gate_proj.weight")) * lin(y, "midlayer.mlp.up_proj.weight"),
        "midlayer.mlp.down_proj.weight",
    )
    return lin(norm(mlp + residual, "norm.weight"), "lm_head.weight")


def test_export_files_compute_the_drafters_logits(
    exports, fp32_model, trained_drafter, real_inputs
):
    target, _ = fp32_model
    with torch.inference_mode():
        got = engine_reference_logits(exports["eagle3"], target.embed_tokens.weight, *real_inputs)
    assert torch.allclose(got, draft_logits(trained_drafter, *real_inputs), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("fmt", ["eagle3", "speculators"])
def test_reimport_gives_the_same_logits(exports, fp32_model, trained_drafter, real_inputs, fmt):
    target, _ = fp32_model
    back = import_eagle3(exports[fmt], target).eval()
    assert back.config == replace(
        trained_drafter.config, lowrank_candidates=back.config.lowrank_candidates
    )
    assert torch.equal(back.draft_to_target(), trained_drafter.draft_to_target())
    want = draft_logits(trained_drafter, *real_inputs)
    got = draft_logits(back, *real_inputs)
    assert want.shape == (1, 160, 4096)
    assert torch.allclose(got, want, atol=1e-5, rtol=1e-5)
    # the test sees the window and the chunk norms: without either, late positions differ
    for change in ({"window": None}, {"chunk_norms": False}):
        other = Drafter(replace(back.config, **change), own_head=True)
        other.load_state_dict(back.state_dict(), strict=False)
        other.attach(target).eval()
        assert not torch.allclose(
            draft_logits(other, *real_inputs)[:, 140:], want[:, 140:], atol=1e-3
        ), change


def test_full_vocabulary_lowrank_drafter(tmp_path):
    """No own head: the target's head is written, d2t is the identity; the low-rank factors are
    dropped."""
    target = make_tiny_target()
    drafter = make_tiny_drafter(target, lowrank_rank=4, window=3)
    result = export_drafter(drafter, tmp_path / "e", target=target)
    t = tensors_of(result.directory)
    assert torch.equal(t["lm_head.weight"], target.lm_head.weight)
    assert torch.equal(t["d2t"], torch.zeros(128, dtype=torch.long)) and bool(t["t2d"].all())
    assert not any("lowrank" in name or name.startswith("fc_norm") for name in t)
    assert config_of(result.directory)["fc_norm"] is False
    assert any("low-rank" in note for note in result.notes) and any(
        "full vocabulary" in n for n in result.notes
    )
    back = import_eagle3(result.directory, target).eval()
    g = torch.Generator().manual_seed(0)
    taps, tokens = (
        torch.randn(1, 9, 3 * 64, generator=g),
        torch.randint(0, 128, (1, 9), generator=g),
    )
    assert torch.allclose(
        draft_logits(back, taps, tokens), draft_logits(drafter, taps, tokens), atol=1e-6
    )


# ---- refusals -----------------------------------------------------------------------------------
def test_refusals(tmp_path):
    check_declared_taps({}, 30)
    check_declared_taps({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 15, 27]}}, 30)
    with pytest.raises(
        ExportError, match=r"tap layers \[1, 14, 26\].*inputs of layers \[2, 15, 27\]"
    ):
        check_declared_taps({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 14, 26]}}, 30)
    target = make_tiny_target()
    wide = Drafter(DrafterConfig.for_target(target.config, target_hidden_size=96))
    with pytest.raises(ExportError, match="target's token embedding"):
        export_tensors(wide)
    unattached = Drafter(DrafterConfig.for_target(target.config))
    with pytest.raises(ExportError, match="shares the target's head"):
        export_tensors(unattached)
    directory = export_drafter(
        make_tiny_drafter(target, draft_vocab_size=32), tmp_path / "e", target=target
    ).directory
    raw = config_of(directory)
    (directory / "config.json").write_text(json.dumps({**raw, "norm_before_residual": True}))
    with pytest.raises(ExportError, match="norm_before_residual"):
        import_eagle3(directory, target)


# ---- the command --------------------------------------------------------------------------------
def test_cli_writes_the_export_and_prints_the_launch_commands(tmp_path, fp32_model):
    from click.testing import CliRunner

    from promptx.cli.main import main

    out, target_dir = tmp_path / "draft", tmp_path / "target"
    result = CliRunner().invoke(
        main,
        [
            "draft",
            "export",
            "smollm2-135m-instruct",
            "--out",
            str(out),
            "--target-dir",
            str(target_dir),
            "--num-speculative-tokens",
            "4",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
    text = result.stdout
    spec = json.dumps(
        {"method": "eagle3", "model": str(out.resolve()), "num_speculative_tokens": 4},
        separators=(",", ":"),
    )
    assert f"vllm serve {target_dir.resolve()} --speculative-config '{spec}'" in text
    assert (
        f"python -m sglang.launch_server --model-path {target_dir.resolve()} "
        f"--speculative-algorithm EAGLE3 --speculative-draft-model-path {out.resolve()} "
        "--speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16"
    ) in text
    assert (
        f"convert_hf_to_gguf.py {out.resolve()} --target-model-dir {target_dir.resolve()}" in text
    )
    assert "llama-server -m target.gguf -md draft.gguf --spec-type draft-eagle3" in text
    back = import_eagle3(out, fp32_model[0])
    assert back.config.target_fingerprint == "a484cf0896ca3de1"


def test_cli_refuses_non_default_taps_in_one_line(tmp_path):
    from click.testing import CliRunner

    from promptx.cli.main import main

    source = tmp_path / "drafter"
    shutil.copytree(SHIPPED, source)
    raw = config_of(source)
    (source / "config.json").write_text(
        json.dumps({**raw, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 14, 26]}})
    )
    result = CliRunner().invoke(
        main, ["draft", "export", str(source), "--out", str(tmp_path / "out"), "--quiet"]
    )
    assert result.exit_code == 1
    assert (
        result.stderr.startswith("promptx: error: cannot export")
        and "tap layers [1, 14, 26]" in result.stderr
    )
    assert result.stderr.count("\n") == 1 and not (tmp_path / "out").exists()


# ---- the target model ---------------------------------------------------------------------------
def test_models_export_writes_a_directory_transformers_loads(tmp_path, model_dir):
    from click.testing import CliRunner
    from transformers import AutoConfig, AutoTokenizer

    from promptx.cli.model_export import models_export

    out = tmp_path / "target"
    result = CliRunner().invoke(models_export, ["--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= {
        p.name for p in out.iterdir()
    }
    assert AutoConfig.from_pretrained(out).num_hidden_layers == 30
    tokenizer_config = json.loads((out / "tokenizer_config.json").read_text())
    assert (
        tokenizer_config["tokenizer_class"] == "PreTrainedTokenizerFast"
        and "chat_template" in tokenizer_config
    )
    tok = AutoTokenizer.from_pretrained(out)
    assert "<|im_start|>assistant" in tok.apply_chat_template(
        [{"role": "user", "content": "a cat"}], tokenize=False, add_generation_prompt=True
    )
    assert (out / "model.safetensors").stat().st_size == (
        model_dir / "model.safetensors"
    ).stat().st_size
