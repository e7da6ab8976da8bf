"""Load a running ``promptx serve`` with /v1/enhance requests at several concurrencies.

    promptx serve --port 8000 &
    python tools/serve_bench.py --url http://127.0.0.1:8000 --requests 64 --concurrency 1,4,8

Prints one markdown row per concurrency: requests/s, generated tokens/s, p50/p95 latency,
errors and lost requests (a 200 whose ``original_prompt`` is not the request's counts as
lost), the speed-up over the first concurrency, whether /health answered 200 after the
level, and the server's resident memory (``--server-pid``: the process and its children).
``--bad-every N`` sends a malformed request after every N good ones, interleaved with them:
each must get a 400 JSON error (else it counts as an error). Prompts cycle through
examples/prompts.txt (or --prompts). Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


BAD_BODIES = (
    {"prompt": "a cat", "seed": "7"},
    {"prompt": "a cat", "target": "nosuch"},
    {"prompt": 5},
    {"prompt": "a cat", "strength": "heavy"},
    {"prompt": "a cat", "colour": "red"},
)


def bad(client: httpx.Client, url: str, index: int, args) -> dict:
    """A malformed request: a 400 with the JSON error shape is the right answer."""
    started = time.perf_counter()
    try:
        answer = client.post(
            url + "/v1/enhance", json=BAD_BODIES[index % len(BAD_BODIES)], timeout=args.timeout
        )
        right = answer.status_code == 400 and "type" in answer.json().get("error", {})
    except (httpx.HTTPError, ValueError):
        right = False
    return {
        "ok": right,
        "bad": True,
        "lost": False,
        "s": time.perf_counter() - started,
        "tokens": 0,
        "error": None if right else "a bad request was not answered 400 with a JSON error",
    }


def one(client: httpx.Client, url: str, prompt: str, args) -> dict:
    body = {"prompt": prompt, "target": args.target, "seed": 0}
    if args.strength:
        body["strength"] = args.strength
    if args.max_new_tokens:
        body["max_new_tokens"] = args.max_new_tokens
    started = time.perf_counter()
    try:
        answer = client.post(url + "/v1/enhance", json=body, timeout=args.timeout)
    except httpx.HTTPError as exc:
        return {
            "ok": False,
            "lost": False,
            "error": str(exc),
            "s": time.perf_counter() - started,
            "tokens": 0,
        }
    seconds = time.perf_counter() - started
    if answer.status_code != 200:
        return {
            "ok": False,
            "lost": False,
            "error": f"{answer.status_code} {answer.text[:120]}",
            "s": seconds,
            "tokens": 0,
        }
    result = answer.json()
    return {
        "ok": True,
        "lost": result["original_prompt"] != " ".join(prompt.split()),
        "s": seconds,
        "tokens": result["stats"]["completion_tokens"],
    }


def run_level(url: str, prompts: list[str], concurrency: int, args) -> dict:
    work: list = [prompts[i % len(prompts)] for i in range(args.requests)]
    if args.bad_every:
        work = [
            item
            for i, p in enumerate(work)
            for item in ([p, i] if (i + 1) % args.bad_every == 0 else [p])
        ]
    started = time.perf_counter()
    with httpx.Client() as client, ThreadPoolExecutor(concurrency) as pool:
        rows = list(
            pool.map(
                lambda w: (
                    bad(client, url, w, args) if isinstance(w, int) else one(client, url, w, args)
                ),
                work,
            )
        )
    wall = time.perf_counter() - started
    errors = [r["error"] for r in rows if not r["ok"]]
    rows = [r for r in rows if not r.get("bad")]
    latencies = sorted(r["s"] for r in rows if r["ok"])
    return {
        "concurrency": concurrency,
        "requests": len(rows),
        "wall_s": round(wall, 2),
        "requests_per_s": round(len(latencies) / wall, 3),
        "tokens_per_s": round(sum(r["tokens"] for r in rows) / wall, 2),
        "p50_s": round(statistics.median(latencies), 2) if latencies else None,
        "p95_s": round(latencies[max(0, int(0.95 * len(latencies)) - 1)], 2) if latencies else None,
        "errors": len(errors),
        "lost": sum(r["lost"] for r in rows),
        "first_error": errors[0] if errors else None,
        "health": httpx.get(url + "/health", timeout=30).status_code,
        "rss_mib": rss_mib(args.server_pid) if args.server_pid else None,
    }


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and its child processes (the workers), MiB."""
    total, todo = 0, [pid]
    while todo:
        one_pid = todo.pop()
        try:
            status = Path(f"/proc/{one_pid}/status").read_text()
            children = Path(f"/proc/{one_pid}/task/{one_pid}/children").read_text().split()
        except OSError:
            continue
        total += next(
            int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")
        )
        todo += [int(c) for c in children]
    return round(total / 1024, 1)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--concurrency", default="1,4,8")
    parser.add_argument("--prompts", type=Path, default=ROOT / "examples" / "prompts.txt")
    parser.add_argument("--target", default="image")
    parser.add_argument("--max-new-tokens", type=int, default=None)
    parser.add_argument(
        "--strength", choices=("light", "medium", "full"), help="Default: the server's."
    )
    parser.add_argument(
        "--bad-every", type=int, default=0, help="A malformed request after every N good ones."
    )
    parser.add_argument("--server-pid", type=int, help="Report the server's resident memory.")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--json", type=Path, help="Also write the rows here.")
    args = parser.parse_args(argv)
    prompts = [
        line.strip()
        for line in args.prompts.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    levels = [int(c) for c in args.concurrency.split(",")]
    rows = []
    print(
        "| concurrency | requests | wall s | req/s | tokens/s | p50 s | p95 s | errors | lost | vs "
        "first | health | RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for level in levels:
        row = run_level(args.url, prompts, level, args)
        row["speedup"] = (
            round(row["requests_per_s"] / rows[0]["requests_per_s"], 2) if rows else 1.0
        )
        rows.append(row)
        print(
            f"| {level} | {row['requests']} | {row['wall_s']} | {row['requests_per_s']} | "
            f"{row['tokens_per_s']} | {row['p50_s']} | {row['p95_s']} | {row['errors']} | "
            f"{row['lost']} | {row['speedup']}x | {row['health']} | {row['rss_mib']} |",
            flush=True,
        )
        if row["first_error"]:
            print(f"first error: {row['first_error']}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0 if all(r["errors"] == 0 and r["lost"] == 0 and r["health"] == 200 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
