"""Text rules: clean-up of model output, validation, language detection and word counts.

Not here: faithfulness (``promptx.quality``), profiles (``promptx.profiles.schema``).
"""
