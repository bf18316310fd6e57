"""The ``python -m proxai`` subcommands, one module each (docs/usage.md)."""
