"""Build a copy-draft n-gram table from a target's own answers.

Reads drafter training data written by ``promptx draft generate-data`` (a folder of
``shard-*.jsonl`` records with ``input_ids`` and ``prefix_len``, and ``dataset.json`` naming
the target's fingerprint), counts the answers' n-grams and writes the table
(``engine.speculative.copy_draft.NgramTable``), e.g.:

    python tools/build_copy_table.py data/drafter/e3-selfdistill \\
        --out promptx/drafters/smollm2-135m-instruct/copy-table.bin.gz

The answers must come from the model as it is shipped (its adapter included): the table
predicts what that model writes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.speculative.copy_draft import MAX_ORDER, NgramTable  # noqa: E402


def answers(folder: Path):
    """Each record's answer tokens (after its prompt)."""
    for shard in sorted(folder.glob("shard-*.jsonl")):
        with shard.open(encoding="utf-8") as lines:
            for line in lines:
                record = json.loads(line)
                yield record["input_ids"][record["prefix_len"] :]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "data", type=Path, help="a drafter data folder (shard-*.jsonl, dataset.json)"
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--order", type=int, default=MAX_ORDER)
    parser.add_argument("--min-count", type=int, default=3)
    parser.add_argument("--min-share", type=float, default=0.2)
    args = parser.parse_args()
    fingerprint = json.loads((args.data / "dataset.json").read_text())["target_fingerprint"]
    table = NgramTable.build(
        answers(args.data), args.order, args.min_count, args.min_share, fingerprint
    )
    table.save(args.out)
    print(f"{len(table)} contexts -> {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
