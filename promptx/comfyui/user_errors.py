"""promptx's typed errors as one-line messages for the ComfyUI user.

ComfyUI shows a failing node's exception type and message in its error dialog; a
``ValueError("promptx: prompt is empty")`` raised without its chain reads better there than
promptx's own exception with a traceback into the library. Only ``PromptxError`` is turned
into a message: anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from promptx.errors import PromptxError


@contextmanager
def as_user_message() -> Iterator[None]:
    """Re-raise a ``PromptxError`` as ``ValueError("promptx: <one line>")``, without its chain."""
    try:
        yield
    except PromptxError as exc:
        raise ValueError(f"promptx: {' '.join(str(exc).split())}") from None
