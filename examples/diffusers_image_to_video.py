"""Image-to-video with Wan 2.x in diffusers: promptx writes the motion prompt grounded in the image.

Needs: pip install -e ".[diffusers]" in promptx's checkout  (diffusers; torch and transformers come
with promptx); diffusers' WanImageToVideoPipeline also needs ftfy (pip install ftfy; diffusers 0.42
calls it unguarded); saving an .mp4 also needs imageio and imageio-ffmpeg, else the frames are saved
as a .gif.
Model: a local diffusers Wan image-to-video directory, e.g. Wan-AI/Wan2.1-I2V-14B-480P-Diffusers
fetched beforehand (model_index.json, transformer/, vae/, text_encoder/, tokenizer/,
image_encoder/). Nothing is downloaded here.

Run: python examples/diffusers_image_to_video.py MODEL_DIR IMAGE ["the waves roll in"]
     [--caption "..."]
     e.g. IMAGE = /work/shared/data/images/wan_i2v_input.jpg (../shared/data/images/ beside
     the checkout)

The call's image goes to the wan-i2v profile (its size and aspect ratio; --caption says what it
shows, for a text-only model), an empty prompt asks for motion that suits the image. Without
diffusers or the model directory it prints what it would pass to the pipeline.
"""

import argparse
import importlib.util
import math
import sys
from pathlib import Path

import promptx
from promptx.diffusers import enhance_pipeline, target_for

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("model_dir", type=Path)
parser.add_argument("image", type=Path)
parser.add_argument("prompt", nargs="?", default="")
parser.add_argument(
    "--caption", default=None, help="what the image shows, e.g. 'a beach at sunset'"
)
parser.add_argument("--out", type=Path, default=Path("wan_i2v.mp4"))
parser.add_argument("--frames", type=int, default=33)
parser.add_argument("--area", type=int, default=480 * 832, help="pixels of a frame (480p: 480*832)")
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

from PIL import Image  # noqa: E402  (pillow comes with promptx)

image = Image.open(args.image).convert("RGB")

try:
    import torch
    from diffusers import AutoencoderKLWan, WanImageToVideoPipeline
except ImportError:
    WanImageToVideoPipeline = None

if WanImageToVideoPipeline is None or not (args.model_dir / "model_index.json").is_file():
    missing = (
        "diffusers is not installed"
        if WanImageToVideoPipeline is None
        else f"no model in {args.model_dir}"
    )
    result = promptx.enhance(
        args.prompt,
        target=target_for("WanImageToVideoPipeline"),
        image=image,
        caption=args.caption,
        seed=args.seed,
    )
    print(f"{missing}; the pipeline would get image={args.image} and:", file=sys.stderr)
    print(f"prompt={result.text!r}\nnegative_prompt={result.negative_prompt!r}")
    sys.exit(0)

device = "cuda" if torch.cuda.is_available() else "cpu"
dtype = torch.bfloat16 if device == "cuda" else torch.float32
vae = AutoencoderKLWan.from_pretrained(
    args.model_dir, subfolder="vae", torch_dtype=torch.float32, local_files_only=True
)
pipe = WanImageToVideoPipeline.from_pretrained(
    args.model_dir, vae=vae, torch_dtype=dtype, local_files_only=True
).to(device)

# the image's aspect ratio at about --area pixels, in multiples the VAE and patches divide
step = pipe.vae_scale_factor_spatial * pipe.transformer.config.patch_size[1]
scale = math.sqrt(args.area / (image.width * image.height))
width, height = (max(step, round(side * scale / step) * step) for side in image.size)
image = image.resize((width, height))

pipe = enhance_pipeline(pipe, seed=args.seed, caption=args.caption)
out = pipe(
    image=image,
    prompt=args.prompt,
    enhance_prompt=True,
    height=height,
    width=width,
    num_frames=args.frames,
    num_inference_steps=args.steps,
    generator=torch.Generator(device).manual_seed(args.seed),
)
result = out.enhanced_prompts[0]
if result.fallback:
    print(f"promptx kept the original prompt: {result.reason}", file=sys.stderr)
print(f"prompt={result.text!r}\nnegative_prompt={result.negative_prompt!r}")
frames = out.frames[0]
if importlib.util.find_spec("imageio") and importlib.util.find_spec("imageio_ffmpeg"):
    from diffusers.utils import export_to_video

    export_to_video(frames, str(args.out), fps=16)
else:
    args.out = args.out.with_suffix(".gif")
    images = [Image.fromarray((frame * 255).round().astype("uint8")) for frame in frames]
    images[0].save(args.out, save_all=True, append_images=images[1:], duration=62, loop=0)
print(f"saved {len(frames)} frames to {args.out}")
