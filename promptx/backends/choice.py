"""Choosing a backend by name: ``"embedded"``, ``"openai"``, or a backend named in the config
file (``$XDG_CONFIG_HOME/promptx/config.toml``, else ``~/.config/promptx/config.toml``)::

    [backends.farm]
    type = "openai"                    # the only remote type so far
    base_url = "http://10.0.0.5:8000/v1"
    model = "Qwen/Qwen2.5-7B-Instruct" # optional: else the first model the server lists
    api_key_env = "FARM_KEY"           # the variable holding the key (never the key itself)
    vision = true

Explicit arguments win over the file, the file over the ``PROMPTX_*`` environment variables.
Not here: the backends themselves.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import InvalidInputError
from .base import Backend

REMOTE_KEYS = {
    "base_url",
    "model",
    "api_key_env",
    "vision",
    "connect_timeout",
    "read_timeout",
    "retries",
    "context_window",
    "concurrency",
}
BUILT_IN = ("embedded", "openai")


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "promptx" / "config.toml"


def named_backends(path: Path | None = None) -> dict[str, dict]:
    """The ``[backends.NAME]`` tables of the config file ({} when there is no file)."""
    path = path or config_path()
    if not path.is_file():
        return {}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        tables = tomllib.loads(path.read_text(encoding="utf-8")).get("backends", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInputError(f"cannot read the promptx config {path}: {exc}") from None
    if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
        raise InvalidInputError(f"{path}: [backends] must hold tables such as [backends.NAME]")
    return tables


def remote_backend(name: str = "openai", **options) -> Backend:
    """An ``OpenAIBackend`` from a config entry ``name`` (or plain "openai") and explicit options
    (None values are not given)."""
    settings = _settings(name)
    settings.update({k: v for k, v in options.items() if v is not None})
    unknown = set(settings) - REMOTE_KEYS - {"type", "api_key"}
    if unknown:
        raise InvalidInputError(
            f"backend {name!r}: unknown setting(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(REMOTE_KEYS))}"
        )
    settings.pop("type", None)
    from .openai import OpenAIBackend

    return OpenAIBackend(**settings)


def is_remote(name: str | None) -> bool:
    """True when ``name`` picks a remote backend (``"openai"`` or a config entry)."""
    return name is not None and name != "embedded"


def _settings(name: str) -> dict:
    if name == "openai":
        return {}
    tables = named_backends()
    if name not in tables:
        known = ", ".join([*BUILT_IN, *sorted(tables)])
        raise InvalidInputError(
            f"unknown backend {name!r}; choose from: {known} "
            f"(named backends live in {config_path()})"
        )
    settings = dict(tables[name])
    kind = settings.get("type", "openai")
    if kind != "openai":
        raise InvalidInputError(
            f"backend {name!r} in {config_path()}: type must be 'openai', not {kind!r}"
        )
    return settings
