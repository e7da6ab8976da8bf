"""The weights layer: loading checkpoints and GGUF files, the tokenizer, the cache folder.

Not here: the model itself (``engine.runtime``).
"""
