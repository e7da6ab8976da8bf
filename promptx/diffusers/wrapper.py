"""``enhance_pipeline(pipe)``: a diffusers pipeline that enhances its prompt when asked.

``wrapped(prompt=..., enhance_prompt=True, ...)`` enhances ``prompt`` (a list of prompts in
one batched ``enhance_many``), fills ``negative_prompt`` with the profile's unless one (or
``negative_prompt_embeds``) is given and the pipeline takes it, grounds image-to-video and
image-to-image profiles in the call's ``image``, and calls the pipeline with everything else
as given. The output carries the results: ``output.enhanced_prompts`` (a list of
EnhancedPrompt), also kept as ``wrapped.last_enhanced``. Without ``enhance_prompt=True`` (or
``always=True``) the call goes to the pipeline untouched. Other attributes are the pipeline's
(``wrapped.to("cuda")``, ``wrapped.scheduler``).
"""

from __future__ import annotations

import inspect
from typing import Any

from promptx.enhancer import Enhancer
from promptx.errors import InvalidInputError
from promptx.result import EnhancedPrompt

from .enhance import enhance_prompts, resolve_enhancer, split_options

__all__ = ["EnhancedPipeline", "enhance_pipeline"]


class _Arguments:
    """A call's arguments by parameter name, bound to the pipeline's signature (``**kwargs``
    too)."""

    def __init__(self, signature: inspect.Signature, args: tuple, kwargs: dict) -> None:
        self.signature = signature
        self.bound = signature.bind_partial(*args, **kwargs)
        self._var = next(
            (p.name for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD), None
        )

    def accepts(self, name: str) -> bool:
        parameter = self.signature.parameters.get(name)
        return parameter is not None and parameter.kind not in (
            parameter.VAR_POSITIONAL,
            parameter.VAR_KEYWORD,
        )

    def get(self, name: str) -> Any:
        if self.accepts(name):
            return self.bound.arguments.get(name)
        return self.bound.arguments.get(self._var, {}).get(name) if self._var else None

    def set(self, name: str, value: Any) -> None:
        if self.accepts(name):
            self.bound.arguments[name] = value
        else:
            self.bound.arguments.setdefault(self._var, {})[name] = value

    def named(self) -> dict[str, Any]:
        """Every argument by name (those of ``**kwargs`` included)."""
        named = {k: v for k, v in self.bound.arguments.items() if k != self._var}
        named.update(self.bound.arguments.get(self._var, {}) if self._var else {})
        return named


class EnhancedPipeline:
    """A pipeline whose calls enhance their prompt with promptx (see ``enhance_pipeline``)."""

    #: how ``enhance_for`` tells this wrapper from a pipeline (without importing this module)
    wraps_a_pipeline = True

    def __init__(
        self,
        pipe: Any,
        *,
        target: str | None = None,
        always: bool = False,
        enhancer: Enhancer | None = None,
        **options,
    ) -> None:
        if not callable(pipe):
            raise InvalidInputError(
                f"enhance_pipeline needs a pipeline to call, not {type(pipe).__name__}"
            )
        init, self.options, self.batch_options = split_options(options)
        self.pipe, self.target, self.always = pipe, target, bool(always)
        self.enhancer = resolve_enhancer(enhancer, init)
        self.last_enhanced: list[EnhancedPrompt] | None = None

    def __getattr__(self, name: str) -> Any:
        if name == "pipe":  # not set yet (during unpickling, say)
            raise AttributeError(name)
        return getattr(self.pipe, name)

    def __repr__(self) -> str:
        return f"<EnhancedPipeline {type(self.pipe).__name__} target={self.target or 'auto'}>"

    def __call__(
        self,
        *args,
        enhance_prompt: bool | None = None,
        enhance_options: dict | None = None,
        **kwargs,
    ):
        """Call the pipeline; with ``enhance_prompt=True`` (or ``always``) its prompt is enhanced
        first.

        ``enhance_options``: options of this call's enhancement, over the wrapper's defaults
        (``seed``, ``style``, ``caption``, ...).
        """
        if not (self.always if enhance_prompt is None else enhance_prompt):
            return self.pipe(*args, **kwargs)
        try:
            arguments = _Arguments(inspect.signature(self.pipe.__call__), args, kwargs)
        except (TypeError, ValueError):  # arguments the pipeline does not take: let it say so
            return self.pipe(*args, **kwargs)
        prompt = arguments.get("prompt")
        if prompt is None or isinstance(prompt, (list, tuple)) and not prompt:
            return self.pipe(*args, **kwargs)  # prompt_embeds given: nothing to enhance
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        single = isinstance(prompt, str)
        init, options, batch = split_options(enhance_options or {})
        if init:
            raise InvalidInputError(
                f"enhance_options cannot change the Enhancer ({', '.join(sorted(init))}); "
                f"give those to enhance_pipeline"
            )
        results = enhance_prompts(
            self.pipe,
            prompts,
            enhancer=self.enhancer,
            target=self.target,
            image=arguments.get("image"),
            call=arguments.named(),
            options={**self.options, **options},
            batch={**self.batch_options, **batch},
        )
        arguments.set("prompt", results[0].text if single else [r.text for r in results])
        if (
            arguments.accepts("negative_prompt")
            and arguments.get("negative_prompt") is None
            and arguments.get("negative_prompt_embeds") is None
            and any(r.negative_prompt for r in results)
        ):
            negatives = [r.negative_prompt for r in results]
            arguments.set("negative_prompt", negatives[0] if single else negatives)
        output = self.pipe(*arguments.bound.args, **arguments.bound.kwargs)
        self.last_enhanced = results
        try:
            output.enhanced_prompts = results
        except (AttributeError, TypeError):  # a tuple (return_dict=False): see last_enhanced
            pass
        return output


def enhance_pipeline(pipe: Any, **defaults) -> EnhancedPipeline:
    """Wrap ``pipe`` so that ``wrapped(prompt=..., enhance_prompt=True, ...)`` enhances the prompt.

    Defaults: ``target`` (a profile; by default the pipeline class's), ``always=True`` (enhance
    every call unless ``enhance_prompt=False``), ``enhancer`` (an Enhancer, any backend) or
    Enhancer options (``model``, ``backend``, ``base_url``, ...; by default promptx's shared
    enhancer), enhance options (``seed``, ``style``, ``caption``, ``language``, ...) and batch
    options (``batch_size``, ``progress``) for lists of prompts.
    """
    return EnhancedPipeline(pipe, **defaults)
