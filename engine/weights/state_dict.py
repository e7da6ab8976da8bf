"""A model directory's weights as one state dict, and the error of a directory that holds none.

Shared by the loader (``loading``) and adapter merging (``adapters``), which import each other's
helpers otherwise. Not here: renaming or fusing tensors (``loading.fuse_state_dict``).
"""

from __future__ import annotations

from pathlib import Path

import torch


class ModelLoadError(ValueError):
    """The directory does not hold a loadable model."""


def read_state_dict(model_dir: Path) -> dict[str, torch.Tensor]:
    """Every tensor of the directory's ``*.safetensors`` files."""
    from safetensors.torch import load_file

    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise ModelLoadError(f"{model_dir}: no *.safetensors weight files")
    state: dict[str, torch.Tensor] = {}
    for path in files:
        state.update(load_file(str(path)))
    return state
