"""``promptx bench --latency``: what one warm ``enhance`` call costs, stage by stage, and llama.cpp
beside it.

The command side of ``promptx.latency``: it loads one ``Enhancer`` (the model once),
starts llama.cpp in its own process (``engine.bench.make_peers``, decoding through EOS
so that it generates as many tokens as promptx did, and keeping its prompt prefix where
promptx keeps one), measures the prompts, and writes the report: a markdown summary on
stdout and, with ``--out DIR``, ``bench.json`` (``"mode": "latency"``, fields in
docs/bench.md) and ``summary.md``.

Not here: the timing itself (``promptx.latency``), the decoding benchmark (``promptx.cli.bench``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Sequence

from ..errors import InvalidInputError
from ..latency import LATENCY_SCHEMA_VERSION, STAGES, LatencyItem, measure_latency

DEFAULT_PROMPTS = 20
LATENCY_PEERS = ("llamacpp",)
STAGE_LABELS = {
    "render": "render (request, chat, tokens)",
    "batch_wait": "batch wait (gather window)",
    "constraint": "constraint (banned tokens)",
    "prefill": "prefill",
    "decode": "decode",
    "scoring": "scoring (phrases)",
    "cleanup": "clean-up and assessment",
    "other": "other",
}
PEER_LABELS = {"llamacpp": "llama.cpp"}
METHOD_NOTE = (
    "stages partition each call's wall time (each moment charged to the innermost stage "
    "running), so the stage means add up to the mean total; medians and p90s need not add up"
)


def latency_items(specs, target: str) -> list[LatencyItem]:
    """The prompts of a prompt file as enhance calls (Spec-Bench questions are not enhance
    prompts)."""
    if any(spec.raw_chat for spec in specs):
        raise InvalidInputError(
            "--latency times enhance calls: give promptx prompts (a text or JSONL file, or "
            "--suite enhance-400), not Spec-Bench questions"
        )
    return [
        LatencyItem(
            spec.text, spec.task or target, spec.caption, spec.image, spec.id or spec.source
        )
        for spec in specs
    ]


def run_latency_bench(
    specs,
    *,
    target: str,
    model: str | None,
    drafter: Path | None,
    dtype: str,
    device: str | None,
    strength: str,
    seed: int | None,
    max_new_tokens: int | None,
    temperature: float | None,
    warmup: bool,
    peer_names: Sequence[str],
    say: Callable[[str], None],
) -> dict:
    """Load the model once, time warm ``enhance`` calls on ``specs`` (with llama.cpp beside them
    when asked and available); return the report."""
    from engine.bench import close_peers, machine_info, make_peers
    from engine import progress_bar

    from ..enhancer import Enhancer
    from ..models import prepare

    items = latency_items(specs, target)
    say("loading the model")
    enhancer = Enhancer(
        model, dtype=dtype, device=device, drafter=drafter, quiet=True, strength=strength
    )
    backend = enhancer.backend
    generator = getattr(backend, "generator", None)
    if generator is None:
        raise InvalidInputError("--latency measures the embedded backend (the engine's statistics)")
    notes = [METHOD_NOTE]
    unsupported = [p for p in peer_names if p not in LATENCY_PEERS]
    notes += [
        f"peer {p} is not measured with --latency (only {', '.join(LATENCY_PEERS)})"
        for p in unsupported
    ]
    names = [p for p in peer_names if p in LATENCY_PEERS]
    keep_prefix = generator.prefixes is not None
    if names:
        say(f"starting peers in their own processes: {', '.join(names)}")
    peers, skipped = make_peers(
        names,
        generator,
        prepare(backend.source, quiet=True),
        backend.source.gguf,
        ignore_eos=True,
        keep_prefix=keep_prefix,
    )
    peer = peers[0] if peers else None
    notes += [p.note for p in peers if getattr(p, "note", None)]
    try:
        with progress_bar(
            len(items), enabled=len(items) > 1, desc="latency", unit="request"
        ) as bar:
            measured = measure_latency(
                enhancer,
                items,
                strength=strength,
                seed=seed,
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                warmup=warmup,
                peer=peer,
                progress=bar.update,
            )
    finally:
        close_peers(peers)
    comparison = measured.pop("comparison", None)
    if comparison is None and names:
        comparison = {"peer": names[0], "available": False, "skipped": skipped[names[0]]["skipped"]}
    if comparison is not None:
        comparison["label"] = PEER_LABELS.get(comparison["peer"], comparison["peer"])
        if comparison["available"]:
            notes.append(
                f"{comparison['label']} decoded each attempt's prompt ids to the same number of "
                f"new tokens (through EOS) on the model's GGUF file, "
                + (
                    "reusing the KV of the prompt prefix it shares with the previous prompt, "
                    "as promptx does here"
                    if keep_prefix
                    else "prefilling each prompt whole, as promptx does here"
                )
                + "; its seconds are prefill + decode only (no rendering, clean-up or assessment)"
            )
        else:
            notes.append(f"{comparison['label']} comparison unavailable: {comparison['skipped']}")
    if any(not r["engine_stats"] for r in measured["requests"]):
        notes.append(
            "a generation carried no engine statistics: its whole time is counted as decode"
        )
    source = backend.source
    return {
        "schema_version": LATENCY_SCHEMA_VERSION,
        "mode": "latency",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(generator.model),
        "settings": {
            "strength": strength,
            "num_prompts": len(items),
            "seed": seed,
            "max_new_tokens": max_new_tokens,
            "temperature": temperature,
            "warmup": warmup,
            "warmup_calls": measured.pop("warmup_calls"),
            "speculative": backend.has_drafter,
            "prefix_reuse": keep_prefix,
            "peers": list(names),
        },
        "model": {"name": source.name, "gguf": None if source.gguf is None else str(source.gguf)},
        **measured,
        "comparison": comparison,
        "warnings": [],
        "notes": notes,
    }


# ---- outputs -------------------------------------------------------------------------------------
def _fmt(value, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(r) + " |" for r in rows
    ]


def _med(summary: dict | None, key: str = "median", digits: int = 1) -> str:
    return "-" if summary is None else _fmt(float(summary[key]), digits)


def stage_table(latency: dict) -> list[str]:
    rows = [
        [STAGE_LABELS[s], _fmt(v["median_ms"]), _fmt(v["p90_ms"]), _fmt(v["mean_ms"])]
        for s, v in ((s, latency["stages"][s]) for s in STAGES)
    ]
    total = latency["total"]
    rows.append(
        ["**total**", _fmt(total["median_ms"]), _fmt(total["p90_ms"]), _fmt(total["mean_ms"])]
    )
    return _table(["stage", "median ms", "p90 ms", "mean ms"], rows)


def comparison_table(c: dict) -> list[str]:
    label = c["label"]
    rows = [
        [
            "end-to-end s",
            _med(c["promptx_total_s"], digits=3),
            _med(c["peer_seconds"], digits=3),
            _med(c["total_ratio"], digits=2),
            _med(c["total_ratio"], "p90", 2),
        ],
        [
            "model s (prefill + decode)",
            _med(c["promptx_model_s"], digits=3),
            _med(c["peer_seconds"], digits=3),
            _med(c["model_time_ratio"], digits=2),
            _med(c["model_time_ratio"], "p90", 2),
        ],
        [
            "decode tok/s",
            _med(c["promptx_decode_tokens_per_s"]),
            _med(c["peer_decode_tokens_per_s"]),
            _med(c["decode_tps_ratio"], digits=2),
            _med(c["decode_tps_ratio"], "p90", 2),
        ],
    ]
    return _table(
        [
            "per request (median)",
            "promptx",
            label,
            f"promptx / {label} (median)",
            f"promptx / {label} (p90)",
        ],
        rows,
    )


def latency_markdown(report: dict) -> str:
    """The latency report as markdown: the stage table, tokens, and the peer comparison."""
    m, s, lat = report["machine"], report["settings"], report["latency"]
    name = (report.get("model") or {}).get("name", "model")
    lines = [
        f"## promptx bench --latency: {name}, {m['dtype']}, {m['torch_threads']} threads, "
        f"{lat['requests']} warm enhance calls, strength {s['strength']}",
        "",
    ]
    lines += stage_table(lat)
    parts = lat["other_parts"]
    lines += [
        "",
        f"stage medians add up to {lat['stage_medians_sum_ms']:.1f} ms (median total "
        f"{lat['total']['median_ms']:.1f} ms); other: the backend around the engine's decode "
        f"{parts['backend']['median_ms']:.1f} ms, the enhancer's own "
        f"{parts['enhancer']['median_ms']:.1f} ms (medians); {s['warmup_calls']} warm-up call(s) "
        "not counted",
        "",
    ]
    lines += _table(
        ["per request", "median", "p90"],
        [
            [
                "generated tokens",
                _med(lat["new_tokens"], digits=0),
                _med(lat["new_tokens"], "p90", 0),
            ],
            [
                "prompt tokens",
                _med(lat["prompt_tokens"], digits=0),
                _med(lat["prompt_tokens"], "p90", 0),
            ],
            [
                "decode tok/s",
                _med(lat["decode_tokens_per_s"]),
                _med(lat["decode_tokens_per_s"], "p90"),
            ],
            [
                "tok/s of the whole call",
                _med(lat["tokens_per_s"]),
                _med(lat["tokens_per_s"], "p90"),
            ],
            [
                "tau (tokens per target pass)",
                _med(lat["acceptance_length"], digits=2),
                _med(lat["acceptance_length"], "p90", 2),
            ],
            ["attempts", _med(lat["attempts"], digits=0), _med(lat["attempts"], "p90", 0)],
            ["fallbacks (of all requests)", str(lat["fallbacks"]), ""],
        ],
    )
    c = report.get("comparison")
    if c is not None:
        lines += [
            "",
            f"### promptx vs {c['label']} (same prompt ids, same number of new tokens)",
            "",
        ]
        lines += (
            comparison_table(c)
            if c["available"]
            else [f"{c['label']}: unavailable ({c['skipped']})"]
        )
    lines += (
        [""]
        + [f"warning: {w}" for w in report["warnings"]]
        + [f"note: {n}" for n in report["notes"]]
    )
    return "\n".join(lines).rstrip() + "\n"


def write_latency_outputs(report: dict, out: Path | None) -> str:
    """bench.json and summary.md under ``out``; return the markdown summary."""
    if out is None:
        report["notes"].append("no --out DIR given: the JSON was not written")
        return latency_markdown(report)
    out.mkdir(parents=True, exist_ok=True)
    summary = latency_markdown(report)
    (out / "bench.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "summary.md").write_text(summary)
    return summary
