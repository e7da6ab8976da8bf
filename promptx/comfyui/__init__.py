"""promptx's ComfyUI node pack: an Enhancer loader and an Enhance Prompt node.

ComfyUI loads this file by its path (``custom_nodes/<folder>/__init__.py``) under a module
name of its own; the imports below are absolute so that the nodes, and the enhancers they
keep loaded, live in one place (``promptx.comfyui.*``) however the pack was found.
Importing it does not import torch (only an IMAGE input does). Install and use:
``examples/comfyui/README.md``.
"""

from promptx.comfyui.nodes_enhance import EnhancePrompt
from promptx.comfyui.nodes_loader import EnhancerLoader

NODE_CLASS_MAPPINGS = {
    "PromptxEnhancerLoader": EnhancerLoader,
    "PromptxEnhancePrompt": EnhancePrompt,
}

NODE_DISPLAY_NAME_MAPPINGS = {
    "PromptxEnhancerLoader": "promptx Enhancer",
    "PromptxEnhancePrompt": "promptx Enhance Prompt",
}

__all__ = ["NODE_CLASS_MAPPINGS", "NODE_DISPLAY_NAME_MAPPINGS"]
