"""The benchmark: decode the same tokenized prompts with every decoding mode and peer, side by side.

``run_bench(generator, drafter, prompts, config, peers=...)`` returns one
JSON-able report (schema: docs/bench.md). Per prompt it runs every *run*
(``none``; ``chain@B`` and ``tree@B`` for each budget B; ``harness`` when the
engine has one) and every peer, rotating their order from prompt to prompt to
spread machine noise. It measures latency and tokens/s, tau, the hit rate per
position along the accepted path, tau per task and per quartile of the
target's next-token entropy, and checks that greedy speculative output equals
the plain output token for token (``lossless``).

Modules: ``runs`` (settings, runs, one timed decode), ``batched`` (C prompts per
pass), ``peers`` (other engines), ``peer_process`` (each peer in its own process),
``sample`` (one timed decode), ``analysis`` (aggregation), ``machine``,
``report`` (``run_bench``). The bench uses the engine through its public names
only; nothing in the engine imports it.

Not here: prompt files, templates, tokenization (promptx.cli.bench), plots.
"""

from .analysis import (
    ENTROPY_METHOD,
    budget_scaling,
    compare_tree_chain,
    entropy,
    harness_summary,
    hit_rates,
    lossless_check,
    next_token_entropies,
    next_token_logits,
    quartile_edges,
    quartile_of,
    round_roots,
    tau_by_quartile,
    tau_of,
    timing_summary,
)
from .machine import machine_info, peak_rss_mib
from .peer_process import PeerCrashed, PeerProcess, close_peers, make_peers
from .peers import PEERS, Peer, PeerError, PeerSpec, PeerUnavailable, make_peer
from .report import measure, run_bench
from .runs import (
    CONCURRENCY_NOTE,
    MAX_CONCURRENCY,
    MODES,
    SCHEMA_VERSION,
    BenchConfig,
    BenchError,
    BenchPrompt,
    RunSpec,
    Sample,
    build_runs,
    decode_run,
    random_drafter,
)

__all__ = [
    "BenchConfig",
    "BenchError",
    "BenchPrompt",
    "CONCURRENCY_NOTE",
    "ENTROPY_METHOD",
    "MAX_CONCURRENCY",
    "MODES",
    "PEERS",
    "Peer",
    "PeerCrashed",
    "PeerError",
    "PeerProcess",
    "PeerSpec",
    "PeerUnavailable",
    "RunSpec",
    "SCHEMA_VERSION",
    "Sample",
    "budget_scaling",
    "build_runs",
    "close_peers",
    "compare_tree_chain",
    "decode_run",
    "entropy",
    "harness_summary",
    "hit_rates",
    "lossless_check",
    "machine_info",
    "make_peer",
    "make_peers",
    "measure",
    "next_token_entropies",
    "next_token_logits",
    "peak_rss_mib",
    "quartile_edges",
    "quartile_of",
    "random_drafter",
    "round_roots",
    "run_bench",
    "tau_by_quartile",
    "tau_of",
    "timing_summary",
]
