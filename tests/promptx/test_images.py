"""Tests for promptx.images: validating image inputs and describing them."""

import dataclasses
import io
import os
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from promptx.errors import ImageError, InvalidInputError
from promptx.images import ImageFacts, aspect_ratio, load_image_facts

# shared/ lies beside the project checkout (read-only); never copy it in.
IMAGES = Path(__file__).resolve().parents[3] / "shared" / "data" / "images"
if not IMAGES.is_dir():
    IMAGES = Path("/work/shared/data/images")
needs_images = pytest.mark.skipif(not IMAGES.is_dir(), reason="shared/data/images is not available")


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height, with only a few bytes of pixel data."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(b"\0" * 16))


def _save(tmp_path: Path, name: str, size=(64, 48), fmt=None, **kwargs) -> Path:
    path = tmp_path / name
    Image.new("RGB", size, (200, 120, 40)).save(path, format=fmt, **kwargs)
    return path


# --------------------------------------------------------------------- real files


@needs_images
@pytest.mark.parametrize(
    ("name", "width", "height", "fmt", "orientation", "ratio"),
    [
        ("wan_i2v_input.jpg", 832, 1104, "JPEG", "portrait", "3:4"),
        ("cogvideo_beach.png", 720, 480, "PNG", "landscape", "3:2"),
        ("flux2_i2i_input.png", 1510, 816, "PNG", "landscape", "16:9"),
        ("wan_girl.png", 1024, 1024, "PNG", "square", "1:1"),
    ],
)
def test_real_images(name, width, height, fmt, orientation, ratio):
    facts = load_image_facts(IMAGES / name)
    assert (facts.width, facts.height, facts.format) == (width, height, fmt)
    assert facts.mode == "RGB"
    assert facts.orientation == orientation
    assert facts.aspect_ratio == ratio
    assert facts.source == name


@needs_images
def test_path_as_str_and_bytes_give_the_same_facts():
    path = IMAGES / "cogvideo_beach.png"
    from_str = load_image_facts(str(path))
    from_bytes = load_image_facts(path.read_bytes())
    assert from_bytes.source == "<bytes>"
    assert dataclasses.replace(from_bytes, source=from_str.source) == from_str


@needs_images
def test_describe_is_one_line():
    facts = load_image_facts(IMAGES / "cogvideo_beach.png")
    assert facts.describe() == "720x480 pixels, landscape, aspect ratio 3:2."
    assert load_image_facts(IMAGES / "wan_i2v_input.jpg").describe() == (
        "832x1104 pixels, portrait, aspect ratio 3:4."
    )


def test_facts_are_frozen():
    facts = load_image_facts(Image.new("RGB", (40, 30)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.width = 1  # type: ignore[misc]


# ---------------------------------------------------------------- inputs and EXIF


def test_pil_image_input():
    facts = load_image_facts(Image.new("RGBA", (300, 200)))
    assert facts == ImageFacts(300, 200, None, "RGBA", "landscape", "3:2", "<PIL image>")


def test_exif_rotation_swaps_width_and_height(tmp_path):
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    path = _save(tmp_path, "rotated.jpg", size=(64, 48), exif=exif.tobytes())
    with Image.open(path) as stored:
        assert stored.size == (64, 48)
    facts = load_image_facts(path)
    assert (facts.width, facts.height) == (48, 64)
    assert facts.orientation == "portrait"
    assert facts.aspect_ratio == "3:4"


def test_exif_orientation_that_does_not_rotate_keeps_the_size(tmp_path):
    exif = Image.Exif()
    exif[0x0112] = 3  # upside down: same width and height
    facts = load_image_facts(_save(tmp_path, "flipped.jpg", size=(64, 48), exif=exif.tobytes()))
    assert (facts.width, facts.height) == (64, 48)


def test_exif_rotation_of_an_opened_pil_image(tmp_path):
    exif = Image.Exif()
    exif[0x0112] = 8
    path = _save(tmp_path, "rotated.jpg", size=(64, 48), exif=exif.tobytes())
    with Image.open(path) as img:
        facts = load_image_facts(img)
    assert (facts.width, facts.height, facts.format) == (48, 64, "JPEG")


@pytest.mark.parametrize(
    ("name", "fmt", "expected"),
    [
        ("a.webp", "WEBP", "WEBP"),
        ("a.bmp", "BMP", "BMP"),
        ("a.gif", "GIF", "GIF"),
        ("a.tiff", "TIFF", "TIFF"),
    ],
)
def test_supported_formats(tmp_path, name, fmt, expected):
    facts = load_image_facts(_save(tmp_path, name, size=(32, 32), fmt=fmt))
    assert facts.format == expected
    assert (facts.width, facts.height, facts.orientation) == (32, 32, "square")


# -------------------------------------------------------------------- error paths


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.png"
    with pytest.raises(ImageError, match=f"image not found: {missing}"):
        load_image_facts(missing)


def test_a_directory_is_not_an_image(tmp_path):
    with pytest.raises(ImageError, match="not a file"):
        load_image_facts(tmp_path)


def test_text_file_renamed_png(tmp_path):
    path = tmp_path / "notes.png"
    path.write_text("this is not an image\n")
    with pytest.raises(ImageError, match="not an image"):
        load_image_facts(path)


def test_garbage_and_empty_bytes():
    with pytest.raises(ImageError, match="not an image"):
        load_image_facts(b"definitely not an image")
    with pytest.raises(ImageError, match="empty"):
        load_image_facts(b"")


def test_unsupported_format_is_named(tmp_path):
    path = _save(tmp_path, "a.ppm", fmt="PPM")
    with pytest.raises(ImageError, match="unsupported image format PPM"):
        load_image_facts(path)
    with pytest.raises(ImageError, match="unsupported image format ICO"):
        load_image_facts(_save(tmp_path, "a.ico", size=(32, 32), fmt="ICO"))


@pytest.mark.parametrize("name", ["truncated.jpg", "truncated.png"])
def test_truncated_file(tmp_path, name):
    full = _save(tmp_path, "full" + Path(name).suffix, size=(256, 256))
    # noisy pixels so the compressed data is long enough to cut in half
    Image.effect_noise((256, 256), 64).convert("RGB").save(full)
    data = full.read_bytes()
    path = tmp_path / name
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ImageError, match="truncated or corrupt"):
        load_image_facts(path)


def test_too_many_pixels_is_checked_from_the_header_before_decoding(tmp_path):
    # The header says 5000x5000 and there is no pixel data at all: a decoder
    # would fail with "truncated"; the header check must fire first.
    path = tmp_path / "huge.png"
    path.write_bytes(_png_header_only(5000, 5000))
    with pytest.raises(
        ImageError, match=r"image too large: 5000x5000 = 25,000,000 pixels.*limit of 1,000,000"
    ):
        load_image_facts(path, max_pixels=1_000_000)


def test_small_limit_on_a_real_image(tmp_path):
    path = _save(tmp_path, "a.png", size=(100, 100))
    with pytest.raises(ImageError, match="too large"):
        load_image_facts(path, max_pixels=9_999)
    assert load_image_facts(path, max_pixels=10_000).width == 100


def test_pillow_decompression_bomb_guard_becomes_image_error(tmp_path):
    path = tmp_path / "bomb.png"
    path.write_bytes(_png_header_only(20_000, 20_000))  # 400 MP: Pillow refuses to open it
    with pytest.raises(ImageError, match="too large"):
        load_image_facts(path, max_pixels=10**12)
    path.write_bytes(_png_header_only(10_000, 10_000))  # 100 MP: Pillow only warns
    with pytest.raises(ImageError, match="too large"):
        load_image_facts(path, max_pixels=10**12)


def test_pil_image_over_the_limit():
    with pytest.raises(ImageError, match="too large"):
        load_image_facts(Image.new("L", (100, 100)), max_pixels=100)


def test_wrong_input_type_and_bad_limit():
    with pytest.raises(ImageError, match="unsupported image input of type int"):
        load_image_facts(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="max_pixels"):
        load_image_facts(Image.new("L", (4, 4)), max_pixels=0)


def test_image_error_is_an_invalid_input_error(tmp_path):
    with pytest.raises(InvalidInputError):
        load_image_facts(tmp_path / "missing.jpg")


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to count open files")
def test_no_file_handles_leak(tmp_path):
    good = _save(tmp_path, "good.png")
    bad = tmp_path / "bad.png"
    bad.write_text("nope")
    truncated = tmp_path / "cut.png"
    truncated.write_bytes(good.read_bytes()[:60])
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        load_image_facts(good)
        for path in (bad, truncated):
            with pytest.raises(ImageError):
                load_image_facts(path)
    assert len(os.listdir("/proc/self/fd")) == before


# ------------------------------------------------------------------- aspect ratio


@pytest.mark.parametrize(
    ("width", "height", "ratio"),
    [
        (1920, 1080, "16:9"),
        (1080, 1920, "9:16"),
        (1024, 768, "4:3"),
        (720, 480, "3:2"),
        (512, 512, "1:1"),
        (1280, 800, "8:5"),
        (832, 1104, "3:4"),
        (1510, 816, "16:9"),
        (2560, 1080, "21:9"),
        (1000, 700, "10:7"),
        (3001, 1000, "3:1"),
    ],
)
def test_aspect_ratio(width, height, ratio):
    assert aspect_ratio(width, height) == ratio


def test_module_does_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys, promptx.images, promptx.text.cleanup, promptx.text.validate, "
        "promptx.text.language; print('torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip() == "False"


def test_bytes_like_inputs():
    buf = io.BytesIO()
    Image.new("RGB", (20, 10)).save(buf, format="PNG")
    for data in (buf.getvalue(), bytearray(buf.getvalue()), memoryview(buf.getvalue())):
        assert load_image_facts(data).aspect_ratio == "2:1"
