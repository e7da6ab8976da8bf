"""The top-level convenience functions: a thin wrapper over a shared ``Enhancer``.

``enhance`` reuses one Enhancer per (model, templates_dir) so repeated calls
in a pipeline load the model once; ``shared_enhancer`` is that cache, keyed by any
``Enhancer`` options: promptx's one cache of Enhancers (the diffusers wrapper uses it too).
Not here: the options of a call (``promptx.options``).
"""

from __future__ import annotations

import threading
from pathlib import Path

from .enhancer import Enhancer
from .result import EnhancedPrompt

_shared: dict[tuple, Enhancer] = {}
_shared_lock = threading.Lock()


def shared_enhancer(model: str | Path | None = None, templates_dir=None, **init) -> Enhancer:
    """The Enhancer made with these options, made once per process (options left None do not
    count); options that cannot be a key (an object such as a Backend) get a new Enhancer."""
    init = {"model": model, "templates_dir": templates_dir, **init}
    try:
        key = tuple(
            sorted((name, _key(value)) for name, value in init.items() if value is not None)
        )
        hash(key)
    except TypeError:
        return Enhancer(**init)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = Enhancer(**init)
        return _shared[key]


def _key(value):
    if isinstance(value, (list, tuple)):
        return tuple(_key(v) for v in value)
    return str(value) if isinstance(value, Path) else value


def enhance(
    prompt: str | None,
    target: str = "video",
    *,
    model: str | Path | None = None,
    templates_dir: str | Path | None = None,
    **options,
) -> EnhancedPrompt:
    """Enhance ``prompt`` for ``target`` (a profile name or alias such as "video", "wan", "flux").

    ``options`` are the fields of ``promptx.options.EnhanceOptions``: ``image`` (path, bytes
    or PIL image) and ``caption`` ground image-to-video and image-to-image targets, ``seed``
    makes the output reproducible, then temperature, max_new_tokens, style, language, force,
    strength, speculative, system_prompt, constrain. On failure the original prompt comes back with
    ``fallback=True`` and the ``reason``.
    """
    return shared_enhancer(model, templates_dir).enhance(prompt, target, **options)


def list_targets(templates_dir: str | Path | None = None) -> list[str]:
    """Names of every available target profile."""
    from .profiles.registry import registry_for

    return registry_for(templates_dir).names()
