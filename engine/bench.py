"""The benchmark core: decode the same tokenized prompts with every decoding mode and peer, side by side.

``run_bench(generator, drafter, prompts, config, peers=...)`` returns one
JSON-able report (schema: docs/bench.md). Per prompt it runs every *run*
(``none``; ``chain@B`` and ``tree@B`` for each budget B; ``harness`` when the
engine has one) and every peer, rotating their order from prompt to prompt to
spread machine noise. It measures latency and tokens/s, tau, the hit rate per
position along the accepted path, tau per task and per quartile of the
target's next-token entropy, and checks that greedy speculative output equals
the plain output token for token (``lossless``).

Entropy method: ``decode_speculative`` does not expose its verify logits, so
after decoding, each distinct output sequence is run once more through the
target in a plain forward pass (prompt, then the generated tokens); a round's
entropy is the entropy (nats, temperature 1, no penalties) of the target's
next-token distribution at the round's root, i.e. the distribution that
predicts the round's first new token. Quartile edges come from every
generated position of the ``none`` run, pooled over prompts.

Not here: prompt files, templates, tokenization (promptx.bench_cli), plots.
"""

from __future__ import annotations

import os
import platform
import resource
import statistics
import time
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Sequence

import torch

from .autoregressive import decode_autoregressive, prefill
from .bench_peers import Peer
from .drafter import Drafter, DrafterConfig
from .generator import Generator
from .sampling import SamplingParams
from .speculative import TreeConfig, decode_speculative
from .stats import DecodeStats

SCHEMA_VERSION = 1
MODES = ("none", "chain", "tree", "harness")
ENTROPY_METHOD = ("plain target forward over each distinct output (the verify logits are not exposed); "
                  "a round's entropy is the entropy at its root (the distribution of its first new token); "
                  "quartile edges from every generated position of the none run")
CONCURRENCY_NOTE = ("at concurrency C > 1 every run decodes C prompts per batched pass and a group's wall time "
                    "is split evenly over its prompts (tokens/s = batch throughput); peers decode one prompt "
                    "at a time")
MAX_CONCURRENCY = 64


class BenchError(ValueError):
    """The benchmark settings cannot be run."""


@dataclass(frozen=True)
class BenchPrompt:
    """One tokenized prompt; ``task`` groups prompts for tau per task (t2v, writing, ...)."""

    ids: tuple[int, ...]
    task: str
    label: str = ""


@dataclass(frozen=True)
class BenchConfig:
    max_new_tokens: int = 128
    temperature: float = 0.0
    repetition_penalty: float = 1.0
    seed: int | None = 0
    budgets: tuple[int, ...] = (8, 16)
    modes: tuple[str, ...] = ("none", "chain", "tree", "harness")
    concurrency: int = 1
    tree_max_depth: int = 6
    tree_top_k: int = 4
    warmup: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise BenchError(f"concurrency must be between 1 and {MAX_CONCURRENCY}, not {self.concurrency}")
        unknown = [m for m in self.modes if m not in MODES]
        if unknown:
            raise BenchError(f"unknown mode(s) {', '.join(unknown)}; use {', '.join(MODES)}")
        if not self.budgets or any(b < 1 for b in self.budgets):
            raise BenchError(f"budgets must be integers >= 1, not {list(self.budgets)}")
        if self.max_new_tokens < 1:
            raise BenchError("max_new_tokens must be >= 1")

    def params(self, max_new_tokens: int | None = None) -> SamplingParams:
        return SamplingParams(temperature=self.temperature, repetition_penalty=self.repetition_penalty,
                              max_new_tokens=max_new_tokens or self.max_new_tokens, seed=self.seed)


@dataclass(frozen=True)
class RunSpec:
    """One engine configuration measured: ``none``, ``chain@8``, ``tree@16``, ``harness``."""

    name: str
    mode: str
    budget: int | None = None
    tree: TreeConfig | None = None
    planner: object | None = None         # the ``Harness`` of a ``harness`` run


@dataclass
class Sample:
    """One decode of one prompt by one run or peer."""

    tokens: list[int]
    latency_s: float
    stats: DecodeStats | None = None


def build_runs(config: BenchConfig) -> list[RunSpec]:
    """The runs to measure; ``none`` always comes first (it is the reference)."""
    runs = [RunSpec("none", "none")]
    for budget in config.budgets:
        if "chain" in config.modes:
            runs.append(RunSpec(f"chain@{budget}", "chain", budget, TreeConfig.chain(budget)))
        if "tree" in config.modes:
            tree = TreeConfig(budget, min(config.tree_max_depth, budget), min(config.tree_top_k, budget))
            runs.append(RunSpec(f"tree@{budget}", "tree", budget, tree))
    if "harness" in config.modes:
        runs.append(RunSpec("harness", "harness"))
    return runs


def random_drafter(model, seed: int | None = 0) -> Drafter:
    """An untrained drafter for ``model`` (its tau is meaningless; it exercises the code paths)."""
    with torch.random.fork_rng(devices=[]):   # leave the caller's random state alone
        torch.manual_seed(0 if seed is None else seed)
        drafter = Drafter(DrafterConfig.for_target(model.config), dtype=model.dtype)
    return drafter.to(model.lm_head.weight.device).attach(model).eval()


# ---- decoding ------------------------------------------------------------------------------------
def decode_run(generator: Generator, drafter: Drafter | None, run: RunSpec, prompt_ids: Sequence[int],
               params: SamplingParams) -> Sample:
    """Decode one prompt with one run, timed end to end (prefill included)."""
    stats, stop, model = DecodeStats(), generator.stop_checker(params), generator.model
    started = time.perf_counter()
    if run.mode == "none":
        tokens = list(decode_autoregressive(model, prompt_ids, params, stop, stats))
    else:
        if drafter is None:
            raise BenchError(f"run {run.name} needs a drafter")
        if run.mode == "harness":
            from .harness import decode_harness

            chunks = decode_harness(model, drafter, prompt_ids, params, stop, stats, run.planner)
        else:
            chunks = decode_speculative(model, drafter, prompt_ids, params, stop, stats, run.tree)
        tokens = [t for chunk in chunks for t in chunk]
    return Sample(tokens, time.perf_counter() - started, stats)


def _with_harness(run: RunSpec, model, drafter, say: Callable[[str], None]) -> RunSpec:
    """Give a ``harness`` run one Harness (stored cost table, else a quick calibration) for all prompts."""
    if run.mode != "harness" or run.planner is not None:
        return run
    from .harness import Harness

    say("loading the cost table (a quick calibration when none is stored)")
    harness = Harness.for_model(model, drafter)
    harness.costs                      # now, not inside the first timed decode  # noqa: B018
    return replace(run, planner=harness)


def harness_summary(stats: Sequence[DecodeStats]) -> dict:
    """What the harness chose: tree sizes and depths, predicted vs observed acceptance over its
    speculative rounds, and how many tokens it decoded in plain steps instead."""
    every = [r for s in stats for r in s.rounds]
    rounds = [r for r in every if not r.get("plain")]
    plain = len(every) - len(rounds)
    if not rounds:
        return {"rounds": 0, "plain_steps": plain}
    mean = lambda key: round(sum(r[key] for r in rounds) / len(rounds), 3)  # noqa: E731
    return {"rounds": len(rounds), "plain_steps": plain, "mean_nodes": mean("nodes"), "mean_depth": mean("depth"),
            "max_nodes": max(r["nodes"] for r in rounds), "plain_rounds": sum(r["nodes"] == 0 for r in rounds),
            "predicted_accepted": mean("predicted_accepted"), "accepted": mean("accepted"),
            "predicted_s": mean("predicted_s"), "seconds": mean("seconds")}


def decode_peer(peer: Peer, prompt_ids: Sequence[int], params: SamplingParams) -> Sample:
    started = time.perf_counter()
    tokens = list(peer.generate(prompt_ids, params))
    return Sample(tokens, time.perf_counter() - started)


def _warm_up(generator, drafter, runs, peers, prompt: BenchPrompt, config: BenchConfig) -> None:
    """One tiny decode per run and peer, so one-time costs do not land on the first prompt."""
    ids, params = prompt.ids[:16], config.params(max_new_tokens=2)
    for run in runs:
        decode_run(generator, drafter, run, ids, params)
    for peer in peers:
        decode_peer(peer, ids, params)


# ---- entropy -------------------------------------------------------------------------------------
@torch.inference_mode()
def next_token_logits(model, prompt_ids: Sequence[int], outputs: Sequence[Sequence[int]]) -> Iterator[torch.Tensor]:
    """Per output sequence, logits [n+1, V]: row g is the target's plain prediction of generated
    token g (row n: what follows the output). The prompt is prefilled once for all sequences."""
    cache = model.new_cache(len(prompt_ids) + max((len(o) for o in outputs), default=0) + 1)
    first = prefill(model, prompt_ids, cache).logits[0, -1:]                     # [1, V]
    for tokens in outputs:   # never committed: every sequence continues the same prompt
        rest = model(torch.tensor([list(tokens)], device=cache.k.device), cache).logits[0] if tokens else first[:0]
        yield torch.cat([first, rest])                                           # [n+1, V]


def entropy(logits: torch.Tensor) -> list[float]:
    """Entropy in nats of softmax(logits) per row (temperature 1, no penalties)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return (-(logp.exp() * logp).sum(-1)).tolist()


def next_token_entropies(model, prompt_ids: Sequence[int], outputs: Sequence[Sequence[int]]) -> list[list[float]]:
    """Per output sequence: the entropy of each row of ``next_token_logits``."""
    return [entropy(logits) for logits in next_token_logits(model, prompt_ids, outputs)]


def round_roots(accepted_lengths: Sequence[int]) -> list[int]:
    """Index of the generated token each speculative round predicts first (token 0 comes from prefill)."""
    roots, position = [], 1
    for accepted in accepted_lengths:
        roots.append(position)
        position += accepted + 1
    return roots


def quartile_edges(values: Sequence[float]) -> list[float] | None:
    if len(values) < 4:
        return None
    return [float(q) for q in statistics.quantiles(values, n=4, method="inclusive")]


def quartile_of(value: float, edges: Sequence[float]) -> int:
    return sum(value > edge for edge in edges)


# ---- aggregation ---------------------------------------------------------------------------------
def _spread(values: Sequence[float]) -> dict:
    if not values:
        return {"median": None, "mean": None}
    return {"median": statistics.median(values), "mean": statistics.fmean(values)}


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def tau_of(accepted_lengths: Sequence[int]) -> float | None:
    """Mean tokens per verification round: accepted draft tokens + 1 bonus token."""
    return _ratio(sum(a + 1 for a in accepted_lengths), len(accepted_lengths))


def hit_rates(stats: Sequence[DecodeStats]) -> tuple[list[float | None], list[float | None]]:
    """Per draft position d (1-based at index d-1), pooled over prompts.

    hit_rate[d]: rounds that accepted position d / rounds whose tree reached depth d.
    conditional[d]: rounds that accepted position d / rounds that accepted d-1 (all rounds for d=1).
    """
    depth = max((len(s.depth_attempts) for s in stats), default=0)
    attempts = [sum(s.depth_attempts[d] for s in stats if d < len(s.depth_attempts)) for d in range(depth)]
    accepts = [sum(s.depth_accepts[d] for s in stats if d < len(s.depth_accepts)) for d in range(depth)]
    rounds = sum(len(s.accepted_lengths) for s in stats)
    hit = [_ratio(a, n) for a, n in zip(accepts, attempts)]
    conditional = [_ratio(a, prev) for a, prev in zip(accepts, [rounds] + accepts[:-1])]
    return hit, conditional


def tau_by_quartile(stats: Sequence[DecodeStats], entropies: Sequence[Sequence[float]],
                    edges: Sequence[float] | None) -> list[dict]:
    """tau and round count per entropy quartile; rounds whose root lies past the output are skipped."""
    buckets: list[list[int]] = [[], [], [], []]
    if edges is not None:
        for s, ent in zip(stats, entropies):
            for root, accepted in zip(round_roots(s.accepted_lengths), s.accepted_lengths):
                if root < len(ent):
                    buckets[quartile_of(ent[root], edges)].append(accepted)
    return [{"quartile": q + 1, "rounds": len(b), "tau": tau_of(b)} for q, b in enumerate(buckets)]


def _throughput(samples: Sequence[Sample]) -> float:
    return _ratio(sum(len(s.tokens) for s in samples), sum(s.latency_s for s in samples)) or 0.0


def timing_summary(samples: Sequence[Sample], reference_tps: float | None) -> dict:
    tps = [len(s.tokens) / s.latency_s for s in samples if s.latency_s > 0]
    throughput = _throughput(samples)
    return {"new_tokens": sum(len(s.tokens) for s in samples),
            "tokens_per_s": _spread(tps), "latency_s": _spread([s.latency_s for s in samples]),
            "throughput_tokens_per_s": throughput,
            "speedup": _ratio(throughput, reference_tps) if reference_tps else None,
            "per_prompt": [{"latency_s": s.latency_s, "new_tokens": len(s.tokens)} for s in samples]}


def lossless_check(samples: Sequence[Sample], reference: Sequence[Sample], greedy: bool) -> dict:
    """Greedy runs must reproduce the reference exactly; sampled runs are not comparable."""
    if not greedy:
        return {"lossless": None, "mismatched_prompts": []}
    mismatched = [i for i, (s, r) in enumerate(zip(samples, reference)) if s.tokens != r.tokens]
    return {"lossless": not mismatched, "mismatched_prompts": mismatched}


def summarize_run(run: RunSpec, samples, reference, prompts, entropies, edges, config) -> dict:
    stats = [s.stats for s in samples]
    rounds = [a for s in stats for a in s.accepted_lengths]
    tasks = sorted({p.task for p in prompts})
    hit, conditional = hit_rates(stats) if run.mode != "none" else ([], [])
    out = {"mode": run.mode, "budget": run.budget,
           "tree": None if run.tree is None else {"budget": run.tree.budget, "max_depth": run.tree.max_depth,
                                                  "top_k": run.tree.top_k},
           **timing_summary(samples, _throughput(reference)),
           "prefill_s": _spread([s.prefill_s for s in stats]),
           "draft_s": sum(s.draft_s for s in stats), "verify_s": sum(s.verify_s for s in stats),
           "target_forwards": sum(s.target_forwards for s in stats), "rounds": len(rounds),
           **lossless_check(samples, reference, config.temperature == 0)}
    for entry, s in zip(out["per_prompt"], stats):
        entry["tau"] = 1.0 if run.mode == "none" else tau_of(s.accepted_lengths)
    if run.mode == "none":
        out.update(tau=1.0, tau_by_task={t: 1.0 for t in tasks}, hit_rate=[], conditional_hit_rate=[],
                   tau_by_entropy_quartile=[])
        return out
    by_task = {t: tau_of([a for s, p in zip(stats, prompts) if p.task == t for a in s.accepted_lengths])
               for t in tasks}
    out.update(tau=tau_of(rounds), tau_by_task=by_task, hit_rate=hit, conditional_hit_rate=conditional,
               tau_by_entropy_quartile=tau_by_quartile(stats, entropies, edges))
    if run.mode == "harness":
        out["harness"] = harness_summary(stats)
    return out


def compare_tree_chain(runs: dict[str, dict], budgets: Sequence[int]) -> list[dict]:
    """Tree vs chain at each budget where both ran."""
    rows = []
    for b in budgets:
        chain, tree = runs.get(f"chain@{b}"), runs.get(f"tree@{b}")
        if chain is None or tree is None:
            continue
        gain = _ratio(tree["tau"], chain["tau"]) if tree["tau"] and chain["tau"] else None
        rows.append({"budget": b, "chain_tau": chain["tau"], "tree_tau": tree["tau"],
                     "tree_tau_gain": None if gain is None else gain - 1.0,
                     "chain_speedup": chain["speedup"], "tree_speedup": tree["speedup"],
                     "chain_first_hit": (chain["hit_rate"] or [None])[0],
                     "tree_first_hit": (tree["hit_rate"] or [None])[0]})
    return rows


def budget_scaling(runs: dict[str, dict]) -> dict[str, list[dict]]:
    """Per speculative mode: tau, tokens/s and speedup by budget."""
    out: dict[str, list[dict]] = {}
    for run in runs.values():
        if run["budget"] is not None:
            out.setdefault(run["mode"], []).append(
                {"budget": run["budget"], "tau": run["tau"], "speedup": run["speedup"],
                 "tokens_per_s": run["tokens_per_s"]["median"]})
    return {mode: sorted(rows, key=lambda r: r["budget"]) for mode, rows in out.items()}


# ---- machine -------------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (ru_maxrss: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if platform.system() == "Darwin" else peak / 1024


def machine_info(model) -> dict:
    from .device import cpu_has_fast_bf16

    device = model.lm_head.weight.device
    info = {"cpu_model": _cpu_model(), "cpu_count": os.cpu_count(), "torch_version": torch.__version__,
            "torch_threads": torch.get_num_threads(), "dtype": str(model.dtype).removeprefix("torch."),
            "device": str(device), "fast_bf16": cpu_has_fast_bf16(), "python": platform.python_version(),
            "platform": platform.platform()}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


# ---- the benchmark -------------------------------------------------------------------------------
def _rotated(items: list, shift: int) -> list:
    shift %= max(len(items), 1)
    return items[shift:] + items[:shift]


def measure(generator: Generator, drafter: Drafter | None, runs: Sequence[RunSpec], peers: Sequence[Peer],
            prompts: Sequence[BenchPrompt], params: SamplingParams,
            say: Callable[[str], None]) -> dict[str, list[Sample]]:
    """Decode every prompt with every run and peer; the order rotates from prompt to prompt."""
    jobs = [("run", r) for r in runs] + [("peer", p) for p in peers]
    samples: dict[str, list[Sample]] = {job.name: [] for _, job in jobs}
    for i, prompt in enumerate(prompts):
        for kind, job in _rotated(jobs, i):
            say(f"prompt {i + 1}/{len(prompts)}: {job.name}")
            if kind == "run":
                with generator.lock:   # the engine's cache and drafter: one decode at a time
                    samples[job.name].append(decode_run(generator, drafter, job, prompt.ids, params))
            else:
                samples[job.name].append(decode_peer(job, prompt.ids, params))
    return samples


def run_bench(generator: Generator, drafter: Drafter | None, prompts: Sequence[BenchPrompt],
              config: BenchConfig, *, peers: Sequence[Peer] = (),
              progress: Callable[[str], None] | None = None) -> dict:
    """Measure every run and peer on ``prompts``; return the report (docs/bench.md)."""
    if not prompts:
        raise BenchError("no prompts to benchmark")
    runs = build_runs(config)
    if drafter is None and len(runs) > 1:
        raise BenchError("speculative modes need a drafter")
    say = progress or (lambda message: None)
    runs = [_with_harness(run, generator.model, drafter, say) for run in runs]
    rss_loaded = peak_rss_mib()
    if config.warmup:
        say("warming up")
        _warm_up(generator, drafter, runs, peers, prompts[0], config)
    if config.concurrency > 1:
        from .bench_batch import measure_batched

        samples = measure_batched(generator, drafter, runs, peers, prompts, config.params(), config.concurrency, say)
    else:
        samples = measure(generator, drafter, runs, peers, prompts, config.params(), say)
    say("entropy pass")
    reference = samples["none"]
    entropies = _entropies(generator.model, prompts, samples, runs)
    edges = quartile_edges([e for i, r in enumerate(reference) for e in entropies[i][tuple(r.tokens)][:-1]])
    run_reports = {run.name: summarize_run(run, samples[run.name], reference, prompts,
                                           [entropies[i][tuple(s.tokens)] for i, s in enumerate(samples[run.name])],
                                           edges, config)
                   for run in runs}
    return {
        "schema_version": SCHEMA_VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(generator.model),
        "settings": _settings(config, runs, len(prompts)),
        "runs": run_reports,
        "peers": {p.name: _peer_report(samples[p.name], reference) for p in peers},
        "tree_vs_chain": compare_tree_chain(run_reports, config.budgets),
        "budget_scaling": budget_scaling(run_reports),
        "entropy": {"method": ENTROPY_METHOD, "quartile_edges": edges},
        "prompts": [_prompt_report(generator, p, s) for p, s in zip(prompts, reference)],
        "memory": _memory(rss_loaded, generator.model),
        "warnings": [], "notes": [],
    }


def _entropies(model, prompts, samples, runs) -> list[dict[tuple, list[float]]]:
    """Per prompt: distinct output tuple -> next-token entropies (see next_token_entropies)."""
    out = []
    for i, prompt in enumerate(prompts):
        distinct = list(dict.fromkeys(tuple(samples[r.name][i].tokens) for r in runs))
        out.append(dict(zip(distinct, next_token_entropies(model, prompt.ids, distinct))))
    return out


def _memory(rss_loaded: float, model) -> dict:
    memory = {"rss_after_load_mib": rss_loaded, "peak_rss_mib": peak_rss_mib(),
              "note": "process-wide peak (getrusage maxrss): includes every run and peer"}
    device = model.lm_head.weight.device
    if device.type == "cuda":
        memory["cuda_peak_allocated_mib"] = torch.cuda.max_memory_allocated(device) / (1 << 20)
    return memory


def _settings(config: BenchConfig, runs: Sequence[RunSpec], num_prompts: int) -> dict:
    return {"max_new_tokens": config.max_new_tokens, "temperature": config.temperature,
            "repetition_penalty": config.repetition_penalty, "seed": config.seed,
            "budgets": list(config.budgets), "modes": list(config.modes), "runs": [r.name for r in runs],
            "concurrency": config.concurrency, "tree_max_depth": config.tree_max_depth,
            "tree_top_k": config.tree_top_k, "warmup": config.warmup, "num_prompts": num_prompts}


def _peer_report(samples: Sequence[Sample], reference: Sequence[Sample]) -> dict:
    same = sum(s.tokens == r.tokens for s, r in zip(samples, reference))
    return {"available": True, **timing_summary(samples, _throughput(reference)),
            "same_output_as_engine": same / len(samples) if samples else None}


def _prompt_report(generator: Generator, prompt: BenchPrompt, reference: Sample) -> dict:
    return {"label": prompt.label, "task": prompt.task, "prompt_tokens": len(prompt.ids),
            "new_tokens": len(reference.tokens), "finish_reason": reference.stats.finish_reason,
            "reference_output": generator.tokenizer.decode(reference.tokens)}
