"""Per-request latency of warm ``Enhancer.enhance`` calls, stage by stage
(``promptx bench --latency``).

What a user waits for is one ``enhance`` call: building the request and rendering the
chat, the model's prefill and decode, phrase scoring (strength medium), clean-up and the
assessment, retries. ``measure_latency(enhancer, items, ...)`` times such calls on a
loaded Enhancer and splits each call's wall time into ``STAGES``:

- ``render``: ``Enhancer._request`` (options, request), rendering the chat
  (``enhancer._messages``), its tokenization (``backend.encode``) and, for light and
  medium, ``structured_result`` less what is timed apart inside it (composing the text);
- ``batch_wait``: the request batcher's gathering window (``RequestBatcher._gather``:
  a lone caller waits it out for batch-mates);
- ``constraint``: the tokens the request's decoding constraint bans
  (``VocabularyIndex.banned_ids``, computed once per constraint, i.e. per prompt);
- ``prefill`` / ``decode``: the engine's own ``DecodeStats`` of every attempt
  (``GenerationOutput.engine_stats``);
- ``scoring``: ``backend.score_phrases`` (medium ranks phrases with the model);
- ``cleanup``: ``Enhancer._postprocess`` (clean-up, assessment, salvage), ``_counted``
  (the encoder-token count) and the structured path's assessment;
- ``other``: the rest of the call (the enhancer's own glue, the backend's work around
  the engine's decode: sampling settings, stop rules, detokenizing).

The stages partition the call exactly: a ``StageClock`` charges each moment to the
innermost stage running (the tokenization inside a generation is ``render``, not the
generation's). The timing is done by wrapping those methods on the instances (and two
module names) for the duration of the measurement only; nothing changes what a call
does. With a ``peer`` (llama.cpp in its own process, ``engine.bench.make_peers`` with
``ignore_eos``), every attempt's prompt ids are decoded again by the peer to the same
number of new tokens, right after the call, for a per-request comparison.

Not here: the command line and the markdown (``promptx.cli.bench_latency``), the peers
(``engine.bench.peers``).
"""

from __future__ import annotations

import functools
import statistics
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Sequence

STAGES = ("render", "batch_wait", "constraint", "prefill", "decode", "scoring", "cleanup", "other")
WARMUP_PROMPT = "a lighthouse on a cliff at dawn"  # the warm-up calls' prompt (in no shipped suite)
LATENCY_SCHEMA_VERSION = 1
_GENERATE = (
    "generate"  # the clock's bucket for the backend's generation, split into prefill/decode/other
)


@dataclass(frozen=True)
class LatencyItem:
    """One request of the measurement: what ``enhance`` is called with."""

    prompt: str
    target: str
    caption: str | None = None
    image: object | None = None
    label: str = ""


class StageClock:
    """Wall time charged to exclusive stages: time in a nested stage is not its parent's.

    Only the thread that ``start``-ed counts; elsewhere (and when stopped) ``stage`` does
    nothing."""

    def __init__(self) -> None:
        self._stack: list[str] = []
        self._totals: dict[str, float] = defaultdict(float)
        self._mark = 0.0
        self._thread: int | None = None

    @property
    def running(self) -> bool:
        return self._thread == threading.get_ident()

    def start(self, root: str = "other") -> None:
        self._stack, self._totals = [root], defaultdict(float)
        self._thread, self._mark = threading.get_ident(), time.perf_counter()

    def stop(self) -> dict[str, float]:
        """The seconds of every stage since ``start`` (they sum to the wall time between them)."""
        self._charge()
        self._thread, self._stack = None, []
        return dict(self._totals)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        if not self.running:
            yield
            return
        self._charge()
        self._stack.append(name)
        try:
            yield
        finally:
            self._charge()
            self._stack.pop()

    def _charge(self) -> None:
        now = time.perf_counter()
        self._totals[self._stack[-1]] += now - self._mark
        self._mark = now


@dataclass
class _Recorder:
    """What the wrappers saw during one call: every generation's requests and outputs."""

    clock: StageClock = field(default_factory=StageClock)
    generations: list[tuple[list, list]] = field(default_factory=list)


def _timed(clock: StageClock, stage: str, fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with clock.stage(stage):
            return fn(*args, **kwargs)

    return wrapper


class _Patches:
    """Attributes replaced for the measurement and put back after it."""

    _MISSING = object()

    def __init__(self) -> None:
        self._saved: list[tuple[object, str, object]] = []

    def set(self, owner, name: str, value) -> None:
        if not hasattr(owner, name):
            raise AttributeError(f"promptx.latency: {owner!r} has no {name!r} to time (renamed?)")
        self._saved.append((owner, name, vars(owner).get(name, self._MISSING)))
        setattr(owner, name, value)

    def wrap(self, owner, name: str, clock: StageClock, stage: str) -> None:
        self.set(owner, name, _timed(clock, stage, getattr(owner, name)))

    def undo(self) -> None:
        for owner, name, old in reversed(self._saved):
            if old is self._MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._saved.clear()


@contextmanager
def instrumented(enhancer) -> Iterator[_Recorder]:
    """Time the stages of ``enhancer``'s calls (its backend loaded here) until the block ends."""
    import promptx.enhancer as enhancer_module
    import promptx.structured as structured_module

    backend, batcher = (
        enhancer.backend,
        enhancer.batcher,
    )  # made now, so that both are put back as they were
    recorder, patches = _Recorder(), _Patches()
    clock = recorder.clock
    generate_many = backend.generate_many

    def recorded_generate_many(requests):
        with clock.stage(_GENERATE):
            outputs = generate_many(requests)
        if clock.running:
            recorder.generations.append((list(requests), list(outputs)))
        return outputs

    try:
        for name in ("_request", "_postprocess", "_counted"):
            patches.wrap(enhancer, name, clock, "render" if name == "_request" else "cleanup")
        patches.wrap(backend, "encode", clock, "render")
        if getattr(backend, "scores_phrases", False):
            patches.wrap(backend, "score_phrases", clock, "scoring")
        patches.set(backend, "generate_many", recorded_generate_many)
        vocabulary = getattr(backend, "_vocabulary", None)
        if vocabulary is not None:  # the embedded backend's index, built now if not yet
            patches.wrap(vocabulary(), "banned_ids", clock, "constraint")
        patches.wrap(enhancer_module, "_messages", clock, "render")
        patches.wrap(enhancer_module, "structured_result", clock, "render")
        patches.wrap(structured_module, "assess", clock, "cleanup")
        if batcher is not None:  # it holds the backend's method from before
            patches.set(batcher, "_generate_many", recorded_generate_many)
            patches.wrap(batcher, "_gather", clock, "batch_wait")
        yield recorder
    finally:
        patches.undo()


# ---- one request ---------------------------------------------------------------------------------
def _split_generation(
    seconds: dict[str, float], outputs: Sequence
) -> tuple[dict[str, float], dict[str, float], bool]:
    """The clock's buckets with the generation split into prefill, decode and the rest (other),
    what ``other`` holds (``backend``: the generation around the engine's decode; ``enhancer``:
    the rest), and False when an output carries no engine statistics (then its generation
    counts as decode)."""
    stages = {s: seconds.get(s, 0.0) for s in STAGES}
    generate = seconds.get(_GENERATE, 0.0)
    known = all(o.engine_stats for o in outputs)
    around = 0.0
    if known:
        stages["prefill"] = sum(o.engine_stats["prefill_s"] for o in outputs)
        stages["decode"] = sum(o.engine_stats["decode_s"] for o in outputs)
        around = generate - stages["prefill"] - stages["decode"]
    else:
        stages["decode"] = generate
    parts = {"backend": around, "enhancer": stages["other"]}
    stages["other"] += around
    return stages, parts, known


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _decode_tps(new_tokens: Sequence[int], decode_s: Sequence[float]) -> float | None:
    """Tokens after each attempt's first over the time after its prefill (as ``engine.bench``)."""
    tokens, seconds = sum(max(n - 1, 0) for n in new_tokens), sum(decode_s)
    return tokens / seconds if tokens and seconds > 0 else None


def _peer_row(peer, attempts: list[tuple[list[int], object, int]]) -> dict | None:
    """The peer on every attempt's prompt ids, to the attempt's number of new tokens."""
    from engine import SamplingParams

    rows = []
    for ids, options, new_tokens in attempts:
        if new_tokens < 1:
            continue
        params = SamplingParams(
            temperature=options.temperature,
            repetition_penalty=options.repetition_penalty,
            max_new_tokens=new_tokens,
            seed=options.seed,
        )
        sample = peer.decode(ids, params)
        if sample is None:  # crashed: ``peer.crashed`` says why
            return None
        rows.append(sample)
    if not rows:
        return None
    seconds = sum(s.latency_s for s in rows)
    prefill = [s.first_token_s for s in rows]
    prefill_s = sum(prefill) if None not in prefill else None
    return {
        "seconds": seconds,
        "prefill_s": prefill_s,
        "new_tokens": sum(len(s.tokens) for s in rows),
        "prompt_tokens": len(attempts[0][0]),
        "decode_tokens_per_s": None
        if prefill_s is None
        else _decode_tps(
            [len(s.tokens) for s in rows], [s.latency_s - (s.first_token_s or 0.0) for s in rows]
        ),
    }


def measure_one(enhancer, recorder: _Recorder, item: LatencyItem, options: dict, peer=None) -> dict:
    """One timed ``enhance`` call (inside ``instrumented``) and, with a peer, its comparison."""
    recorder.generations.clear()
    kwargs = dict(options)
    if item.caption is not None:
        kwargs["caption"] = item.caption
    if item.image is not None:
        kwargs["image"] = item.image
    recorder.clock.start()
    started = time.perf_counter()
    try:
        result = enhancer.enhance(item.prompt, item.target, **kwargs)
    finally:
        total = time.perf_counter() - started
        seconds = recorder.clock.stop()
    outputs = [o for _, outs in recorder.generations for o in outs]
    stages, other_parts, known = _split_generation(seconds, outputs)
    new_tokens = [o.completion_tokens for o in outputs]
    decode_s = [o.engine_stats["decode_s"] for o in outputs] if known else []
    row = {
        "label": item.label,
        "target": item.target,
        "task": result.task,
        "strength": result.strength,
        "attempts": result.stats.attempts,
        "fallback": result.fallback,
        "skipped": result.skipped,
        "total_s": total,
        "stages_s": stages,
        "other_s": other_parts,
        "generations": len(outputs),
        "speculative": any(o.speculative for o in outputs),
        "acceptance_length": _mean([o.acceptance_length for o in outputs if o.acceptance_length]),
        "prompt_tokens": outputs[0].prompt_tokens if outputs else 0,
        "new_tokens": sum(new_tokens),
        "decode_tokens_per_s": _decode_tps(new_tokens, decode_s) if known else None,
        "tokens_per_s": sum(new_tokens) / total if total > 0 else None,
        "engine_stats": known,
    }
    if peer is not None:
        attempts = [
            (enhancer.backend.encode(messages), opts, out.completion_tokens)
            for requests, outs in recorder.generations
            for (messages, opts), out in zip(requests, outs)
        ]
        row["peer"] = _peer_row(peer, attempts) if attempts else None
    return row


# ---- the measurement -----------------------------------------------------------------------------
def measure_latency(
    enhancer,
    items: Sequence[LatencyItem],
    *,
    strength: str = "full",
    seed: int | None = 0,
    max_new_tokens: int | None = None,
    temperature: float | None = None,
    warmup: bool = True,
    peer=None,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """Warm ``enhance`` calls on ``items``; return ``{"requests": [...], "latency": summary,
    "warmup_calls": n, "comparison": {...}}`` (the comparison with a ``peer`` only). ``warmup``:
    first one call per target, not counted, on ``WARMUP_PROMPT`` (a target's first call builds
    what it needs once, e.g. its decoding constraint's vocabulary index, ~0.1-0.5 s; a prompt
    of its own, so that no measured call finds its own prompt's work cached). ``peer``: a
    ``PeerProcess`` (or ``Peer``) decoding the same prompt ids to the same token counts.
    ``progress(n)`` is told of every request done. ``seed``, ``max_new_tokens``, ``temperature``:
    the calls' options (None: the Enhancer's and the profile's defaults)."""
    if not items:
        raise ValueError("no prompts to measure")
    options = {"strength": strength}
    if seed is not None:
        options["seed"] = seed
    if max_new_tokens is not None:
        options["max_new_tokens"] = max_new_tokens
    if temperature is not None:
        options["temperature"] = temperature
    first: dict[str, LatencyItem] = {}
    for item in items if warmup else ():
        first.setdefault(item.target, replace(item, prompt=WARMUP_PROMPT, label="warm-up"))
    rows, warmups = [], list(first.values())
    with instrumented(enhancer) as recorder:
        for item in warmups:  # one per target: a target's first call builds what it needs once
            measure_one(enhancer, recorder, item, options, peer)
        for item in items:
            rows.append(measure_one(enhancer, recorder, item, options, peer))
            if progress is not None:
                progress(1)
    report = {"requests": rows, "latency": summarize(rows), "warmup_calls": len(warmups)}
    if peer is not None:
        report["comparison"] = compare(
            rows, getattr(peer, "name", "peer"), getattr(peer, "crashed", None)
        )
    return report


# ---- summaries -----------------------------------------------------------------------------------
def spread(values: Sequence[float]) -> dict | None:
    """Median, 90th percentile and mean (None for no values). The p90 interpolates between the
    sorted values (``statistics.quantiles``, inclusive)."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    p90 = (
        statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else values[0]
    )
    return {
        "median": statistics.median(values),
        "p90": p90,
        "mean": statistics.fmean(values),
        "n": len(values),
    }


def _ms(summary: dict | None) -> dict | None:
    if summary is None:
        return None
    return {
        "median_ms": summary["median"] * 1e3,
        "p90_ms": summary["p90"] * 1e3,
        "mean_ms": summary["mean"] * 1e3,
    }


def summarize(rows: Sequence[dict]) -> dict:
    """Per stage and for the whole call: median, p90 and mean in milliseconds over the requests;
    generated tokens and tokens/s."""
    stages = {s: _ms(spread([r["stages_s"][s] for r in rows])) for s in STAGES}
    return {
        "stages": stages,
        "total": _ms(spread([r["total_s"] for r in rows])),
        "stage_medians_sum_ms": sum(v["median_ms"] for v in stages.values()),
        "other_parts": {
            p: _ms(spread([r["other_s"][p] for r in rows])) for p in ("backend", "enhancer")
        },
        "new_tokens": spread([r["new_tokens"] for r in rows]),
        "prompt_tokens": spread([r["prompt_tokens"] for r in rows]),
        "decode_tokens_per_s": spread([r["decode_tokens_per_s"] for r in rows]),
        "tokens_per_s": spread([r["tokens_per_s"] for r in rows]),
        "attempts": spread([r["attempts"] for r in rows]),
        "acceptance_length": spread([r["acceptance_length"] for r in rows]),
        "speculative_requests": sum(bool(r["speculative"]) for r in rows),
        "fallbacks": sum(bool(r["fallback"]) for r in rows),
        "requests": len(rows),
    }


def compare(rows: Sequence[dict], name: str, crashed: str | None = None) -> dict:
    """promptx against the peer, request by request: the ratios promptx / peer of the whole call,
    of the model's time alone (prefill + decode) and of decoding tokens/s."""
    pairs = [(r, r["peer"]) for r in rows if r.get("peer")]
    if not pairs:
        why = f"crashed: {crashed}" if crashed else "no request generated tokens to compare"
        return {"peer": name, "available": False, "skipped": why}
    model_s = [r["stages_s"]["prefill"] + r["stages_s"]["decode"] for r, _ in pairs]
    out = {
        "peer": name,
        "available": True,
        "requests": len(pairs),
        "promptx_total_s": spread([r["total_s"] for r, _ in pairs]),
        "promptx_model_s": spread(model_s),
        "promptx_decode_tokens_per_s": spread([r["decode_tokens_per_s"] for r, _ in pairs]),
        "peer_seconds": spread([p["seconds"] for _, p in pairs]),
        "peer_prefill_s": spread([p["prefill_s"] for _, p in pairs]),
        "peer_decode_tokens_per_s": spread([p["decode_tokens_per_s"] for _, p in pairs]),
        "total_ratio": spread([r["total_s"] / p["seconds"] for r, p in pairs if p["seconds"] > 0]),
        "model_time_ratio": spread(
            [m / p["seconds"] for m, (_, p) in zip(model_s, pairs) if p["seconds"] > 0]
        ),
        "decode_tps_ratio": spread(
            [
                r["decode_tokens_per_s"] / p["decode_tokens_per_s"]
                for r, p in pairs
                if r["decode_tokens_per_s"] and p["decode_tokens_per_s"]
            ]
        ),
    }
    if crashed:
        out["crashed"] = crashed
    return out
