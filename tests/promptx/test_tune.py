"""``promptx tune`` on the real embedded model: records, two training steps, resume, the merged
model, the prepare-time adapter, and the errors of bad data."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from promptx.cli.main import main
from promptx.profiles.registry import default_registry
from promptx.profiles.render import render_messages
from promptx.tune import balanced, pair_records
from promptx.tuning_pairs import PairFileError, PairRow, TuningPair, read_pairs

pytestmark = pytest.mark.slow

PAIRS = [
    {
        "id": "t-1",
        "target": "video",
        "input": "a kite over a beach",
        "output": "A red diamond kite climbs over a wide sandy beach, its long tail rippling in "
        "the wind. The camera tilts up slowly to follow it against a pale blue sky.",
    },
    {
        "id": "t-2",
        "target": "sdxl",
        "input": "a lighthouse at dusk",
        "output": "lighthouse, rocky point, dusk, violet sky, warm lamp glow, calm sea, wide shot, "
        "photograph",
    },
    {
        "id": "t-3",
        "target": "image",
        "input": "a bowl of lemons",
        "output": "A white ceramic bowl full of bright yellow lemons on a pale wooden table, "
        "soft window light from the left, shallow depth of field, still life photograph.",
    },
    {
        "id": "t-4",
        "target": "image-to-video",
        "input": "the flag waves",
        "image": "A flag on a pole by the sea.",
        "output": "The flag ripples and snaps in a steady sea breeze while the pole stays still; "
        "small waves roll in behind it. The camera holds a steady medium shot.",
    },
]
HELDOUT = [
    {
        "id": "h-1",
        "target": "video",
        "input": "a paper boat on a stream",
        "output": "A small white paper boat drifts down a clear shallow stream, turning slowly as "
        "the water carries it past smooth stones. "
        "The camera follows it at water level in soft morning light.",
    },
    {
        "id": "h-2",
        "target": "image",
        "input": "a green teapot",
        "output": "A glossy green ceramic teapot on a linen cloth, steam rising from its spout, "
        "warm side light, simple studio background, product photograph.",
    },
]


def write_data(root, train=PAIRS, heldout=HELDOUT):
    for split, rows in (("train", train), ("heldout", heldout)):
        (root / split).mkdir(parents=True, exist_ok=True)
        (root / split / "pairs.jsonl").write_text(
            "".join(json.dumps({"source": "team", "author": "test", **r}) + "\n" for r in rows)
        )
    return root


def test_the_short_prompt_has_the_profile_description_and_no_examples():
    profile = default_registry().get("video")
    short = render_messages(profile, "a cat", prompt_style="short")
    assert [m["role"] for m in short] == ["system", "user"]
    assert profile.description in short[0]["content"] and "60 to 120 words" in short[0]["content"]
    full = render_messages(profile, "a cat")
    assert len(full) == 2 + 2 * len(profile.examples)


def test_records_put_the_loss_on_the_answer_and_its_end_token(fp32_model, tmp_path):
    _, tokenizer = fp32_model
    rows, _ = read_pairs([write_data(tmp_path)])
    records = pair_records(rows, default_registry(), tokenizer)
    for row, record in zip(rows, records):
        answer = [t for t, m in zip(record.input_ids, record.loss_mask) if m]
        assert tokenizer.decode(answer[:-1]) == row.pair.output
        assert answer[-1] in tokenizer.eos_token_ids
        assert record.loss_mask == sorted(record.loss_mask)  # prompt first, then the answer
    assert [r.pair.target for r in balanced(rows, 3)] == ["image", "image-to-video", "sdxl"]


def test_tune_trains_resumes_and_writes_a_model_enhance_can_use(tmp_path, model_dir, monkeypatch):
    data, out = write_data(tmp_path / "data"), tmp_path / "run"
    args = [
        "tune",
        str(data),
        "--out",
        str(out),
        "--model",
        str(model_dir),
        "--batch-size",
        "2",
        "--val-pairs",
        "2",
        "--check-prompts",
        "1",
        "--checkpoint-every",
        "1",
        "--threads",
        "1",
        "--quiet",
    ]
    first = CliRunner().invoke(main, args + ["--max-steps", "2"])
    assert first.exit_code == 0, first.output
    report = json.loads((out / "report.json").read_text())
    assert report["steps"] == 2 and report["train_records"] == 4 and report["tokens_per_s"] > 0
    assert report["validation"]["val_loss"] > 0 and report["validation"]["check_n"] == 1
    assert (
        len(report["examples"]) == 1 and report["examples"][0]["id"] == "h-2"
    )  # round-robin over sorted targets

    again = CliRunner().invoke(
        main, args + ["--max-steps", "3"]
    )  # continues from the step-2 checkpoint
    assert again.exit_code == 0, again.output
    assert (
        "resumed from" in again.output
        and json.loads((out / "report.json").read_text())["steps"] == 3
    )

    from promptx.backends.embedded import EmbeddedBackend

    backend = EmbeddedBackend(out / "model", dtype="float32", quiet=True)
    assert backend.prompt_style == "short"
    from promptx import models

    base = models.prepare(models.resolve_model(models.BASE_NAME), quiet=True)
    assert EmbeddedBackend(base, dtype="float32", quiet=True).prompt_style == "full"


def test_the_default_model_merges_a_shipped_adapter_when_prepared(
    tmp_path, fp32_model, model_dir, monkeypatch
):
    """The adapter applied at prepare time gives the logits of the LoRA model it was trained as.

    The GGUF conversion itself is tested in test_models.py; here it copies the converted
    directory."""
    import shutil

    import torch

    import engine

    monkeypatch.setattr(
        engine,
        "convert_gguf",  # promptx calls it through the seam
        lambda gguf, out: shutil.copytree(model_dir, out, dirs_exist_ok=True),
    )

    from engine.training.lora import LoRALinear, attach_lora, save_adapter
    from promptx import models

    target, tokenizer = fp32_model
    import copy

    adapted = copy.deepcopy(target)
    info = attach_lora(adapted, rank=2, alpha=4)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for m in adapted.modules():
            if isinstance(m, LoRALinear):
                m.lora_B.copy_(torch.randn(m.lora_B.shape, generator=gen) * 0.02)
    adapter = save_adapter(adapted, tmp_path / "shipped.safetensors", info)
    monkeypatch.setattr(models, "SHIPPED_ADAPTER", adapter)
    monkeypatch.setenv("PROMPTX_CACHE", str(tmp_path / "cache"))

    tuned, base = models.resolve_model(None), models.resolve_model("smollm2-135m-instruct-base")
    assert tuned.adapter == adapter and base.adapter is None and tuned.directory != base.directory
    assert {row["name"] for row in models.list_models()} >= {
        "smollm2-135m-instruct",
        "smollm2-135m-instruct-base",
    }
    from engine.weights.loading import load_transformer

    merged = load_transformer(models.prepare(tuned, quiet=True))
    ids = torch.tensor([tokenizer.encode("A lighthouse on a rocky point at dusk")])
    want = adapted(ids, adapted.new_cache(64)).logits
    got = merged(ids, merged.new_cache(64)).logits
    assert torch.allclose(got, want, atol=2e-4)
    assert not torch.allclose(target(ids, target.new_cache(64)).logits, want, atol=1e-3)


def test_bad_tuning_data_gets_one_line_naming_the_file_and_line(tmp_path):
    data = write_data(tmp_path / "data")
    bad = data / "train" / "pairs.jsonl"
    bad.write_text(bad.read_text() + '{"id": "t-9", "target": "video"}\n')
    result = CliRunner().invoke(main, ["tune", str(data), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert f"{bad}:5:" in result.output and "Traceback" not in result.output
    empty = tmp_path / "empty"
    (empty / "heldout").mkdir(parents=True)
    result = CliRunner().invoke(main, ["tune", str(empty), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and "no pairs under a train/ folder" in result.output
    with pytest.raises(PairFileError, match="no such pair file"):
        read_pairs([tmp_path / "missing"])
    assert (
        PairRow(
            TuningPair.model_validate({**PAIRS[0], "source": "team", "author": "x"}),
            f"{data}/train/pairs.jsonl:1",
        ).split
        == "train"
    )
