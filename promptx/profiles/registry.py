"""Find, load and look up target profiles (``*.toml`` template files).

Builtin profiles ship in the ``promptx_templates`` package (``templates/`` in
the source tree). User directories, from ``TemplateRegistry(extra_dirs)``
and the ``PROMPTX_TEMPLATES`` environment variable (os.pathsep-separated),
are loaded after them: a user file replaces the builtin profile of the same
name. Names and aliases are case-insensitive. This module does not render
prompts (``render``) or define the schema (``profiles``).
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from promptx.errors import TemplateError, UnknownTargetError
from promptx.profiles.schema import Profile

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "ENV_VAR",
    "TemplateRegistry",
    "builtin_template_dir",
    "default_registry",
    "get_profile",
    "load_profile_file",
]

ENV_VAR = "PROMPTX_TEMPLATES"


def builtin_template_dir() -> Path:
    """The directory of the builtin ``*.toml`` profiles."""
    try:
        return Path(str(importlib.resources.files("promptx_templates")))
    except ModuleNotFoundError:  # source tree without an (editable) install
        return Path(__file__).resolve().parent.parent.parent / "templates"


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def load_profile_file(path: str | os.PathLike[str]) -> Profile:
    """Parse and validate one template file; any problem raises TemplateError.

    The message names the file and the field, e.g.
    ``templates/foo.toml: length.max_words: Input should be a valid integer``.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TemplateError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise TemplateError(f"{path}: not UTF-8 text: {exc.reason}") from None
    except tomllib.TOMLDecodeError as exc:
        raise TemplateError(f"{path}: TOML syntax error: {exc}") from None
    name = data.get("name")
    if isinstance(name, str) and name != path.stem:
        raise TemplateError(f"{path}: name: {name!r} must equal the file name {path.stem!r}")
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise TemplateError(f"{path}: {_describe(exc)}") from None


class TemplateRegistry:
    """All known profiles: builtins, then user directories overriding them."""

    def __init__(self, extra_dirs: Sequence[str | os.PathLike[str]] = ()) -> None:
        self._profiles: dict[str, Profile] = {}
        self._sources: dict[str, Path] = {}
        self._rank: dict[str, int] = {}  # index of the directory a profile came from
        env = [Path(p).expanduser() for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
        dirs = [builtin_template_dir(), *env, *(Path(d).expanduser() for d in extra_dirs)]
        for rank, directory in enumerate(dirs):
            self._load_dir(directory, rank)
        self._aliases = self._build_aliases()

    def _load_dir(self, directory: Path, rank: int) -> None:
        if not directory.is_dir():
            raise TemplateError(f"{directory}: template directory does not exist")
        for path in sorted(directory.glob("*.toml")):
            profile = load_profile_file(path)
            self._profiles[profile.name] = profile
            self._sources[profile.name] = path
            self._rank[profile.name] = rank

    def _build_aliases(self) -> dict[str, str]:
        aliases: dict[str, str] = {}
        # builtins first, so a clash is reported against the user's file
        for name in sorted(self._profiles, key=lambda n: (self._rank[n], n)):
            for alias in self._profiles[name].aliases:
                other = aliases.get(alias) or (alias if alias in self._profiles else None)
                if other is not None:
                    raise TemplateError(
                        f"{self._sources[name]}: aliases: {alias!r} is already used by "
                        f"{self._sources[other]}"
                    )
                aliases[alias] = name
        return aliases

    def names(self) -> list[str]:
        """Profile names, sorted."""
        return sorted(self._profiles)

    def profiles(self) -> list[Profile]:
        """All profiles, sorted by name."""
        return [self._profiles[n] for n in self.names()]

    def aliases(self) -> dict[str, str]:
        """Alias -> profile name."""
        return dict(self._aliases)

    def source(self, name_or_alias: str) -> Path:
        """The file a profile was loaded from."""
        return self._sources[self.get(name_or_alias).name]

    def __contains__(self, name_or_alias: object) -> bool:
        if not isinstance(name_or_alias, str):
            return False
        key = name_or_alias.strip().lower()
        return key in self._profiles or key in self._aliases

    def get(self, name_or_alias: str) -> Profile:
        """The profile with this name or alias (case-insensitive)."""
        key = name_or_alias.strip().lower()
        name = key if key in self._profiles else self._aliases.get(key)
        if name is None:
            aliases = ", ".join(f"{a}->{n}" for a, n in sorted(self._aliases.items()))
            raise UnknownTargetError(
                f"unknown target {name_or_alias!r}; valid targets: {', '.join(self.names())}"
                + (f" (aliases: {aliases})" if aliases else "")
            )
        return self._profiles[name]


@functools.lru_cache(maxsize=1)
def default_registry() -> TemplateRegistry:
    """The registry of builtins plus $PROMPTX_TEMPLATES, built once.

    Call ``default_registry.cache_clear()`` after changing the variable.
    """
    return TemplateRegistry()


def registry_for(templates_dir=None) -> TemplateRegistry:
    """The registry for ``templates_dir`` (a folder, several, or None: ``default_registry()``)."""
    if templates_dir is None:
        return default_registry()
    dirs = [templates_dir] if isinstance(templates_dir, (str, os.PathLike)) else list(templates_dir)
    return TemplateRegistry([Path(d) for d in dirs])


def get_profile(name_or_alias: str) -> Profile:
    """Shorthand for ``default_registry().get(name_or_alias)``."""
    return default_registry().get(name_or_alias)
