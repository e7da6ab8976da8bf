"""The "promptx Enhancer" node: which model enhances, and whether it stays loaded.

Its output (type ``PROMPTX_ENHANCER``) goes into the enhancer input of "promptx Enhance
Prompt". The Enhancer is held at module level per setting (``held_enhancer``), so queued
items share one loaded model; keep_loaded off frees it after each enhancement.
"""

from __future__ import annotations

from promptx.comfyui.held_enhancer import (
    BACKENDS,
    DTYPES,
    EnhancerSettings,
    HeldEnhancer,
    held_enhancer,
)
from promptx.comfyui.user_errors import as_user_message

ENHANCER_TYPE = "PROMPTX_ENHANCER"


class EnhancerLoader:
    """Chooses the backend (the embedded model or an OpenAI-compatible server) and its precision."""

    CATEGORY = "promptx"
    FUNCTION = "load"
    RETURN_TYPES = (ENHANCER_TYPE,)
    RETURN_NAMES = ("enhancer",)
    DESCRIPTION = (
        "The model that enhances prompts: promptx's embedded model, or an OpenAI-compatible "
        "server. keep_loaded keeps it in memory across queued items; off, it is freed after each."
    )

    @classmethod
    def INPUT_TYPES(cls):
        return {
            "required": {
                "backend": (list(BACKENDS), {"default": "embedded"}),
                "base_url": (
                    "STRING",
                    {"default": "", "tooltip": "openai: the server, e.g. http://127.0.0.1:8000/v1"},
                ),
                "model": (
                    "STRING",
                    {
                        "default": "",
                        "tooltip": "embedded: a model name or directory (empty: "
                        "the default); openai: the served model's name",
                    },
                ),
                "dtype": (
                    list(DTYPES),
                    {"default": "auto", "tooltip": "embedded: the model's precision"},
                ),
                "keep_loaded": (
                    "BOOLEAN",
                    {
                        "default": True,
                        "tooltip": "keep the model loaded across queued "
                        "items; off: free it after each",
                    },
                ),
            },
        }

    def load(
        self, backend: str, base_url: str, model: str, dtype: str, keep_loaded: bool
    ) -> tuple[HeldEnhancer]:
        if backend not in BACKENDS:
            raise ValueError(
                f"promptx: unknown backend {backend!r}; choose from {', '.join(BACKENDS)}"
            )
        remote = backend == "openai"
        settings = EnhancerSettings(
            backend=backend,
            base_url=(base_url.strip() or None) if remote else None,
            model=model.strip() or None,
            dtype=None if remote or dtype == "auto" else dtype,
        )
        with as_user_message():
            return (held_enhancer(settings, keep_loaded=bool(keep_loaded)),)
