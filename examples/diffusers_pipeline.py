"""promptx in front of a diffusers text-to-video call.

Run: python examples/diffusers_pipeline.py "a cat on a skateboard"
Without diffusers installed it prints what it would pass to the pipeline.
"""

import sys

import promptx

prompt = sys.argv[1] if len(sys.argv) > 1 else "a cat on a skateboard"
enhanced = promptx.enhance(prompt, target="wan-t2v", seed=0)
if enhanced.fallback:
    print(f"promptx kept the original prompt: {enhanced.reason}", file=sys.stderr)

try:
    import torch
    from diffusers import WanPipeline
except ImportError:
    print(f"prompt={str(enhanced)!r}\nnegative_prompt={enhanced.negative_prompt!r}")
    sys.exit(0)

pipe = WanPipeline.from_pretrained("path/to/local/Wan2.1-T2V-1.3B-Diffusers", torch_dtype=torch.bfloat16)
frames = pipe(prompt=str(enhanced), negative_prompt=enhanced.negative_prompt, num_frames=33).frames[0]
print(f"generated {len(frames)} frames")
