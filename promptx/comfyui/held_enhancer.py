"""The Enhancers the nodes share: one per loader setting, kept at module level.

ComfyUI re-runs a node only when its inputs change, and runs the whole graph again for each
queued item; keying the held ``Enhancer`` by the loader's settings means a queue of 50 items
loads the model once, even when ComfyUI's own cache was dropped. ``keep_loaded=False``
releases the Enhancer (and its model) after every enhancement; the next one builds it anew.
"""

from __future__ import annotations

import gc
import sys
import threading
from dataclasses import dataclass

from promptx.enhancer import Enhancer
from promptx.result import EnhancedPrompt

BACKENDS = ("embedded", "openai")
DTYPES = ("auto", "float32", "bfloat16", "float16", "int4", "mixed", "int8")


@dataclass(frozen=True)
class EnhancerSettings:
    """What the loader node chose; the key of the held Enhancer."""

    backend: str = "embedded"  # "embedded" or "openai" (an OpenAI-compatible server)
    base_url: str | None = None  # openai: the server, e.g. http://127.0.0.1:8000/v1
    model: str | None = (
        None  # embedded: a model name or directory (None: the default); openai: its name
    )
    dtype: str | None = None  # embedded: the precision (None: auto)

    def build(self) -> Enhancer:
        if self.backend == "openai":
            return Enhancer(self.model, backend="openai", base_url=self.base_url)
        return Enhancer(self.model, dtype=self.dtype)


class HeldEnhancer:
    """One ``Enhancer`` built from ``settings``, dropped after each call unless ``keep_loaded``."""

    def __init__(self, settings: EnhancerSettings, keep_loaded: bool = True) -> None:
        self.settings, self.keep_loaded = settings, keep_loaded
        self._enhancer: Enhancer | None = settings.build()  # checks the settings now

    @property
    def enhancer(self) -> Enhancer:
        """The Enhancer, built again if it was released."""
        if self._enhancer is None:
            self._enhancer = self.settings.build()
        return self._enhancer

    @property
    def held(self) -> bool:
        """True while an Enhancer (and the model it may have loaded) is kept."""
        return self._enhancer is not None

    def enhance(self, prompt: str, target: str, **options) -> EnhancedPrompt:
        try:
            return self.enhancer.enhance(prompt, target, **options)
        finally:
            if not self.keep_loaded:
                self.release()

    def release(self) -> None:
        """Drop the Enhancer and free its model's memory (the CUDA cache too, where torch has
        one)."""
        if self._enhancer is None:
            return
        self._enhancer = None
        gc.collect()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()


_HELD: dict[EnhancerSettings, HeldEnhancer] = {}
_LOCK = threading.Lock()


def held_enhancer(
    settings: EnhancerSettings = EnhancerSettings(), keep_loaded: bool | None = None
) -> HeldEnhancer:
    """The held Enhancer for ``settings`` (built on first use); ``keep_loaded`` None leaves its
    setting."""
    with _LOCK:
        held = _HELD.get(settings)
        if held is None:
            held = _HELD[settings] = HeldEnhancer(settings, keep_loaded is not False)
    if keep_loaded is not None:
        held.keep_loaded = keep_loaded
        if not keep_loaded:
            held.release()
    return held


def release_all() -> None:
    """Release and forget every held Enhancer."""
    with _LOCK:
        held = list(_HELD.values())
        _HELD.clear()
    for one in held:
        one.release()
