"""A light tokenizer: ``tokenizer.json`` through the ``tokenizers`` library plus the chat template.

Loading this takes milliseconds (no transformers import). The chat template
(Jinja, from the model's files) is rendered in a sandbox: template files are
data, never trusted code. ``IncrementalDecoder`` turns a growing list of
token ids into text deltas for streaming without splitting UTF-8 characters.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence


class TokenizerError(ValueError):
    """The tokenizer files are missing or unusable."""


class ChatTokenizer:
    def __init__(self, model_dir: str | Path) -> None:
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        path = model_dir / "tokenizer.json"
        if not path.is_file():
            raise TokenizerError(f"{model_dir}: no tokenizer.json")
        self._tok = Tokenizer.from_file(str(path))
        config_path = model_dir / "tokenizer_config.json"
        config = json.loads(config_path.read_text()) if config_path.is_file() else {}
        self.chat_template = self._read_chat_template(model_dir, config)
        self._compiled_template = None
        self.eos_token = _token_text(config.get("eos_token"))
        self.bos_token = _token_text(config.get("bos_token"))
        self.eos_token_ids = self._eos_ids(model_dir)
        self._token_texts: list[str] | None = None

    @staticmethod
    def _read_chat_template(model_dir: Path, config: dict) -> str | None:
        jinja = model_dir / "chat_template.jinja"
        if jinja.is_file():
            return jinja.read_text()
        template = config.get("chat_template")
        return template if isinstance(template, str) else None

    def _eos_ids(self, model_dir: Path) -> tuple[int, ...]:
        ids = set()
        if self.eos_token is not None and self._tok.token_to_id(self.eos_token) is not None:
            ids.add(self._tok.token_to_id(self.eos_token))
        for name in ("generation_config.json", "config.json"):
            path = model_dir / name
            if path.is_file():
                eos = json.loads(path.read_text()).get("eos_token_id")
                ids.update(eos if isinstance(eos, list) else ([eos] if eos is not None else []))
        return tuple(sorted(ids))

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def token_texts(self) -> list[str]:
        """The text of every token id decoded alone, leading space included (" dog")."""
        if self._token_texts is None:
            self._token_texts = self._tok.decode_batch(
                [[i] for i in range(self.vocab_size)], skip_special_tokens=False
            )
        return self._token_texts

    def render_chat(
        self, messages: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        """The chat template applied to ``messages`` (role/content dicts)."""
        if self.chat_template is None:
            raise TokenizerError("this model has no chat template; it is not an instruct model")
        if self._compiled_template is None:  # compiling costs ~50 ms; do it once
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            self._compiled_template = env.from_string(self.chat_template)
        return self._compiled_template.render(
            messages=messages,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.bos_token or "",
            eos_token=self.eos_token or "",
        )

    def encode_chat(self, messages: list[dict[str, str]]) -> list[int]:
        return self.encode(self.render_chat(messages))


def _token_text(token) -> str | None:
    if isinstance(token, dict):
        return token.get("content")
    return token


class IncrementalDecoder:
    """Text deltas for a growing token list; holds back incomplete UTF-8 sequences."""

    def __init__(self, tokenizer: ChatTokenizer) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.emitted = ""

    def push(self, new_ids: Sequence[int]) -> str:
        self.ids.extend(new_ids)
        text = self.tokenizer.decode(self.ids)
        if text.endswith("\ufffd"):
            return ""
        delta = text[len(self.emitted) :] if text.startswith(self.emitted) else ""
        self.emitted = text if text.startswith(self.emitted) else self.emitted
        return delta
