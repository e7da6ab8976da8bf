"""``promptx models export``: a prepared model as the Hugging Face directory vLLM, SGLang and
llama.cpp load.

The embedded default lives in the cache as a Hugging Face style directory (the
GGUF dequantized, promptx's adapter merged in: the weights its drafter was
trained on). ``export_model_dir`` copies the files the engines read
(config.json, the safetensors weights, tokenizer files, generation_config.json
when present) plus promptx's ``adapter.json`` note, so that promptx prompts an
exported tuned model the same way. tokenizer_config.json is written for both
transformers 4 and 5: the class named ``PreTrainedTokenizerFast`` (the cache
names transformers 5's ``TokenizersBackend``) and the chat template inlined
(the .jinja file is kept too).

Registered by main.py under the ``models`` group. Not here: listing models
(main.py), preparing the cache (``promptx.models``), the drafter export
(``draft.py``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click

from ..errors import InvalidInputError, ModelError

#: copied as they are when present (weights: every *.safetensors, see below)
COPIED_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors.index.json",
    "tokenizer.json",
    "tokenizer.model",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
    "adapter.json",
)
_V5_ONLY_KEYS = ("backend", "is_local", "local_files_only")


def _tokenizer_config(source: Path) -> dict | None:
    path = source / "tokenizer_config.json"
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelError(f"cannot read {path}: {exc}") from None
    if config.get("tokenizer_class") == "TokenizersBackend":
        config["tokenizer_class"] = "PreTrainedTokenizerFast"
    for key in _V5_ONLY_KEYS:
        config.pop(key, None)
    template = source / "chat_template.jinja"
    if "chat_template" not in config and template.is_file():
        config["chat_template"] = template.read_text(encoding="utf-8")
    return config


def export_model_dir(source: Path, out: Path) -> list[str]:
    """Copy the engine-facing files of the model directory ``source`` into ``out``; the names
    written."""
    source, out = Path(source), Path(out)
    weights = sorted(p.name for p in source.glob("*.safetensors"))
    if not (source / "config.json").is_file() or not weights:
        raise ModelError(
            f"{source} is not a prepared model directory (config.json and *.safetensors)"
        )
    if out.resolve() == source.resolve():
        raise InvalidInputError(f"--out {out} is the model's own directory: choose another one")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in [n for n in COPIED_FILES if (source / n).is_file()] + weights:
        shutil.copyfile(source / name, out / name)
        written.append(name)
    tokenizer = _tokenizer_config(source)
    if tokenizer is not None:
        (out / "tokenizer_config.json").write_text(
            json.dumps(tokenizer, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        written.append("tokenizer_config.json")
    return sorted(written)


@click.command("export")
@click.option("--model", help="Model name, directory or .gguf file (default: the embedded model).")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Directory to write the Hugging Face files into.",
)
@click.option("--quiet", is_flag=True)
def models_export(model, out_dir, quiet) -> None:
    """Write a model (default: the embedded one, prepared) as a Hugging Face directory for other
    engines."""
    from ..models import prepare, resolve_model

    source = resolve_model(model)
    written = export_model_dir(prepare(source, quiet=quiet), out_dir)
    click.echo(f"wrote {out_dir.resolve()} ({source.name}): {', '.join(written)}")
    if not quiet:
        click.echo(
            f"serve it: vllm serve {out_dir.resolve()}; with a drafter: "
            f"promptx draft export DRAFTER --out DRAFT_DIR --target-dir {out_dir.resolve()}",
            err=True,
        )
