"""The ``promptx`` command line: one module per command group (``main`` holds the group).

Not here: the SDK (``promptx.enhancer``), the engine.
"""
