"""Validate an image input (i2v / i2i) and describe its geometry in one line.

What it is: ``load_image_facts`` opens a path, bytes or a ``PIL.Image.Image``
with Pillow, rejects what a pipeline could not use (missing file, not an
image, unsupported format, too many pixels, truncated or corrupt data) with an
``ImageError`` that says why, and returns ``ImageFacts``: size as displayed
(EXIF orientation applied), format, mode, orientation and aspect ratio.

What it is not: an image captioner. promptx's small text model cannot see
pixels; ``ImageFacts.describe()`` is the only grounding it gets. No torch.
"""

from __future__ import annotations

import io
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Union

from PIL import Image, ImageOps, UnidentifiedImageError

from promptx.errors import ImageError, InvalidInputError

__all__ = ["ImageFacts", "ImageInput", "SUPPORTED_FORMATS", "aspect_ratio", "load_image_facts"]

ImageInput = Union[str, os.PathLike, bytes, bytearray, memoryview, Image.Image]

# Pillow format names; MPO is the multi-picture JPEG some cameras write.
SUPPORTED_FORMATS = frozenset({"PNG", "JPEG", "MPO", "WEBP", "BMP", "GIF", "TIFF"})
_COMMON_RATIOS = ((1, 1), (5, 4), (4, 3), (3, 2), (16, 10), (16, 9), (2, 1), (21, 9), (3, 1))
_ROTATED = {5, 6, 7, 8}  # EXIF orientations that swap width and height


@dataclass(frozen=True)
class ImageFacts:
    """What promptx knows about an input image (sizes as displayed)."""

    width: int
    height: int
    format: str | None  # Pillow's name ("PNG", "JPEG"...); None for an in-memory image
    mode: str  # Pillow mode: "RGB", "RGBA", "L", "P"...
    orientation: str  # "landscape", "portrait" or "square"
    aspect_ratio: str  # "16:9", "4:3", "1:1", "9:16"...: exact if small, else nearest common
    source: str  # file name, "<bytes>" or "<PIL image>"

    def describe(self) -> str:
        """The geometry in words, e.g. "1024x768 pixels, landscape, aspect ratio 4:3."."""
        return (
            f"{self.width}x{self.height} pixels, {self.orientation}, "
            f"aspect ratio {self.aspect_ratio}."
        )


def aspect_ratio(width: int, height: int) -> str:
    """ "W:H" reduced when both terms are at most 21 (720x480 -> "3:2"), else the
    nearest common ratio by log distance (832x1104 -> "3:4", 1510x816 -> "16:9").
    """
    g = math.gcd(width, height)
    w, h = width // g, height // g
    if w <= 21 and h <= 21:
        return f"{w}:{h}"
    target = math.log(width / height)
    candidates = [(a, b) for a, b in _COMMON_RATIOS] + [(b, a) for a, b in _COMMON_RATIOS]
    a, b = min(candidates, key=lambda r: abs(math.log(r[0] / r[1]) - target))
    if (a, b) == (16, 10) or (a, b) == (10, 16):
        a, b = (8, 5) if a > b else (5, 8)
    return f"{a}:{b}"


def _orientation(width: int, height: int) -> str:
    if width == height:
        return "square"
    return "landscape" if width > height else "portrait"


def _facts(width: int, height: int, fmt: str | None, mode: str, source: str) -> ImageFacts:
    return ImageFacts(
        width=width,
        height=height,
        format=fmt,
        mode=mode,
        orientation=_orientation(width, height),
        aspect_ratio=aspect_ratio(width, height),
        source=source,
    )


def _check_pixels(width: int, height: int, max_pixels: int, source: str) -> None:
    if width <= 0 or height <= 0:
        raise ImageError(f"image has no pixels ({width}x{height}): {source}")
    if width * height > max_pixels:
        raise ImageError(
            f"image too large: {width}x{height} = {width * height:,} pixels is over the "
            f"limit of {max_pixels:,} ({source}); resize it first"
        )


def _from_pil(image: Image.Image, max_pixels: int) -> ImageFacts:
    width, height = image.size
    _check_pixels(width, height, max_pixels, "<PIL image>")
    try:
        orientation = image.getexif().get(0x0112, 1)
    except Exception:  # malformed EXIF on a caller's image: treat as upright
        orientation = 1
    if orientation in _ROTATED:
        width, height = height, width
    return _facts(width, height, image.format, image.mode, "<PIL image>")


def _open_source(image: ImageInput) -> tuple[object, str, str]:
    """(what Image.open takes, short source name, name for messages)."""
    if isinstance(image, (bytes, bytearray, memoryview)):
        data = bytes(image)
        if not data:
            raise ImageError("not an image: the bytes are empty")
        return io.BytesIO(data), "<bytes>", "<bytes>"
    if isinstance(image, (str, os.PathLike)):
        path = Path(image)
        if not path.exists():
            raise ImageError(f"image not found: {path}")
        if not path.is_file():
            raise ImageError(f"image path is not a file: {path}")
        return path, path.name, str(path)
    raise ImageError(
        f"unsupported image input of type {type(image).__name__}; "
        "pass a file path, the file's bytes or a PIL.Image.Image"
    )


def load_image_facts(image: ImageInput, *, max_pixels: int = 64_000_000) -> ImageFacts:
    """Validate ``image`` and return its ``ImageFacts``.

    ``image`` is a path (str or ``os.PathLike``), the encoded file as bytes, or
    a ``PIL.Image.Image`` (taken as is: no format check, its EXIF orientation
    tag is honoured). Files must be PNG, JPEG, WEBP, BMP, GIF or TIFF. The
    pixel count is checked from the header before any decoding; then the image
    is decoded fully so truncated or corrupt data is caught here and not in
    the pipeline. Pillow's own decompression-bomb guard also applies.
    Raises ``ImageError`` (an ``InvalidInputError``) with the reason.
    """
    if not isinstance(max_pixels, int) or max_pixels < 1:
        raise InvalidInputError(f"max_pixels must be a positive integer, got {max_pixels!r}")
    if isinstance(image, Image.Image):
        return _from_pil(image, max_pixels)
    src, source, name = _open_source(image)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(src) as img:
                fmt = img.format
                if fmt not in SUPPORTED_FORMATS:
                    raise ImageError(
                        f"unsupported image format {fmt} ({name}); "
                        "use PNG, JPEG, WEBP, BMP, GIF or TIFF"
                    )
                _check_pixels(img.width, img.height, max_pixels, name)
                img.load()
                mode = img.mode
                width, height = _displayed_size(img)
    except ImageError:
        raise
    except UnidentifiedImageError:
        raise ImageError(f"not an image, or an image format Pillow cannot read: {name}") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError(f"image too large (decompression bomb guard): {name}: {exc}") from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageError(f"image is truncated or corrupt: {name} ({exc})") from None
    return _facts(width, height, "JPEG" if fmt == "MPO" else fmt, mode, source)


def _displayed_size(img: Image.Image) -> tuple[int, int]:
    """Size after ImageOps.exif_transpose (only applied when it turns the image)."""
    try:
        if img.getexif().get(0x0112, 1) not in _ROTATED:
            return img.size
        return ImageOps.exif_transpose(img).size
    except Exception:  # unreadable EXIF: the stored size is the best answer
        return img.size
