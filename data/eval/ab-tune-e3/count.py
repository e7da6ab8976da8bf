"""Count unfaithful outputs per arm from the blind labels (labels_blind10) and the key; sign test on the prompts the arms disagree on."""
import json
import math
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABELS = HERE.parents[2] / "tests" / "data" / "faithfulness" / "labels_blind10.jsonl"
VIDEO = {"video", "wan-t2v", "ltx-video", "hunyuan-video", "cogvideox"}

key = [json.loads(line) for line in (HERE / "key.jsonl").read_text().splitlines()]
labels = {row["id"]: row for row in map(json.loads, LABELS.read_text().splitlines())}
verdict = {arm: {} for arm in "AB"}
for item in key:
    for arm in item["arms"]:
        verdict[arm][item["base"]] = labels[item["id"]]
for arm, rows in verdict.items():
    rejected = [r for r in rows.values() if r["label"] == "reject"]
    t2v = sum(r["target"] in VIDEO for r in rejected)
    kinds = Counter(k for r in rejected for k in r["kinds"])
    print(f"{arm}: {len(rejected)}/{len(rows)} unfaithful (t2v {t2v}, t2i {len(rejected) - t2v}) {dict(kinds)}")
only_a = sum(verdict["A"][b]["label"] == "reject" != verdict["B"][b]["label"] for b in verdict["A"])
only_b = sum(verdict["B"][b]["label"] == "reject" != verdict["A"][b]["label"] for b in verdict["B"])
n, k = only_a + only_b, min(only_a, only_b)
p = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)
print(f"rejected in A only: {only_a}, in B only: {only_b}, two-sided sign test p = {p:.3f}")
