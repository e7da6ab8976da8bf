"""Peers for ``promptx bench``: other decoders run on the same prompt ids for comparison.

transformers' ``generate()``, llama.cpp on the model's GGUF file, and promptx's own
plain decoder in another precision (``mixed``, ``int8``). A peer that cannot run
here is skipped with the reason. Not here: timing or reports (``engine.bench.report``).
"""

from __future__ import annotations

import importlib.util
from typing import Iterable, Iterator, Protocol, Sequence

import torch

from ..decode.sampling import SamplingParams
from ..generator import Generator


class PeerError(ValueError):
    """An unknown peer name."""


class Peer(Protocol):
    """Another implementation decoding the same prompt ids (transformers, llama.cpp)."""

    name: str
    streams: bool     # ``generate`` yields each token as it is decoded (so the bench can time the prefill)

    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Iterable[int]: ...


class TransformersPeer:
    """Hugging Face ``generate()`` on the same model directory (greedy unless temperature > 0).

    Stops at EOS like the engine; ``min_new_tokens`` is not forced.
    """

    name = "transformers"
    streams = False

    def __init__(self, model_dir, dtype: torch.dtype, eos_ids: Sequence[int], device="cpu") -> None:
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()   # keep the bench's stderr readable
        self.model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=dtype).to(device).eval()
        self.eos_ids, self.device = list(eos_ids), device

    @torch.inference_mode()
    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> list[int]:
        if params.seed is not None:
            torch.manual_seed(params.seed)
        ids = torch.tensor([list(prompt_ids)], device=self.device)
        sampling = {"do_sample": True, "temperature": params.temperature, "top_p": 1.0, "top_k": 0} \
            if not params.greedy else {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
        out = self.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=params.max_new_tokens,
                                  repetition_penalty=params.repetition_penalty, eos_token_id=self.eos_ids,
                                  pad_token_id=self.eos_ids[0] if self.eos_ids else None, **sampling)
        return _until_eos(out[0, ids.shape[1]:].tolist(), self.eos_ids)


class LlamaCppPeer:
    """llama.cpp through ``llama_cpp.Llama`` on the model's GGUF file (its own quantized weights)."""

    name = "llamacpp"
    streams = True

    def __init__(self, gguf_path, eos_ids: Sequence[int], threads: int, context: int) -> None:
        from llama_cpp import Llama

        self.llm = Llama(model_path=str(gguf_path), n_ctx=context, n_threads=threads, verbose=False)
        self.eos_ids = set(eos_ids) | {self.llm.token_eos()}

    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Iterator[int]:
        if params.seed is not None and hasattr(self.llm, "set_seed"):   # older versions: seed at load only
            self.llm.set_seed(params.seed)
        self.llm.reset()   # no prefix reuse across prompts: the engine has none either
        stream = self.llm.generate(list(prompt_ids), top_k=0 if not params.greedy else 1, top_p=1.0, min_p=0.0,
                                   temp=params.temperature, repeat_penalty=params.repetition_penalty, reset=True)
        for count, token in enumerate(stream, start=1):
            if token in self.eos_ids:
                return
            yield int(token)
            if count >= params.max_new_tokens:
                return


class PrecisionPeer:
    """promptx's plain decoder on the same model loaded in another precision (mixed, int8),
    with no prompt-prefix reuse, so that it times the same work as the other runs."""

    streams = True

    def __init__(self, precision: str, model_dir, device) -> None:
        self.name = precision
        self.generator = Generator.from_dir(model_dir, dtype=precision, device=device)
        self.generator.prefixes = None

    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Iterator[int]:
        for chunk in self.generator.stream(prompt_ids, params, speculative=False):
            yield from chunk


def _until_eos(tokens: list[int], eos_ids: Sequence[int]) -> list[int]:
    for i, token in enumerate(tokens):
        if token in eos_ids:
            return tokens[:i]
    return tokens


PRECISIONS = ("mixed", "int8")
PEERS = ("transformers", "llamacpp") + PRECISIONS


def make_peers(names: Sequence[str], generator: Generator, model_dir, gguf_path=None) -> tuple[list[Peer], dict]:
    """Build the named peers; unavailable ones are reported as ``{"available": False, "skipped": why}``."""
    peers, skipped = [], {}
    for name in names:
        try:
            peers.append(_make_peer(name, generator, model_dir, gguf_path))
        except _PeerUnavailable as exc:
            skipped[name] = {"available": False, "skipped": str(exc)}
    return peers, skipped


class _PeerUnavailable(Exception):
    pass


def _make_peer(name: str, generator: Generator, model_dir, gguf_path) -> Peer:
    eos = generator.eos_ids
    if name in PRECISIONS:
        try:
            return PrecisionPeer(name, model_dir, generator.model.lm_head.weight.device)
        except (OSError, ValueError, RuntimeError) as exc:
            raise _PeerUnavailable(f"promptx cannot load {model_dir} in {name} precision: {exc}") from None
    if name == "transformers":
        if importlib.util.find_spec("transformers") is None:
            raise _PeerUnavailable("transformers is not installed")
        try:
            return TransformersPeer(model_dir, generator.model.dtype, eos, generator.model.lm_head.weight.device)
        except (OSError, ValueError, ImportError) as exc:
            raise _PeerUnavailable(f"transformers cannot load {model_dir}: {exc}") from None
    if name == "llamacpp":
        if importlib.util.find_spec("llama_cpp") is None:
            raise _PeerUnavailable("llama-cpp-python is not installed (pip install llama-cpp-python)")
        if gguf_path is None:
            raise _PeerUnavailable("no GGUF file for this model")
        try:
            return LlamaCppPeer(gguf_path, eos, torch.get_num_threads(), generator.context_window)
        except (OSError, ValueError, RuntimeError) as exc:
            raise _PeerUnavailable(f"llama.cpp cannot load {gguf_path}: {exc}") from None
    raise PeerError(f"unknown peer {name!r}; use {', '.join(PEERS)}")
