"""The runtime layer: the Llama-family model, its layers, KV caches, precisions and devices.

Not here: reading weights (``engine.weights``), decoding (``engine.decode``).
"""
