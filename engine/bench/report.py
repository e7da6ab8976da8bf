"""The benchmark: every run and peer on the same prompts, side by side, in one report.

Not here: the runs themselves (``engine.bench.runs``), aggregation (``engine.bench.analysis``).
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import torch

from ..decode.sampling import SamplingParams
from ..generator import Generator
from ..speculative.drafter import Drafter
from .analysis import (
    ENTROPY_METHOD,
    budget_scaling,
    compare_tree_chain,
    decode_speed_summary,
    next_token_entropies,
    quartile_edges,
    summarize_run,
    timing_summary,
    tokens_per_second,
)
from .machine import machine_info, peak_rss_mib
from .peer_process import PeerProcess
from .peers import Peer
from .runs import (
    SCHEMA_VERSION,
    BenchConfig,
    BenchError,
    BenchPrompt,
    RunSpec,
    Sample,
    build_runs,
    decode_run,
    rotated,
    warm_up,
    with_harness,
)


def measure(
    generator: Generator,
    drafter: Drafter | None,
    runs: Sequence[RunSpec],
    peers: Sequence[Peer | PeerProcess],
    prompts: Sequence[BenchPrompt],
    params: SamplingParams,
    say: Callable[[str], None],
) -> dict[str, list[Sample]]:
    """Decode every prompt with every run and peer; the order rotates from prompt to prompt."""
    jobs = [("run", r) for r in runs] + [("peer", p) for p in peers]
    samples: dict[str, list[Sample]] = {job.name: [] for _, job in jobs}
    for i, prompt in enumerate(prompts):
        for kind, job in rotated(jobs, i):
            say(f"prompt {i + 1}/{len(prompts)}: {job.name}")
            if kind == "run":
                with generator.lock:  # the engine's cache and drafter: one decode at a time
                    samples[job.name].append(
                        decode_run(generator, drafter, job, prompt.ids, params)
                    )
            elif (sample := job.decode(prompt.ids, params)) is not None:  # None: crashed (reported)
                samples[job.name].append(sample)
    return samples


def run_bench(
    generator: Generator,
    drafter: Drafter | None,
    prompts: Sequence[BenchPrompt],
    config: BenchConfig,
    *,
    peers: Sequence[Peer | PeerProcess] = (),
    progress: Callable[[str], None] | None = None,
    copies: object | None = None,
) -> dict:
    """Measure every run and peer on ``prompts``; return the report (docs/bench.md). ``copies``:
    the ``CopyDrafter`` the ``harness`` run prices copy drafts from (None: without them)."""
    if not prompts:
        raise BenchError("no prompts to benchmark")
    runs = build_runs(config)
    if drafter is None and len(runs) > 1:
        raise BenchError("speculative modes need a drafter")
    say = progress or (lambda message: None)
    runs = [with_harness(run, generator.model, drafter, say, copies) for run in runs]
    rss_loaded = peak_rss_mib()
    if config.warmup:
        say("warming up")
        warm_up(generator, drafter, runs, peers, prompts[0], config)
    if config.concurrency > 1:
        from .batched import measure_batched

        samples = measure_batched(
            generator, drafter, runs, peers, prompts, config.params(), config.concurrency, say
        )
    else:
        samples = measure(generator, drafter, runs, peers, prompts, config.params(), say)
    say("entropy pass")
    reference = samples["none"]
    entropies = _entropies(generator.model, prompts, samples, runs)
    edges = quartile_edges(
        [e for i, r in enumerate(reference) for e in entropies[i][tuple(r.tokens)][:-1]]
    )
    run_reports = {
        run.name: summarize_run(
            run,
            samples[run.name],
            reference,
            prompts,
            [entropies[i][tuple(s.tokens)] for i, s in enumerate(samples[run.name])],
            edges,
            config,
        )
        for run in runs
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(generator.model),
        "settings": {**_settings(config, runs, len(prompts)), "copy_drafts": copies is not None},
        "runs": run_reports,
        "peers": {
            p.name: _peer_report(samples[p.name], reference)
            if p.crashed is None
            else {"available": False, "skipped": f"crashed: {p.crashed}"}
            for p in peers
        },
        "tree_vs_chain": compare_tree_chain(run_reports, config.budgets),
        "budget_scaling": budget_scaling(run_reports),
        "entropy": {"method": ENTROPY_METHOD, "quartile_edges": edges},
        "prompts": [_prompt_report(generator, p, s) for p, s in zip(prompts, reference)],
        "memory": _memory(rss_loaded, generator.model),
        "warnings": [],
        "notes": [],
    }


def _entropies(model, prompts, samples, runs) -> list[dict[tuple, list[float]]]:
    """Per prompt: distinct output tuple -> next-token entropies (see next_token_entropies)."""
    out = []
    for i, prompt in enumerate(prompts):
        distinct = list(dict.fromkeys(tuple(samples[r.name][i].tokens) for r in runs))
        out.append(dict(zip(distinct, next_token_entropies(model, prompt.ids, distinct))))
    return out


def _memory(rss_loaded: float, model) -> dict:
    memory = {
        "rss_after_load_mib": rss_loaded,
        "peak_rss_mib": peak_rss_mib(),
        "note": "process-wide peak (getrusage maxrss): every run; peers run in their own processes",
    }
    device = model.lm_head.weight.device
    if device.type == "cuda":
        memory["cuda_peak_allocated_mib"] = torch.cuda.max_memory_allocated(device) / (1 << 20)
    return memory


def _settings(config: BenchConfig, runs: Sequence[RunSpec], num_prompts: int) -> dict:
    return {
        "max_new_tokens": config.max_new_tokens,
        "temperature": config.temperature,
        "repetition_penalty": config.repetition_penalty,
        "seed": config.seed,
        "budgets": list(config.budgets),
        "modes": list(config.modes),
        "runs": [r.name for r in runs],
        "concurrency": config.concurrency,
        "tree_max_depth": config.tree_max_depth,
        "tree_top_k": config.tree_top_k,
        "warmup": config.warmup,
        "num_prompts": num_prompts,
    }


def _peer_report(samples: Sequence[Sample], reference: Sequence[Sample]) -> dict:
    same = sum(s.tokens == r.tokens for s, r in zip(samples, reference))
    return {
        "available": True,
        **timing_summary(samples, tokens_per_second(reference)),
        "decode_tokens_per_s": decode_speed_summary(samples),
        "same_output_as_engine": same / len(samples) if samples else None,
    }


def _prompt_report(generator: Generator, prompt: BenchPrompt, reference: Sample) -> dict:
    return {
        "label": prompt.label,
        "task": prompt.task,
        "prompt_tokens": len(prompt.ids),
        "new_tokens": len(reference.tokens),
        "finish_reason": reference.stats.finish_reason,
        "reference_output": generator.tokenizer.decode(reference.tokens),
    }
