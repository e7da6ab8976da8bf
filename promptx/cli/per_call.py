"""The ``promptx enhance`` flags of the per-call options, made from their one declaration
(``promptx.options.EnhanceOptions``): each flag takes its type, range, choices and help from its
field, so that none of them is written twice.

Not here: the command (``cli.main``) and its other flags (the Enhancer's, the batch's), which are
click's own.
"""

from __future__ import annotations

from typing import Any, Callable

import click

from ..options import EnhanceOptions, choices, value_range, value_type


def flag_name(name: str) -> str:
    """The command line's name of the option ``name``: ``max_new_tokens`` ->
    ``--max-new-tokens``."""
    return "--" + name.replace("_", "-")


def per_call_option(name: str, **overrides: Any) -> Callable:
    """The decorator that adds the flag of the per-call option ``name`` to a click command;
    ``overrides``: click settings of a flag whose value is not the option's type (``--image``:
    a path)."""
    settings = {**flag_settings(name), **overrides}
    if "type" not in settings and not settings.get("is_flag") and value_type(name) is not str:
        raise TypeError(
            f"{flag_name(name)}: {name} has no click type of its own; give the flag one (type=...)"
        )
    return click.option(flag_name(name), name, **settings)


def flag_settings(name: str) -> dict[str, Any]:
    """The click settings the declaration gives the option ``name``'s flag: its help, and its
    value's type (a range, a choice; none for text), or a plain flag for a yes/no option that is
    off unless given."""
    field = EnhanceOptions.model_fields[name]
    settings: dict[str, Any] = {"help": field.description}
    kind, span, allowed = value_type(name), value_range(name), choices(name)
    if kind is bool and field.default is False:
        settings["is_flag"] = True
    elif allowed is not None:
        settings["type"] = click.Choice(allowed)
    elif span is not None and kind in (int, float):
        settings["type"] = (click.IntRange if kind is int else click.FloatRange)(*span)
    return settings
