"""Image-to-video: ground the enhancement in the input image's geometry and a caption.

Run: python examples/image_to_video.py path/to/image.jpg "the waves roll in"
"""

import sys

import promptx

image = sys.argv[1]
prompt = sys.argv[2] if len(sys.argv) > 2 else ""  # empty: "animate the image"
result = promptx.enhance(prompt, target="wan-i2v", image=image, caption="a beach at sunset", seed=0)
print(result.model_dump_json(indent=2))
