"""The top-level convenience functions: a thin wrapper over a shared ``Enhancer``.

``enhance`` reuses one Enhancer per (model, templates_dir) so repeated calls
in a pipeline load the model once.
"""

from __future__ import annotations

import threading
from pathlib import Path

from .enhancer import Enhancer
from .result import EnhancedPrompt

_shared: dict[tuple, Enhancer] = {}
_shared_lock = threading.Lock()


def shared_enhancer(model: str | Path | None = None, templates_dir: str | Path | None = None) -> Enhancer:
    key = (str(model) if model is not None else None, str(templates_dir) if templates_dir else None)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = Enhancer(model, templates_dir=templates_dir)
        return _shared[key]


def enhance(prompt: str | None, target: str = "video", *, model: str | Path | None = None,
            templates_dir: str | Path | None = None, **options) -> EnhancedPrompt:
    """Enhance ``prompt`` for ``target`` (a profile name or alias such as "video", "wan", "flux").

    ``options`` are the fields of ``promptx.options.EnhanceOptions``: ``image`` (path, bytes
    or PIL image) and ``caption`` ground image-to-video and image-to-image targets, ``seed``
    makes the output reproducible, then temperature, max_new_tokens, style, language, force,
    speculative, system_prompt. On failure the original prompt comes back with
    ``fallback=True`` and the ``reason``.
    """
    return shared_enhancer(model, templates_dir).enhance(prompt, target, **options)


def list_targets(templates_dir: str | Path | None = None) -> list[str]:
    """Names of every available target profile."""
    from .profiles.registry import registry_for

    return registry_for(templates_dir).names()
