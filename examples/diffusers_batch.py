"""A batch: several prompts enhanced in one batched decode, then rendered in one pipeline call.

Needs: pip install -e ".[diffusers]" in promptx's checkout  (diffusers; torch and transformers come
with promptx)
Model: any local diffusers text-to-image directory whose pipeline promptx knows (SDXL, SD3, FLUX.1,
Qwen-Image, ...: promptx.diffusers.PIPELINE_TARGETS); the class is read from its model_index.json.
Nothing is downloaded here.

Run: python examples/diffusers_batch.py MODEL_DIR [PROMPTS_FILE] [--limit 4] [--out-dir batch-out]
     PROMPTS_FILE: one prompt a line (default: examples/prompts.txt)

Without diffusers or the model directory it prints what it would pass to the pipeline (for
model_index.json's class, else SDXL's).
"""

import argparse
import json
import sys
from pathlib import Path

import promptx
from promptx.diffusers import enhance_pipeline, target_for

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("model_dir", type=Path)
parser.add_argument(
    "prompts_file", type=Path, nargs="?", default=Path(__file__).with_name("prompts.txt")
)
parser.add_argument("--limit", type=int, default=4)
parser.add_argument("--out-dir", type=Path, default=Path("batch-out"))
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

prompts = [
    line.strip()
    for line in args.prompts_file.read_text(encoding="utf-8").splitlines()
    if line.strip()
]
prompts = prompts[: args.limit]
index = args.model_dir / "model_index.json"
class_name = (
    json.loads(index.read_text())["_class_name"] if index.is_file() else "StableDiffusionXLPipeline"
)

try:
    import torch
    from diffusers import DiffusionPipeline
except ImportError:
    DiffusionPipeline = None

if DiffusionPipeline is None or not index.is_file():
    missing = (
        "diffusers is not installed"
        if DiffusionPipeline is None
        else f"no model in {args.model_dir}"
    )
    target = target_for(class_name)
    results = promptx.Enhancer().enhance_many(prompts, target, seed=args.seed, progress=True)
    print(f"{missing}; a {class_name} would get (target {target}):", file=sys.stderr)
    print(
        f"prompt={[r.text for r in results]!r}\n"
        f"negative_prompt={[r.negative_prompt for r in results]!r}"
    )
    sys.exit(0)

device = "cuda" if torch.cuda.is_available() else "cpu"
dtype = torch.bfloat16 if device == "cuda" else torch.float32
pipe = DiffusionPipeline.from_pretrained(
    args.model_dir, torch_dtype=dtype, local_files_only=True
).to(device)
pipe = enhance_pipeline(pipe, seed=args.seed, progress=True)
out = pipe(
    prompt=prompts,
    enhance_prompt=True,
    num_inference_steps=args.steps,
    generator=torch.Generator(device).manual_seed(args.seed),
)
args.out_dir.mkdir(parents=True, exist_ok=True)
for number, (result, image) in enumerate(zip(out.enhanced_prompts, out.images)):
    path = args.out_dir / f"{number:02d}.png"
    image.save(path)
    note = f" (kept the original: {result.reason})" if result.fallback else ""
    print(f"{path}: {result.original_prompt!r} -> {result.text!r}{note}")
