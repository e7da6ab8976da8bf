"""Builtin promptx target profiles: data files only (one ``*.toml`` per target).

Installed as the package ``promptx_templates``; loaded and validated by
``promptx.profiles.registry``. There is no code here.
"""
