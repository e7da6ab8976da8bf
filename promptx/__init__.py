"""promptx: turn a short prompt into a detailed, generator-specific one, offline.

    import promptx
    result = promptx.enhance("a cat on a skateboard", target="video")
    pipe(prompt=str(result), negative_prompt=result.negative_prompt)

Importing promptx is cheap: torch and the model load only when text is generated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import (
    BackendError,
    ImageError,
    InvalidInputError,
    ModelError,
    ModelNotFoundError,
    PromptTooLongError,
    PromptxError,
    TemplateError,
    UnknownTargetError,
)

__version__ = "0.1.0"

__all__ = [
    "enhance",
    "Enhancer",
    "EnhanceOptions",
    "EnhancedPrompt",
    "EnhanceStats",
    "list_targets",
    "PromptxError",
    "InvalidInputError",
    "PromptTooLongError",
    "ImageError",
    "UnknownTargetError",
    "TemplateError",
    "ModelError",
    "ModelNotFoundError",
    "BackendError",
    "__version__",
]

_LAZY = {
    "enhance": ("promptx.api", "enhance"),
    "list_targets": ("promptx.api", "list_targets"),
    "Enhancer": ("promptx.enhancer", "Enhancer"),
    "EnhanceOptions": ("promptx.options", "EnhanceOptions"),
    "EnhancedPrompt": ("promptx.result", "EnhancedPrompt"),
    "EnhanceStats": ("promptx.result", "EnhanceStats"),
}

if TYPE_CHECKING:  # pragma: no cover
    from .api import enhance, list_targets
    from .enhancer import Enhancer
    from .options import EnhanceOptions
    from .result import EnhancedPrompt, EnhanceStats


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'promptx' has no attribute {name!r}")
