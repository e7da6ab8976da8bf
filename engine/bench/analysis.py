"""Aggregation of benchmark samples: tau, hit rates, entropy quartiles, timing, losslessness.

Entropy method: ``decode_speculative`` does not expose its verify logits, so
after decoding, each distinct output sequence is run once more through the
target in a plain forward pass (prompt, then the generated tokens); a round's
entropy is the entropy (nats, temperature 1, no penalties) of the target's
next-token distribution at the round's root, i.e. the distribution that
predicts the round's first new token. Quartile edges come from every
generated position of the ``none`` run, pooled over prompts.

Not here: decoding (``engine.bench.runs``), the report's layout (``engine.bench.report``).
"""

from __future__ import annotations

import statistics
from typing import Iterator, Sequence

import torch

from ..decode.autoregressive import prefill
from ..decode.stats import DecodeStats
from .runs import RunSpec, Sample

ENTROPY_METHOD = (
    "plain target forward over each distinct output (the verify logits are not exposed); "
    "a round's entropy is the entropy at its root (the distribution of its first new token); "
    "quartile edges from every generated position of the none run"
)


# ---- harness -------------------------------------------------------------------------------------
def harness_summary(stats: Sequence[DecodeStats]) -> dict:
    """What the harness chose: tree sizes and depths, predicted vs observed acceptance over its
    drafted rounds, how many tokens it decoded in plain steps instead, and its copy rounds
    (a copy draft verified without the drafter: ``engine.speculative.copy_draft``)."""
    every = [r for s in stats for r in s.rounds]
    copies = [r for r in every if r.get("copy")]
    rounds = [r for r in every if not r.get("plain") and not r.get("copy")]
    plain = sum(1 for r in every if r.get("plain"))
    out: dict = {"rounds": len(rounds), "plain_steps": plain}
    if copies:
        out["copy_rounds"] = len(copies)
        out["copy_accepted"] = round(sum(r["accepted"] for r in copies) / len(copies), 3)
    if not rounds:
        return out
    mean = lambda key: round(sum(r[key] for r in rounds) / len(rounds), 3)  # noqa: E731
    return {
        **out,
        "mean_nodes": mean("nodes"),
        "mean_depth": mean("depth"),
        "max_nodes": max(r["nodes"] for r in rounds),
        "plain_rounds": sum(r["nodes"] == 0 for r in rounds),
        "predicted_accepted": mean("predicted_accepted"),
        "accepted": mean("accepted"),
        "predicted_s": mean("predicted_s"),
        "seconds": mean("seconds"),
    }


# ---- entropy -------------------------------------------------------------------------------------
@torch.inference_mode()
def next_token_logits(
    model, prompt_ids: Sequence[int], outputs: Sequence[Sequence[int]]
) -> Iterator[torch.Tensor]:
    """Per output sequence, logits [n+1, V]: row g is the target's plain prediction of generated
    token g (row n: what follows the output). The prompt is prefilled once for all sequences."""
    cache = model.new_cache(len(prompt_ids) + max((len(o) for o in outputs), default=0) + 1)
    first = prefill(model, prompt_ids, cache).logits[0, -1:]  # [1, V]
    for tokens in outputs:  # never committed: every sequence continues the same prompt
        rest = (
            model(torch.tensor([list(tokens)], device=cache.k.device), cache).logits[0]
            if tokens
            else first[:0]
        )
        yield torch.cat([first, rest])  # [n+1, V]


def entropy(logits: torch.Tensor) -> list[float]:
    """Entropy in nats of softmax(logits) per row (temperature 1, no penalties)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return (-(logp.exp() * logp).sum(-1)).tolist()


def next_token_entropies(
    model, prompt_ids: Sequence[int], outputs: Sequence[Sequence[int]]
) -> list[list[float]]:
    """Per output sequence: the entropy of each row of ``next_token_logits``."""
    return [entropy(logits) for logits in next_token_logits(model, prompt_ids, outputs)]


def round_roots(accepted_lengths: Sequence[int]) -> list[int]:
    """Index of the generated token each speculative round predicts first (token 0 comes from
    prefill)."""
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
    attempts = [
        sum(s.depth_attempts[d] for s in stats if d < len(s.depth_attempts)) for d in range(depth)
    ]
    accepts = [
        sum(s.depth_accepts[d] for s in stats if d < len(s.depth_accepts)) for d in range(depth)
    ]
    rounds = sum(len(s.accepted_lengths) for s in stats)
    hit = [_ratio(a, n) for a, n in zip(accepts, attempts)]
    conditional = [_ratio(a, prev) for a, prev in zip(accepts, [rounds] + accepts[:-1])]
    return hit, conditional


def tau_by_quartile(
    stats: Sequence[DecodeStats],
    entropies: Sequence[Sequence[float]],
    edges: Sequence[float] | None,
) -> list[dict]:
    """tau and round count per entropy quartile; rounds whose root lies past the output are
    skipped."""
    buckets: list[list[int]] = [[], [], [], []]
    if edges is not None:
        for s, ent in zip(stats, entropies):
            for root, accepted in zip(round_roots(s.accepted_lengths), s.accepted_lengths):
                if root < len(ent):
                    buckets[quartile_of(ent[root], edges)].append(accepted)
    return [{"quartile": q + 1, "rounds": len(b), "tau": tau_of(b)} for q, b in enumerate(buckets)]


def _per_prompt_tps(samples: Sequence[Sample]) -> list[float]:
    """tokens / latency of each sample that took time."""
    return [len(s.tokens) / s.latency_s for s in samples if s.latency_s > 0]


def tokens_per_second(samples: Sequence[Sample]) -> float:
    return _ratio(sum(len(s.tokens) for s in samples), sum(s.latency_s for s in samples)) or 0.0


def decode_tokens_per_second(sample: Sample) -> float | None:
    """Tokens after the first over the time after the prefill (the first token comes from the
    prompt pass): decoding speed without the prompt; None when the decoder reports no prefill
    (promptx's runs: ``stats.prefill_s``; streaming peers: the time to their first token)."""
    prefill_s = sample.stats.prefill_s if sample.stats is not None else sample.first_token_s
    if prefill_s is None or len(sample.tokens) < 2:
        return None
    decoding = sample.latency_s - prefill_s
    return (len(sample.tokens) - 1) / decoding if decoding > 0 else None


def decode_speed_summary(samples: Sequence[Sample]) -> dict | None:
    """Median and mean of ``decode_tokens_per_second`` over the samples that report it (None if
    none)."""
    values = [v for v in map(decode_tokens_per_second, samples) if v is not None]
    return _spread(values) if values else None


def timing_summary(samples: Sequence[Sample], reference_tps: float | None) -> dict:
    tps = _per_prompt_tps(samples)
    overall = tokens_per_second(samples)
    return {
        "new_tokens": sum(len(s.tokens) for s in samples),
        "tokens_per_s": _spread(tps),
        "latency_s": _spread([s.latency_s for s in samples]),
        "throughput_tokens_per_s": overall,
        "speedup": _ratio(overall, reference_tps) if reference_tps else None,
        "per_prompt": [{"latency_s": s.latency_s, "new_tokens": len(s.tokens)} for s in samples],
    }


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
    out = {
        "mode": run.mode,
        "budget": run.budget,
        "tree": None
        if run.tree is None
        else {"budget": run.tree.budget, "max_depth": run.tree.max_depth, "top_k": run.tree.top_k},
        **timing_summary(samples, tokens_per_second(reference)),
        "prefill_s": _spread([s.prefill_s for s in stats]),
        "decode_tokens_per_s": _spread(
            [v for v in map(decode_tokens_per_second, samples) if v is not None]
        ),
        "draft_s": sum(s.draft_s for s in stats),
        "verify_s": sum(s.verify_s for s in stats),
        "target_forwards": sum(s.target_forwards for s in stats),
        "rounds": len(rounds),
        **lossless_check(samples, reference, config.temperature == 0),
    }
    out["tokens_per_s_by_task"] = {
        t: _spread(_per_prompt_tps([s for s, p in zip(samples, prompts) if p.task == t]))["median"]
        for t in tasks
    }
    for entry, s in zip(out["per_prompt"], stats):
        entry["tau"] = 1.0 if run.mode == "none" else tau_of(s.accepted_lengths)
    if run.mode == "none":
        out.update(
            tau=1.0,
            tau_by_task={t: 1.0 for t in tasks},
            hit_rate=[],
            conditional_hit_rate=[],
            tau_by_entropy_quartile=[],
        )
        return out
    by_task = {
        t: tau_of([a for s, p in zip(stats, prompts) if p.task == t for a in s.accepted_lengths])
        for t in tasks
    }
    out.update(
        tau=tau_of(rounds),
        tau_by_task=by_task,
        hit_rate=hit,
        conditional_hit_rate=conditional,
        tau_by_entropy_quartile=tau_by_quartile(stats, entropies, edges),
    )
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
        rows.append(
            {
                "budget": b,
                "chain_tau": chain["tau"],
                "tree_tau": tree["tau"],
                "tree_tau_gain": None if gain is None else gain - 1.0,
                "chain_speedup": chain["speedup"],
                "tree_speedup": tree["speedup"],
                "chain_first_hit": (chain["hit_rate"] or [None])[0],
                "tree_first_hit": (tree["hit_rate"] or [None])[0],
            }
        )
    return rows


def budget_scaling(runs: dict[str, dict]) -> dict[str, list[dict]]:
    """Per speculative mode: tau, tokens/s and speedup by budget."""
    out: dict[str, list[dict]] = {}
    for run in runs.values():
        if run["budget"] is not None:
            out.setdefault(run["mode"], []).append(
                {
                    "budget": run["budget"],
                    "tau": run["tau"],
                    "speedup": run["speedup"],
                    "tokens_per_s": run["tokens_per_s"]["median"],
                }
            )
    return {mode: sorted(rows, key=lambda r: r["budget"]) for mode, rows in out.items()}
