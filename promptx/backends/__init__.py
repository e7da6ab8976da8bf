"""Text-generation backends behind ``Enhancer``: the embedded engine (default)."""

from .base import Backend, GenerationOptions, GenerationOutput, GenerationRun

__all__ = ["Backend", "GenerationOptions", "GenerationOutput", "GenerationRun"]
