"""Text-to-video with Wan 2.x in diffusers, the prompt enhanced by promptx for Wan.

Needs: pip install -e ".[diffusers]" in promptx's checkout  (diffusers; torch and transformers come
with promptx); saving an .mp4 also needs imageio and imageio-ffmpeg, else the frames are saved as a
.gif.
Model: a local diffusers Wan text-to-video directory, e.g. Wan-AI/Wan2.1-T2V-1.3B-Diffusers fetched
beforehand (model_index.json, transformer/, vae/, text_encoder/, tokenizer/). Nothing is downloaded
here.

Run: python examples/diffusers_pipeline.py MODEL_DIR "a cat on a skateboard" [--out cat.mp4]
     [--frames 33]

The wan-t2v profile's budget is counted with the pipeline's umT5 tokenizer, within the
max_sequence_length it is called with, and its negative prompt is filled in. Without diffusers or
the model directory it prints what it would pass to the pipeline.
"""

import argparse
import importlib.util
import sys
from pathlib import Path

import promptx
from promptx.diffusers import enhance_pipeline, target_for

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("model_dir", type=Path)
parser.add_argument("prompt", nargs="?", default="a cat on a skateboard")
parser.add_argument("--out", type=Path, default=Path("wan.mp4"))
parser.add_argument("--frames", type=int, default=33)
parser.add_argument("--height", type=int, default=480)
parser.add_argument("--width", type=int, default=832)
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

try:
    import torch
    from diffusers import AutoencoderKLWan, WanPipeline
except ImportError:
    WanPipeline = None

if WanPipeline is None or not (args.model_dir / "model_index.json").is_file():
    missing = (
        "diffusers is not installed" if WanPipeline is None else f"no model in {args.model_dir}"
    )
    result = promptx.enhance(args.prompt, target=target_for("WanPipeline"), seed=args.seed)
    print(f"{missing}; the pipeline would get:", file=sys.stderr)
    print(f"prompt={result.text!r}\nnegative_prompt={result.negative_prompt!r}")
    sys.exit(0)

device = "cuda" if torch.cuda.is_available() else "cpu"
dtype = torch.bfloat16 if device == "cuda" else torch.float32
vae = AutoencoderKLWan.from_pretrained(
    args.model_dir, subfolder="vae", torch_dtype=torch.float32, local_files_only=True
)
pipe = WanPipeline.from_pretrained(
    args.model_dir, vae=vae, torch_dtype=dtype, local_files_only=True
).to(device)
pipe = enhance_pipeline(pipe, seed=args.seed)
out = pipe(
    prompt=args.prompt,
    enhance_prompt=True,
    height=args.height,
    width=args.width,
    num_frames=args.frames,
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
frames = out.frames[0]
if importlib.util.find_spec("imageio") and importlib.util.find_spec("imageio_ffmpeg"):
    from diffusers.utils import export_to_video

    export_to_video(frames, str(args.out), fps=16)
else:
    from PIL import Image

    args.out = args.out.with_suffix(".gif")
    images = [Image.fromarray((frame * 255).round().astype("uint8")) for frame in frames]
    images[0].save(args.out, save_all=True, append_images=images[1:], duration=62, loop=0)
print(f"saved {len(frames)} frames to {args.out}")
