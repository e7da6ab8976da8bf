"""The engine's one object that owns device resources: a loaded target, its tokenizer
and (optionally) a drafter, turning prompt token ids into generated tokens.

``stream`` decodes one prompt (``decode_speculative``: drafted rounds when a drafter is
attached and speculation is on, plain steps otherwise); ``generate_many``
decodes several prompts in one batch (speculative, ragged acceptance). Which code
runs the model's passes (precision, exact rows, CUDA graphs, tree attention) is
decided once, when the model is loaded, by ``engine.runtime.runner.build_runner``;
``from_dir`` picks the precision. Policy for prompts, templates or text clean-up
lives in promptx, not here.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator, Sequence

import torch

from .decode.prefix_cache import PrefixCache, prefix_dir
from .decode.sampling import SamplingParams
from .decode.stats import DecodeStats
from .decode.stopping import StopChecker
from .runtime.device import AUTO, INT4, PLAIN_ONLY, parse_dtype, prefers_int4
from .runtime.model import Transformer
from .runtime.runner import Runner, build_runner
from .speculative.loop import FixedTree, decode_speculative
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
    """Decodes prompts with a model built by ``engine.runtime.runner.build_runner`` (a ``Runner``,
    or a ``Transformer`` built here in its own precision)."""

    def __init__(
        self,
        model: Transformer | Runner,
        tokenizer: ChatTokenizer,
        drafter=None,
        planner: Planner | None = None,
        *,
        prefixes: PrefixCache | None = None,
        cuda_graphs: bool | None = None,
    ) -> None:
        self.runner = (
            model if isinstance(model, Runner) else build_runner(model, cuda_graphs=cuda_graphs)
        )
        self.model, self.tokenizer = self.runner.model, tokenizer
        self.drafter, self.planner = drafter, planner
        # prompt-prefix KV reuse: only where decoding is plain-only (see engine.decode.prefix_cache)
        self.prefixes = prefixes if not self.exact_batches else None
        self.lock = threading.Lock()  # one decode at a time per loaded model

    @property
    def exact_batches(self) -> bool:
        """Whether a row's numbers are independent of its pass (``Runner.exact``): False for int8,
        mixed and int4 where this CPU's kernels are not (tree verification could then differ
        from plain decoding, so speculation is off)."""
        return self.runner.exact

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
        ``build_runner`` (CUDA only). Models that decode plainly only (int8, mixed, int4 where rows
        depend on their pass) keep prompt prefixes between calls
        (``engine.decode.prefix_cache``)."""
        runner = tokenizer = None
        if dtype in (None, AUTO) and prefers_int4(device):
            try:
                loaded = load_int4(model_dir, device, LOSSLESS_GRID_DISTANCE)
            except ValueError:  # e.g. layer sizes the 4-bit groups do not divide: bf16 then
                loaded = None
            if loaded is not None:
                model, tokenizer, _ = loaded
                runner = build_runner(model)
        if runner is None:
            runner, tokenizer = _load_runner(
                model_dir, parse_dtype(dtype, device), device, cuda_graphs
            )
        prefixes = (
            None
            if runner.exact
            else PrefixCache(
                f"{model_identity(model_dir)}|{runner.precision}|{device}", prefix_dir()
            )
        )
        return cls(runner, tokenizer, prefixes=prefixes)

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
            yield from decode_speculative(
                self.model,
                self.drafter if planner is not None else None,
                prompt_ids,
                params,
                stop,
                stats,
                planner,
                prefixes=self.prefixes,
                prefix_len=prefix_len,
            )

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


def _load_runner(
    model_dir: str | Path, dtype: torch.dtype | str, device: str | torch.device, cuda_graphs
) -> tuple[Runner, ChatTokenizer]:
    """The runner for an explicit precision (``parse_dtype``'s): int4 whatever quantizing changes,
    int8 and mixed from float32 weights, else the weights in ``dtype``."""
    if dtype == INT4:
        model, tokenizer, _ = load_int4(model_dir, device)
        return build_runner(model), tokenizer
    if dtype in PLAIN_ONLY:
        model, tokenizer = load_model(model_dir, torch.float32, device)
        return build_runner(model, dtype), tokenizer
    model, tokenizer = load_model(model_dir, dtype, device)
    return build_runner(model, cuda_graphs=cuda_graphs), tokenizer
