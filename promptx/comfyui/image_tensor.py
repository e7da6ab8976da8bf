"""A ComfyUI IMAGE (a float tensor [B, H, W, C] with values in 0..1) as a PIL image.

Only its first frame is used: promptx grounds an i2v / i2i prompt in one image. torch is
imported here, when an IMAGE arrives, never by importing promptx or the node pack.
"""

from __future__ import annotations

from PIL import Image

from promptx.errors import ImageError

_CHANNELS = (1, 3, 4)  # grey, RGB, RGBA


def first_frame(image) -> Image.Image:
    """The first frame of ``image`` ([B, H, W, C] or a single [H, W, C]) as an 8-bit PIL image."""
    import torch

    if not isinstance(image, torch.Tensor):
        raise ImageError(f"image must be a ComfyUI IMAGE tensor, not {type(image).__name__}")
    frame = image[0] if image.dim() == 4 and image.shape[0] > 0 else image
    if frame.dim() != 3 or frame.shape[-1] not in _CHANNELS or min(frame.shape[:2]) < 1:
        raise ImageError(
            f"image must be a ComfyUI IMAGE of shape [batch, height, width, 1|3|4 channels], "
            f"not {list(image.shape)}"
        )
    pixels = frame.detach().float().clamp(0, 1).mul(255).round().to(torch.uint8).cpu().numpy()
    return Image.fromarray(pixels[..., 0] if pixels.shape[-1] == 1 else pixels)
