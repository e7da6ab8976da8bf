"""Which promptx profile a diffusers pipeline wants, from the pipeline's class name.

The class is matched by name while walking its MRO, so a subclass of a known pipeline
(``class MyWan(WanPipeline)``) gets its parent's profile. diffusers itself is never imported:
a class, an instance or a class name (a string) will do.

Some pipelines run with and without an input image (FLUX.2 takes optional reference images,
Kontext and LTX's condition pipeline an optional image): they name two profiles, the second
used when an image is given.
"""

from __future__ import annotations

from typing import Any

from promptx.errors import InvalidInputError

__all__ = ["PIPELINE_TARGETS", "target_for"]

#: pipeline class name -> profile, or (profile without an image, profile with one)
PIPELINE_TARGETS: dict[str, str | tuple[str, str]] = {
    # Wan 2.x
    "WanPipeline": "wan-t2v",
    "WanImageToVideoPipeline": "wan-i2v",
    # LTX-Video: no LTX image-to-video profile, so the generic one
    "LTXPipeline": "ltx-video",
    "LTXImageToVideoPipeline": "image-to-video",
    "LTXConditionPipeline": ("ltx-video", "image-to-video"),
    # CogVideoX: the cogvideox profile is text-to-video
    "CogVideoXPipeline": "cogvideox",
    "CogVideoXImageToVideoPipeline": "image-to-video",
    # HunyuanVideo: the hunyuan-video profile is text-to-video
    "HunyuanVideoPipeline": "hunyuan-video",
    "HunyuanVideoImageToVideoPipeline": "image-to-video",
    # FLUX.1; Kontext edits with an instruction (flux2-edit's form: what changes, what stays)
    "FluxPipeline": "flux1",
    "FluxKontextPipeline": ("flux1", "flux2-edit"),
    "FluxImg2ImgPipeline": "image-to-image",
    # FLUX.2: one pipeline for generation and (with reference images) editing
    "Flux2Pipeline": ("flux2", "flux2-edit"),
    "Flux2KleinPipeline": ("flux2", "flux2-edit"),
    # Stable Diffusion 3 / XL / 1.5 (the sdxl profile's CLIP tags serve SD 1.5 too: aliases sd15,
    # sd1.5)
    "StableDiffusion3Pipeline": "sd3",
    "StableDiffusion3Img2ImgPipeline": "image-to-image",
    "StableDiffusionXLPipeline": "sdxl",
    "StableDiffusionXLImg2ImgPipeline": "image-to-image",
    "StableDiffusionPipeline": "sdxl",
    "StableDiffusionImg2ImgPipeline": "image-to-image",
    # Qwen-Image
    "QwenImagePipeline": "qwen-image",
    "QwenImageEditPipeline": "image-to-image",
    "QwenImageEditPlusPipeline": "image-to-image",
    "QwenImageImg2ImgPipeline": "image-to-image",
}


def _class_names(pipeline: Any) -> list[str]:
    if isinstance(pipeline, str):
        return [pipeline]
    cls = pipeline if isinstance(pipeline, type) else type(pipeline)
    return [c.__name__ for c in cls.__mro__]


def target_for(pipeline: Any, *, image: bool = False) -> str:
    """The profile for ``pipeline`` (a pipeline, its class or a class name).

    ``image``: whether the call has an input image (for the pipelines that run either way).
    Raises InvalidInputError for a class that is not known, naming it and how to pass ``target=``.
    """
    names = _class_names(pipeline)
    for name in names:
        entry = PIPELINE_TARGETS.get(name)
        if entry is not None:
            if isinstance(entry, tuple):
                return entry[1] if image else entry[0]
            return entry
    raise InvalidInputError(
        f"promptx does not know which target profile fits {names[0]}; pass one with target=..., "
        f'e.g. enhance_for(pipe, prompt, target="video") or enhance_pipeline(pipe, target="image") '
        f"(promptx templates list shows them)"
    )
