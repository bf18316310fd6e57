"""ProxAI benchmarks: every figure is a ratio to a floor measured in the same run.

Run ``.venv/bin/python -m bench`` (or ``just bench``) from the repository root; ``--quick`` is a
smoke run. docs/performance.md holds the figures and the exact command.
"""
