"""Progress bars for long engine jobs: tqdm on stderr, or a silent stand-in with the same
methods."""

from __future__ import annotations


def progress_bar(
    total: int | None = None,
    *,
    enabled: bool = True,
    desc: str = "",
    initial: int = 0,
    unit: str = "it",
):
    """tqdm on stderr when available and enabled, else a silent stand-in with the same methods."""
    if enabled:
        try:
            from tqdm.auto import tqdm

            return tqdm(total=total, desc=desc, initial=initial, unit=unit, dynamic_ncols=True)
        except ImportError:  # pragma: no cover - tqdm ships with transformers/huggingface_hub
            pass
    return _Silent()


class _Silent:
    def update(self, n: int = 1) -> None: ...
    def set_postfix(self, *args, **kwargs) -> None: ...
    def write(self, text: str) -> None: ...
    def close(self) -> None: ...
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None: ...
