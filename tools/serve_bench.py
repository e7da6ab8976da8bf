"""Load a running ``promptx serve`` with /v1/enhance requests at several concurrencies.

    promptx serve --port 8000 &
    python tools/serve_bench.py --url http://127.0.0.1:8000 --requests 64 --concurrency 1,4,8

Prints one markdown row per concurrency: requests/s, generated tokens/s, p50/p95 latency,
errors and lost requests (a 200 whose ``original_prompt`` is not the request's counts as
lost), and the speed-up over the first concurrency. Prompts cycle through
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


def one(client: httpx.Client, url: str, prompt: str, args) -> dict:
    body = {"prompt": prompt, "target": args.target, "seed": 0}
    if args.max_new_tokens:
        body["max_new_tokens"] = args.max_new_tokens
    started = time.perf_counter()
    try:
        answer = client.post(url + "/v1/enhance", json=body, timeout=args.timeout)
    except httpx.HTTPError as exc:
        return {"ok": False, "lost": False, "error": str(exc), "s": time.perf_counter() - started, "tokens": 0}
    seconds = time.perf_counter() - started
    if answer.status_code != 200:
        return {"ok": False, "lost": False, "error": f"{answer.status_code} {answer.text[:120]}", "s": seconds,
                "tokens": 0}
    result = answer.json()
    return {"ok": True, "lost": result["original_prompt"] != " ".join(prompt.split()), "s": seconds,
            "tokens": result["stats"]["completion_tokens"]}


def run_level(url: str, prompts: list[str], concurrency: int, args) -> dict:
    work = [prompts[i % len(prompts)] for i in range(args.requests)]
    started = time.perf_counter()
    with httpx.Client() as client, ThreadPoolExecutor(concurrency) as pool:
        rows = list(pool.map(lambda p: one(client, url, p, args), work))
    wall = time.perf_counter() - started
    latencies = sorted(r["s"] for r in rows if r["ok"])
    errors = [r["error"] for r in rows if not r["ok"]]
    return {"concurrency": concurrency, "requests": len(rows), "wall_s": round(wall, 2),
            "requests_per_s": round(len(latencies) / wall, 3),
            "tokens_per_s": round(sum(r["tokens"] for r in rows) / wall, 2),
            "p50_s": round(statistics.median(latencies), 2) if latencies else None,
            "p95_s": round(latencies[max(0, int(0.95 * len(latencies)) - 1)], 2) if latencies else None,
            "errors": len(errors), "lost": sum(r["lost"] for r in rows), "first_error": errors[0] if errors else None}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--concurrency", default="1,4,8")
    parser.add_argument("--prompts", type=Path, default=ROOT / "examples" / "prompts.txt")
    parser.add_argument("--target", default="image")
    parser.add_argument("--max-new-tokens", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--json", type=Path, help="Also write the rows here.")
    args = parser.parse_args(argv)
    prompts = [line.strip() for line in args.prompts.read_text(encoding="utf-8").splitlines() if line.strip()]
    levels = [int(c) for c in args.concurrency.split(",")]
    rows = []
    print("| concurrency | requests | wall s | req/s | tokens/s | p50 s | p95 s | errors | lost | vs first |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for level in levels:
        row = run_level(args.url, prompts, level, args)
        row["speedup"] = round(row["requests_per_s"] / rows[0]["requests_per_s"], 2) if rows else 1.0
        rows.append(row)
        print(f"| {level} | {row['requests']} | {row['wall_s']} | {row['requests_per_s']} | {row['tokens_per_s']} | "
              f"{row['p50_s']} | {row['p95_s']} | {row['errors']} | {row['lost']} | {row['speedup']}x |", flush=True)
        if row["first_error"]:
            print(f"first error: {row['first_error']}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0 if all(r["errors"] == 0 and r["lost"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
