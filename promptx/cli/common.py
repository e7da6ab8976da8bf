"""What several commands share: loading the model into a ``Generator``, the ``--model`` help.

Not here: a command's own options and output.
"""

from __future__ import annotations

from ..errors import ModelError
from ..models import prepare, resolve_model

MODEL_HELP = (
    "Model directory, .gguf file or ORG/NAME[@REV] from the local Hugging Face cache "
    "(default: the embedded model)."
)


def load_generator(
    model: str | None,
    dtype: str,
    device: str | None = None,
    *,
    quiet: bool = False,
    cuda_graphs: bool | None = None,
):
    """(model source, prepared directory, ``engine.generator.Generator``); a model that cannot be
    loaded is a ``ModelError``. ``cuda_graphs``: on CUDA, replay batch-1 passes from CUDA graphs
    (None: the engine's default, ``PROMPTX_CUDA_GRAPHS``)."""
    source = resolve_model(model)
    directory = prepare(source, quiet=quiet)
    try:
        from engine import Generator
        from engine import default_device

        return (
            source,
            directory,
            Generator.from_dir(
                directory, dtype=dtype, device=device or default_device(), cuda_graphs=cuda_graphs
            ),
        )
    except (ValueError, OSError, RuntimeError) as exc:
        raise ModelError(f"cannot load model {source.name}: {exc}") from exc
