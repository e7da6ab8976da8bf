"""Fast reads of a module's registered submodules, parameters and buffers.

``nn.Module`` keeps them in dicts of its own and returns them from ``__getattr__``, which
Python calls only after a normal attribute lookup has failed: about a microsecond a read on
this project's CPUs, and more in a single-token step, whose weights push the interpreter's
own data out of the caches. A step of the target reads ~20 of them a block; the int4 step
was ~5% slower for it than a pass over flat lists of tensors. ``Registered``, declared on a
class under the attribute's name, reads the dict directly: the same object
``__getattr__`` returns, whatever was swapped in since (``setattr`` of another module or
parameter, ``Module.to`` replacing a buffer), at about a third of the cost.

Not here: which classes declare what (``engine.runtime.model``, ``layers``, ``int4``,
``mixed_precision``, ``exact_rows``).
"""

from __future__ import annotations

from torch import nn


class Registered:
    """``module.<name>`` read from the module's ``store`` ("_modules", "_parameters" or
    "_buffers"); anything else (another store, a plain attribute set to None shadows this
    descriptor anyway) through ``nn.Module.__getattr__``, which raises AttributeError when
    the name is not there."""

    def __init__(self, store: str = "_modules") -> None:
        self.store = store
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, module: nn.Module | None, owner: type | None = None):
        if module is None:
            return self
        try:
            return module.__dict__[self.store][self.name]
        except KeyError:
            return nn.Module.__getattr__(module, self.name)


def submodule() -> Registered:
    return Registered("_modules")


def parameter() -> Registered:
    return Registered("_parameters")


def buffer() -> Registered:
    return Registered("_buffers")
