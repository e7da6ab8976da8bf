"""Peers for ``promptx bench``: other decoders run on the same prompt ids for comparison.

transformers' ``generate()``, llama.cpp on the model's GGUF file, and promptx's own
plain decoder in another precision (``mixed``, ``int8``), each a ``Peer`` that
times its own decodes (``Peer.decode``). ``make_peer`` builds one from a
``PeerSpec``; the bench builds them in their own processes
(``engine.bench.peer_process``), so that a peer that crashes cannot take it down.
Not here: the processes, reports (``engine.bench.report``).
"""

from __future__ import annotations

import importlib.util
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import torch

from ..decode.sampling import SamplingParams
from ..generator import Generator
from .sample import Sample


class PeerError(ValueError):
    """An unknown peer name."""


class PeerUnavailable(Exception):
    """A peer that cannot run here (not installed, no GGUF file, the model does not load)."""


class Peer(ABC):
    """Another implementation decoding the same prompt ids (transformers, llama.cpp, ...)."""

    name: str
    streams: (
        bool  # ``generate`` yields each token as it is decoded (so the prefill can be timed apart)
    )
    crashed: str | None = (
        None  # in-process peers never report a crash (see engine.bench.peer_process)
    )

    @abstractmethod
    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Iterable[int]:
        """The generated tokens (without EOS)."""

    def decode(self, prompt_ids: Sequence[int], params: SamplingParams) -> Sample:
        """Time one decode; a streaming peer also gets its time to the first token, so that its
        decoding speed is reported without the prefill."""
        started, first, tokens = time.perf_counter(), None, []
        for token in self.generate(prompt_ids, params):
            if first is None:
                first = time.perf_counter() - started
            tokens.append(token)
        return Sample(
            tokens, time.perf_counter() - started, first_token_s=first if self.streams else None
        )


@dataclass(frozen=True)
class PeerSpec:
    """What building a peer needs, in plain values (it is sent to the peer's process)."""

    name: str
    model_dir: str
    gguf_path: str | None
    eos_ids: tuple[int, ...]
    dtype: str  # torch dtype name of the engine's model (transformers loads the same)
    device: str
    threads: int
    context: int
    # llama.cpp only (the latency bench, promptx.latency): decode through EOS, so that it generates
    # exactly ``max_new_tokens``; keep the KV of the previous prompt's common prefix, as promptx
    # does where it keeps prompt prefixes (``Generator.prefixes``)
    ignore_eos: bool = False
    keep_prefix: bool = False
    # llama.cpp's extra buffer types (weight repacking, AMX): off where they crash this machine
    # (``peer_process.make_peers`` retries without them when loading dies of SIGILL)
    extra_buffers: bool = True

    @classmethod
    def of(
        cls,
        name: str,
        generator: Generator,
        model_dir,
        gguf_path=None,
        *,
        ignore_eos: bool = False,
        keep_prefix: bool = False,
        extra_buffers: bool = True,
    ) -> "PeerSpec":
        model = generator.model
        return cls(
            name,
            str(model_dir),
            None if gguf_path is None else str(gguf_path),
            tuple(generator.eos_ids),
            str(model.dtype).removeprefix("torch."),
            str(model.lm_head.weight.device),
            torch.get_num_threads(),
            generator.context_window,
            ignore_eos,
            keep_prefix,
            extra_buffers,
        )


class TransformersPeer(Peer):
    """Hugging Face ``generate()`` on the same model directory (greedy unless temperature > 0).

    Stops at EOS like the engine; ``min_new_tokens`` is not forced.
    """

    name = "transformers"
    streams = False

    def __init__(self, model_dir, dtype: torch.dtype, eos_ids: Sequence[int], device="cpu") -> None:
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # keep the bench's stderr readable
        self.model = (
            AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=dtype).to(device).eval()
        )
        self.eos_ids, self.device = list(eos_ids), device

    @torch.inference_mode()
    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> list[int]:
        if params.seed is not None:
            torch.manual_seed(params.seed)
        ids = torch.tensor([list(prompt_ids)], device=self.device)
        sampling = (
            {"do_sample": True, "temperature": params.temperature, "top_p": 1.0, "top_k": 0}
            if not params.greedy
            else {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
        )
        out = self.model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=params.max_new_tokens,
            repetition_penalty=params.repetition_penalty,
            eos_token_id=self.eos_ids,
            pad_token_id=self.eos_ids[0] if self.eos_ids else None,
            **sampling,
        )
        return _until_eos(out[0, ids.shape[1] :].tolist(), self.eos_ids)


class LlamaCppPeer(Peer):
    """llama.cpp through ``llama_cpp.Llama`` on the model's GGUF file (its own quantized weights).

    ``ignore_eos``: decode through EOS to ``max_new_tokens`` (a count given by another decoder);
    ``keep_prefix``: reuse the KV of the prompt prefix it shares with the previous prompt
    (``Llama.generate`` finds it), else every prompt is prefilled whole; ``extra_buffers``:
    False loads the weights without llama.cpp's extra buffer types (weight repacking, AMX).
    Loading ends with a two-token probe decode, so that kernels this machine cannot run kill
    the peer while it loads, not at its first measured prompt (a build with AMX tiles died of
    SIGILL in ``ggml_backend_amx_mul_mat`` on the 2-vCPU Xeon, llama-cpp-python 0.3.36)."""

    name = "llamacpp"
    streams = True

    def __init__(
        self,
        gguf_path,
        eos_ids: Sequence[int],
        threads: int,
        context: int,
        *,
        ignore_eos: bool = False,
        keep_prefix: bool = False,
        extra_buffers: bool = True,
    ) -> None:
        from llama_cpp import Llama

        with _extra_buffer_types(extra_buffers):
            # the prompt's batch on as many threads too (llama-cpp-python's default: every CPU)
            self.llm = Llama(
                model_path=str(gguf_path),
                n_ctx=context,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
            )
        self.eos_ids = set() if ignore_eos else set(eos_ids) | {self.llm.token_eos()}
        self.keep_prefix = keep_prefix
        list(
            self.generate(
                self.llm.tokenize(b"A probe of the kernels."), SamplingParams(max_new_tokens=2)
            )
        )
        self.llm.reset()

    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Iterator[int]:
        if params.seed is not None and hasattr(
            self.llm, "set_seed"
        ):  # older versions: seed at load only
            self.llm.set_seed(params.seed)
        if not self.keep_prefix:
            # no prefix reuse across prompts: the engine's bench runs have none either
            self.llm.reset()
        stream = self.llm.generate(
            list(prompt_ids),
            top_k=0 if not params.greedy else 1,
            top_p=1.0,
            min_p=0.0,
            temp=params.temperature,
            repeat_penalty=params.repetition_penalty,
            reset=True,
        )
        for count, token in enumerate(stream, start=1):
            if token in self.eos_ids:
                return
            yield int(token)
            if count >= params.max_new_tokens:
                return


@contextmanager
def _extra_buffer_types(enabled: bool) -> Iterator[None]:
    """While a ``Llama`` loads: its model parameters with or without ``use_extra_bufts`` (the
    ``Llama`` constructor does not take it; it asks ``llama_model_default_params``)."""
    if enabled:
        yield
        return
    import llama_cpp.llama_cpp as api

    default = api.llama_model_default_params

    def without():
        params = default()
        params.use_extra_bufts = False
        return params

    api.llama_model_default_params = without
    try:
        yield
    finally:
        api.llama_model_default_params = default


class PrecisionPeer(Peer):
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


def check_available(spec: PeerSpec) -> None:
    """Raise ``PeerError`` for an unknown name, ``PeerUnavailable`` for what is missing here
    (checked before starting a process for it)."""
    if spec.name not in PEERS:
        raise PeerError(f"unknown peer {spec.name!r}; use {', '.join(PEERS)}")
    if spec.name == "transformers" and importlib.util.find_spec("transformers") is None:
        raise PeerUnavailable("transformers is not installed")
    if spec.name == "llamacpp":
        if importlib.util.find_spec("llama_cpp") is None:
            raise PeerUnavailable(
                "llama-cpp-python is not installed (pip install llama-cpp-python)"
            )
        if spec.gguf_path is None:
            raise PeerUnavailable("no GGUF file for this model")


def make_peer(spec: PeerSpec) -> Peer:
    """Build the peer ``spec`` names (at ``spec.threads`` torch threads)."""
    check_available(spec)
    torch.set_num_threads(spec.threads)
    if spec.name in PRECISIONS:
        try:
            return PrecisionPeer(spec.name, spec.model_dir, spec.device)
        except (OSError, ValueError, RuntimeError) as exc:
            raise PeerUnavailable(
                f"promptx cannot load {spec.model_dir} in {spec.name} precision: {exc}"
            ) from None
    if spec.name == "transformers":
        try:
            return TransformersPeer(
                spec.model_dir, getattr(torch, spec.dtype), spec.eos_ids, spec.device
            )
        except (OSError, ValueError, ImportError) as exc:
            raise PeerUnavailable(f"transformers cannot load {spec.model_dir}: {exc}") from None
    try:
        return LlamaCppPeer(
            spec.gguf_path,
            spec.eos_ids,
            spec.threads,
            spec.context,
            ignore_eos=spec.ignore_eos,
            keep_prefix=spec.keep_prefix,
            extra_buffers=spec.extra_buffers,
        )
    except (OSError, ValueError, RuntimeError) as exc:
        raise PeerUnavailable(f"llama.cpp cannot load {spec.gguf_path}: {exc}") from None
