"""The prepared GPU check (scripts/gpu_check.sh) and its random-weights model, checked on the CPU:
the scripts parse, and the model it writes loads in the engine and in transformers alike."""

from __future__ import annotations

import importlib.util
import lzma
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.mark.parametrize("name", ["gpu_check.sh", "gpu_prepare.sh"])
def test_the_gpu_scripts_parse(name):
    subprocess.run(["bash", "-n", str(SCRIPTS / name)], check=True)


@pytest.mark.slow
def test_the_random_model_has_the_embedded_models_shape_and_loads_everywhere(model_dir, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from engine.weights.loading import load_model

    spec = importlib.util.spec_from_file_location("gpu_model", SCRIPTS / "gpu_model.py")
    gpu_model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_model)
    source = tmp_path / "source"  # as scripts/gpu_prepare.sh packs it to travel
    source.mkdir()
    for name in ("config.json", "tokenizer_config.json", "chat_template.jinja"):
        if (model_dir / name).is_file():
            shutil.copy(model_dir / name, source / name)
    (source / "tokenizer.json.xz").write_bytes(
        lzma.compress((model_dir / "tokenizer.json").read_bytes())
    )
    out = gpu_model.write_model(source, tmp_path / "random", layers=4)
    assert (out / "tokenizer.json").read_bytes() == (model_dir / "tokenizer.json").read_bytes()
    model, tokenizer = load_model(out, torch.float32)
    real = (model_dir / "config.json").read_text()
    assert (
        model.config.hidden_size == 576
        and model.config.num_hidden_layers == 4
        and '"hidden_size": 576' in real
    )
    ids = tokenizer.encode_chat([{"role": "user", "content": "a cat on a skateboard"}])
    tokens = torch.tensor([ids])
    ours = model(tokens, model.new_cache(len(ids))).logits[0]
    theirs = (
        AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32).eval()(tokens).logits[0]
    )
    torch.testing.assert_close(ours, theirs, atol=2e-3, rtol=1e-3)
    assert ours.std() > 1.0  # peaked distributions, not near-ties everywhere (EMBED_STD)
