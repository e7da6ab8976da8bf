#!/usr/bin/env bash
# Ray against a plain batch run, one machine: the first N VBench prompts (default 100) to sdxl,
# default settings, seed 0; plain --file, then --ray with 1 and 2 workers. Prints wall seconds.
# Usage: tools/ray_bench.sh [N] [WORKDIR]   (needs promptx[ray] and ../shared/data beside the repo)
set -euo pipefail
n=${1:-100}
work=${2:-$(mktemp -d)}
root=$(cd "$(dirname "$0")/.." && pwd)
head -n "$n" "$root/../shared/data/prompts/vbench_all_dimension.txt" \
    | python3 -c 'import json, sys; [print(json.dumps({"id": f"v{i}", "prompt": l.strip()})) for i, l in enumerate(sys.stdin)]' \
    > "$work/in.jsonl"
run() {
    local name=$1; shift
    rm -f "$work/out_$name.jsonl"
    local t0; t0=$(date +%s.%N)
    promptx enhance --file "$work/in.jsonl" --output "$work/out_$name.jsonl" --target sdxl --seed 0 "$@" 2> "$work/$name.err"
    python3 -c "import sys; print(f'{sys.argv[1]}: {float(sys.argv[3]) - float(sys.argv[2]):.1f} s')" "$name" "$t0" "$(date +%s.%N)"
}
run plain
run ray1 --ray --workers 1
run ray2 --ray --workers 2
echo "outputs in $work"
