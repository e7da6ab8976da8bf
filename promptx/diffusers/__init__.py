"""promptx in front of diffusers pipelines (extra ``promptx[diffusers]``).

    from promptx.diffusers import enhance_for, enhance_pipeline

    result = enhance_for(pipe, "a fox in the snow")      # the profile of pipe's class,
                                                          # its tokenizer's budget
    pipe(prompt=str(result), negative_prompt=result.negative_prompt)

    pipe = enhance_pipeline(pipe, seed=1)                 # or always=True, enhancer=..., model=...
    out = pipe(prompt=["a red car", "a blue boat"], enhance_prompt=True, num_inference_steps=30)
    out.enhanced_prompts                                  # [EnhancedPrompt, EnhancedPrompt]

- ``targets``: pipeline class -> profile (``PIPELINE_TARGETS``, ``target_for``);
- ``encoders``: the pipeline tokenizer that counts the budget, and what its encoder keeps;
- ``enhance``: ``enhance_for``;
- ``wrapper``: ``enhance_pipeline`` / ``EnhancedPipeline``;

Importing this package imports neither diffusers nor torch: it works on any object with the
attributes of a diffusers pipeline (``tokenizer``, ``tokenizer_2``, ..., ``__call__``).
"""

from .encoders import PipelineEncoder, pipeline_encoder
from .enhance import enhance_for
from .targets import PIPELINE_TARGETS, target_for
from .wrapper import EnhancedPipeline, enhance_pipeline

__all__ = [
    "PIPELINE_TARGETS",
    "EnhancedPipeline",
    "PipelineEncoder",
    "enhance_for",
    "enhance_pipeline",
    "pipeline_encoder",
    "target_for",
]
