"""The planning layer: the cost-aware harness, its tree policy, acceptance calibration,
cost tables and their calibration.

Not here: the decode loops (``engine.speculative.loop``).
"""
