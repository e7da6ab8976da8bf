"""The decode layer: sampling, stop rules, statistics, the commit step, plain decoding and prefix
reuse.

Not here: speculation (``engine.speculative.loop``).
"""
