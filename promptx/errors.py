"""The one typed error tree of promptx.

The library raises these; only the CLI catches them and prints one line.
Every message says what went wrong and, where possible, how to fix it.
"""


class PromptxError(Exception):
    """Base class of every error promptx raises on purpose."""


class InvalidInputError(PromptxError, ValueError):
    """The caller's prompt, option or argument cannot be used."""


class PromptTooLongError(InvalidInputError):
    """The rendered prompt does not fit the model's context window."""


class ImageError(InvalidInputError):
    """An image input is unreadable, of an unsupported format or too large."""


class UnknownTargetError(PromptxError, KeyError):
    """No template profile or alias has the requested name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class TemplateError(PromptxError):
    """A template file is malformed or fails schema validation."""


class ModelError(PromptxError):
    """The model could not be found, loaded or run."""


class ModelNotFoundError(ModelError, FileNotFoundError):
    """The requested model (or the embedded default) is not installed."""


class BackendError(ModelError):
    """A generation backend failed while producing text."""


class MissingExtraError(PromptxError):
    """A feature needs an optional dependency that is not installed."""

    def __init__(self, feature: str, extra: str) -> None:
        super().__init__(
            f"{feature} needs the '{extra}' extra: "
            f"pip install -e '.[{extra}]' in promptx's checkout"
        )
