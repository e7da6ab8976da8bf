"""The engine's one object that owns device resources: a loaded target, its tokenizer
and (optionally) a drafter, turning prompt token ids into generated tokens.

``stream`` picks the decoder: speculative when a drafter is attached and
speculation is on, else the plain autoregressive reference; ``generate_many``
decodes several prompts in one batch (speculative, ragged acceptance). On CUDA it
attaches the target's CUDA graphs (``engine.runtime.cuda_graphs``) and, where
installed, FlashInfer's tree attention (``engine.runtime.tree_attention``), which
every batch-1 decoder then uses through the model. Policy for prompts, templates or
text clean-up lives in promptx, not here.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Iterator, Sequence

import torch

from .decode.autoregressive import decode_autoregressive
from .decode.prefix_cache import PrefixCache, prefix_dir
from .decode.sampling import SamplingParams
from .decode.stats import DecodeStats
from .decode.stopping import StopChecker
from .runtime.cuda_graphs import attach_cuda_graphs, cuda_graphs_of, graphs_wanted
from .runtime.device import AUTO, INT4, INT8, PLAIN_ONLY, parse_dtype, prefers_int4
from .runtime.exact_rows import make_rows_exact
from .runtime.model import Transformer
from .runtime.tree_attention import use_flashinfer
from .speculative.planner import Planner
from .weights.loading import load_int4, load_model, model_identity
from .weights.tokenizer import ChatTokenizer


class ContextOverflowError(ValueError):
    """A prompt plus its token budget does not fit the model's context window."""

    def __init__(self, prompt_tokens: int, max_new_tokens: int, window: int) -> None:
        super().__init__(
            f"the prompt takes {prompt_tokens} tokens and the answer up to {max_new_tokens}; "
            f"the model's context holds {window}"
        )
        self.prompt_tokens, self.max_new_tokens, self.window = prompt_tokens, max_new_tokens, window


# the largest distance (in 4-bit steps) of a weight from its 4-bit value at which "auto" uses int4:
# a model that was 4-bit already measures ~0.05 (bf16 scales and offsets), arbitrary weights ~0.5
LOSSLESS_GRID_DISTANCE = 0.1


class Generator:
    def __init__(
        self,
        model: Transformer,
        tokenizer: ChatTokenizer,
        drafter=None,
        planner: Planner | None = None,
        *,
        exact_batches: bool = True,
        prefixes: PrefixCache | None = None,
        cuda_graphs: bool | None = None,
    ) -> None:
        self.model, self.tokenizer = model, tokenizer
        # False when a row's result depends on the other rows of a pass (int8, mixed): then
        # tree verification could differ from plain decoding, so speculation is off.
        self.exact_batches = exact_batches
        if exact_batches:  # a row's numbers must not depend on the pass (tree verification)
            make_rows_exact(model)
        # on CUDA in half precision: FlashInfer's masked attention where installed and agreeing with
        # SDPA; then batch-1 steps and verification passes replayed from graphs (None:
        # $PROMPTX_CUDA_GRAPHS, on unless "0"). On a CPU neither changes anything.
        use_flashinfer(model)
        if cuda_graphs_of(model) is None and (
            graphs_wanted() if cuda_graphs is None else cuda_graphs
        ):
            attach_cuda_graphs(model)
        self.drafter, self.planner = drafter, planner
        # prompt-prefix KV reuse: only where decoding is plain-only (see engine.decode.prefix_cache)
        self.prefixes = prefixes if not exact_batches else None
        self.lock = threading.Lock()  # one decode at a time per loaded model

    @classmethod
    def from_dir(
        cls,
        model_dir: str | Path,
        *,
        dtype: str | torch.dtype | None = None,
        device: str | torch.device = "cpu",
        cuda_graphs: bool | None = None,
    ) -> "Generator":
        """``dtype`` "auto" (or None): 4-bit weights where ``prefers_int4`` and the model's weights
        are 4-bit already (nothing changes but speed), else ``default_dtype``. ``cuda_graphs``: see
        ``__init__`` (CUDA only)."""
        if dtype in (None, AUTO) and prefers_int4(device):
            try:
                generator = cls._from_dir_int4(
                    model_dir, device, max_grid_distance=LOSSLESS_GRID_DISTANCE
                )
            except ValueError:  # e.g. layer sizes the 4-bit groups do not divide: bf16 then
                generator = None
            if generator is not None:
                return generator
        dtype = parse_dtype(dtype, device)
        if dtype in PLAIN_ONLY:
            from .runtime.mixed_precision import use_mixed_precision
            from .runtime.quantize import quantize_int8

            model, tokenizer = load_model(model_dir, torch.float32, device)
            model = quantize_int8(model) if dtype == INT8 else use_mixed_precision(model)
            prefixes = PrefixCache(f"{model_identity(model_dir)}|{dtype}|{device}", prefix_dir())
            return cls(model, tokenizer, exact_batches=False, prefixes=prefixes)
        if dtype == INT4:
            return cls._from_dir_int4(model_dir, device)  # asked for: whatever quantizing changes
        model, tokenizer = load_model(model_dir, dtype, device)
        return cls(model, tokenizer, cuda_graphs=cuda_graphs)

    @classmethod
    def _from_dir_int4(
        cls, model_dir: str | Path, device: str | torch.device, max_grid_distance: float = math.inf
    ) -> "Generator | None":
        """4-bit weights (``engine.runtime.int4``), None if quantizing moved a weight further than
        ``max_grid_distance`` steps; speculation only where this CPU's kernels compute rows
        independently of their pass (else plain decoding, like int8)."""
        from .runtime.int4 import rows_are_independent

        loaded = load_int4(model_dir, device, max_grid_distance)
        if loaded is None:
            return None
        model, tokenizer, _ = loaded
        exact = rows_are_independent(torch.get_num_threads())
        prefixes = (
            None
            if exact
            else PrefixCache(f"{model_identity(model_dir)}|int4|{device}", prefix_dir())
        )
        return cls(model, tokenizer, exact_batches=exact, prefixes=prefixes)

    @property
    def context_window(self) -> int:
        return self.model.config.max_position_embeddings

    def check_fits(self, prompt_tokens: int, max_new_tokens: int) -> None:
        """The one context-window check: raise ``ContextOverflowError`` when the prompt and its
        budget exceed the window."""
        if prompt_tokens + max_new_tokens > self.context_window:
            raise ContextOverflowError(prompt_tokens, max_new_tokens, self.context_window)

    @property
    def eos_ids(self) -> tuple[int, ...]:
        return self.tokenizer.eos_token_ids or self.model.config.eos_token_ids

    @property
    def can_speculate(self) -> bool:
        return self.drafter is not None and self.exact_batches

    def planner_for(self, params: SamplingParams) -> Planner | None:
        """The tree planner for a decode, None to decode plainly: the attached one (e.g. the
        harness) for greedy decoding; for sampling its ``for_sampling`` choice (a planner whose
        trees do not follow measured timings, because a seed must give the same text every time)."""
        from .speculative.loop import FixedTree

        if not self.can_speculate:
            return None
        if self.planner is None:
            return FixedTree()
        return self.planner if params.greedy else self.planner.for_sampling()

    def stop_checker(self, params: SamplingParams, stop_if=None) -> StopChecker:
        return StopChecker(
            self.eos_ids,
            params.max_new_tokens,
            params.stop_strings,
            self.tokenizer.decode,
            stop_if=stop_if,
        )

    def stream(
        self,
        prompt_ids: Sequence[int],
        params: SamplingParams,
        *,
        speculative: bool = True,
        stats: DecodeStats | None = None,
        stop: StopChecker | None = None,
        prefix_len: int = 0,
    ) -> Iterator[list[int]]:
        """Yield generated tokens in chunks (one chunk per target pass); fill ``stats``.

        ``prefix_len``: how many leading prompt tokens are a fixed prefix worth keeping
        (system prompt and examples); used where the generator keeps prefixes."""
        self.check_fits(len(prompt_ids), params.max_new_tokens)
        stop = stop or self.stop_checker(params)
        stats = stats if stats is not None else DecodeStats()
        planner = self.planner_for(params) if speculative else None
        with self.lock:
            if planner is not None:
                from .speculative.loop import decode_speculative

                yield from decode_speculative(
                    self.model, self.drafter, prompt_ids, params, stop, stats, planner
                )
            else:
                for token in decode_autoregressive(
                    self.model,
                    prompt_ids,
                    params,
                    stop,
                    stats,
                    prefixes=self.prefixes,
                    prefix_len=prefix_len,
                ):
                    yield [token]

    def generate_many(
        self,
        prompts: Sequence[Sequence[int]],
        params: Sequence[SamplingParams],
        *,
        speculative: bool = True,
        stats: Sequence[DecodeStats] | None = None,
        stops: Sequence[StopChecker] | None = None,
        prefix_lens: Sequence[int] | None = None,
    ) -> list[list[int]]:
        """Decode several prompts: together, in batched plain decoding (one target pass per step
        for all rows), where a row's numbers do not depend on its batch-mates (``exact_batches``);
        else one at a time (speculative where it may be). Every output equals the plain decoding
        of that prompt alone (greedy, and sampled with a seed), so also its greedy speculative
        decoding, in fp32 and int4 (not in bf16, where a near-tie can flip). Batched rounds do not
        draft: on the CPUs measured, batched plain decoding of 8 rows was 1.7x the throughput of 8
        single decodes and speculative batches were no faster than one at a time
        (docs/serving.md)."""
        stats = list(stats) if stats is not None else [DecodeStats() for _ in prompts]
        stops = list(stops) if stops is not None else [self.stop_checker(p) for p in params]
        for ids, p in zip(prompts, params):
            self.check_fits(len(ids), p.max_new_tokens)
        if len(prompts) == 1 or not self.exact_batches:
            lens = prefix_lens or [0] * len(prompts)
            return [
                self.generate(ids, p, speculative=speculative, stats=s, stop=st, prefix_len=n)
                for ids, p, s, st, n in zip(prompts, params, stats, stops, lens)
            ]
        from .speculative.batch import decode_speculative_batch
        from .speculative.loop import FixedTree
        from .speculative.planner import TreeConfig

        outputs: list[list[int]] = [[] for _ in prompts]
        with self.lock:
            for index, tokens in decode_speculative_batch(
                self.model, None, prompts, params, stops, stats, FixedTree(TreeConfig(budget=0))
            ):
                outputs[index].extend(tokens)
        return outputs

    def score(self, groups) -> list:
        """Each ``decode.scoring.ScoringGroup``'s continuation log-probabilities, in one pass."""
        from .decode.scoring import score_groups

        with self.lock:
            return score_groups(self.model, groups)

    def generate(
        self,
        prompt_ids: Sequence[int],
        params: SamplingParams,
        *,
        speculative: bool = True,
        stats: DecodeStats | None = None,
        stop: StopChecker | None = None,
        prefix_len: int = 0,
    ) -> list[int]:
        return [
            t
            for chunk in self.stream(
                prompt_ids,
                params,
                speculative=speculative,
                stats=stats,
                stop=stop,
                prefix_len=prefix_len,
            )
            for t in chunk
        ]
