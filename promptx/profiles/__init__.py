"""Target profiles: their schema, the template registry and rendering into chat messages.

Not here: decoding (``promptx.backends``), text rules (``promptx.text``).
"""
