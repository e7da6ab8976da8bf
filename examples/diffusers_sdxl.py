"""Text-to-image with Stable Diffusion XL, the prompt enhanced by promptx within SDXL's CLIP budget.

Needs: pip install -e ".[diffusers]" in promptx's checkout  (diffusers; torch and transformers come
with promptx)
Model: a local diffusers SDXL directory (model_index.json, unet/, vae/, text_encoder/, tokenizer/,
...), e.g. stabilityai/stable-diffusion-xl-base-1.0 fetched beforehand. Nothing is downloaded here.

Run: python examples/diffusers_sdxl.py MODEL_DIR "a fox in the snow" [--out fox.png] [--steps 30]

The enhanced prompt is fitted to the 75 tokens SDXL's CLIP encoder keeps, counted with the
pipeline's own tokenizer (result.stats.encoder_counter == "pipeline:tokenizer"), and the sdxl
profile's negative prompt is filled in. Without diffusers or the model directory it prints what
it would pass to the pipeline.
"""

import argparse
import sys
from pathlib import Path

import promptx
from promptx.diffusers import enhance_pipeline, target_for

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("model_dir", type=Path)
parser.add_argument("prompt", nargs="?", default="a fox in the snow")
parser.add_argument("--out", type=Path, default=Path("sdxl.png"))
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

try:
    import torch
    from diffusers import StableDiffusionXLPipeline
except ImportError:
    StableDiffusionXLPipeline = None

if StableDiffusionXLPipeline is None or not (args.model_dir / "model_index.json").is_file():
    missing = (
        "diffusers is not installed"
        if StableDiffusionXLPipeline is None
        else f"no model in {args.model_dir}"
    )
    result = promptx.enhance(
        args.prompt, target=target_for("StableDiffusionXLPipeline"), seed=args.seed
    )
    print(
        f"{missing}; the pipeline would get (counted by {result.stats.encoder_counter}, "
        f"not the pipeline's tokenizer):",
        file=sys.stderr,
    )
    print(f"prompt={result.text!r}\nnegative_prompt={result.negative_prompt!r}")
    sys.exit(0)

device = "cuda" if torch.cuda.is_available() else "cpu"
dtype = torch.float16 if device == "cuda" else torch.float32
pipe = StableDiffusionXLPipeline.from_pretrained(
    args.model_dir, torch_dtype=dtype, local_files_only=True
).to(device)
pipe = enhance_pipeline(pipe, seed=args.seed)
out = pipe(
    prompt=args.prompt,
    enhance_prompt=True,
    num_inference_steps=args.steps,
    generator=torch.Generator(device).manual_seed(args.seed),
)
result = out.enhanced_prompts[0]
if result.fallback:
    print(f"promptx kept the original prompt: {result.reason}", file=sys.stderr)
print(
    f"prompt={result.text!r}\nnegative_prompt={result.negative_prompt!r}\n"
    f"({result.stats.encoder_tokens} tokens by {result.stats.encoder_counter})"
)
out.images[0].save(args.out)
print(f"saved {args.out}")
