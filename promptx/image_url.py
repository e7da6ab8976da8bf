"""An input image as a ``data:`` URL for a vision model: decoded by Pillow (which re-checks it),
turned upright, flattened to RGB, shrunk to at most ``max_side`` pixels a side, sent as JPEG.

Re-encoding means the server never receives the caller's original bytes (metadata, odd
formats, oversized pictures). Not here: validation messages (``images``) or the request.
"""

from __future__ import annotations

import base64
import io

from PIL import Image, ImageOps

from .images import ImageInput, load_image_facts

MAX_SIDE = 1024
JPEG_QUALITY = 90


def image_data_url(image: ImageInput, *, max_side: int = MAX_SIDE) -> str:
    """``data:image/jpeg;base64,...`` of ``image`` (a path, bytes or PIL image)."""
    load_image_facts(image)  # the same checks and errors as everywhere else
    picture = image if isinstance(image, Image.Image) else Image.open(_source(image))
    picture = ImageOps.exif_transpose(picture)
    picture.thumbnail((max_side, max_side))
    buffer = io.BytesIO()
    _flattened(picture).save(buffer, format="JPEG", quality=JPEG_QUALITY)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _source(image: ImageInput):
    return io.BytesIO(bytes(image)) if isinstance(image, (bytes, bytearray, memoryview)) else image


def _flattened(picture: Image.Image) -> Image.Image:
    """RGB; transparent parts become white."""
    if picture.mode in ("RGBA", "LA") or (picture.mode == "P" and "transparency" in picture.info):
        rgba = picture.convert("RGBA")
        background = Image.new("RGB", rgba.size, "white")
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return picture.convert("RGB")
