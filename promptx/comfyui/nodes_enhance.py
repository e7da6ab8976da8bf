"""The "promptx Enhance Prompt" node: a short prompt in, the detailed prompt and negative prompt
out.

Wire ``enhanced`` and ``negative`` into the text encoders (CLIPTextEncode). Without an
enhancer input it uses the embedded model, held at module level like the loader's. An
i2v / i2i target is grounded in the first frame of the optional IMAGE. A promptx error
(an empty prompt, an unknown target, an unreadable image, a model that cannot load) stops
the run with ``ValueError("promptx: <one line>")``: ComfyUI shows that message.
"""

from __future__ import annotations

from promptx.comfyui.held_enhancer import HeldEnhancer, held_enhancer
from promptx.comfyui.image_tensor import first_frame
from promptx.comfyui.nodes_loader import ENHANCER_TYPE
from promptx.comfyui.report import report
from promptx.comfyui.user_errors import as_user_message
from promptx.options import MAX_SEED, STRENGTHS
from promptx.profiles.registry import registry_for

DEFAULT_TARGET = "video"


def target_names() -> list[str]:
    """The profiles' names, as ``promptx templates list`` shows them."""
    return [profile.name for profile in registry_for(None).profiles()]


class EnhancePrompt:
    """Enhances one prompt for a target generator; the same seed gives the same text."""

    CATEGORY = "promptx"
    FUNCTION = "enhance"
    RETURN_TYPES = ("STRING", "STRING", "STRING")
    RETURN_NAMES = ("enhanced", "negative", "report")
    DESCRIPTION = (
        "Turns a short prompt into a detailed one written for the target generator. light: "
        "your words plus vetted phrases (no model); medium: phrases ranked by the model; full: "
        "free prose."
    )

    @classmethod
    def INPUT_TYPES(cls):
        targets = target_names()
        return {
            "required": {
                "prompt": ("STRING", {"multiline": True, "default": ""}),
                "target": (
                    targets,
                    {"default": DEFAULT_TARGET if DEFAULT_TARGET in targets else targets[0]},
                ),
                "strength": (list(STRENGTHS), {"default": "light"}),
                "seed": ("INT", {"default": 0, "min": 0, "max": MAX_SEED}),
            },
            "optional": {
                "enhancer": (ENHANCER_TYPE,),
                "image": ("IMAGE",),
                "caption": (
                    "STRING",
                    {"default": "", "tooltip": "what the image shows (i2v / i2i targets)"},
                ),
            },
        }

    def enhance(
        self,
        prompt: str,
        target: str,
        strength: str,
        seed: int,
        enhancer: HeldEnhancer | None = None,
        image=None,
        caption: str = "",
    ) -> tuple[str, str, str]:
        with as_user_message():
            held = enhancer if enhancer is not None else held_enhancer()
            wants_image = held.enhancer.profile(target).wants_image
            options = {"image": first_frame(image)} if image is not None and wants_image else {}
            result = held.enhance(
                prompt,
                target,
                strength=strength,
                seed=seed,
                caption=(caption or "").strip() or None,
                **options,
            )
        unused = image is not None and not wants_image
        return result.text, result.negative_prompt, report(result, seed, image_unused=unused)
