"""Anthropic Messages target: state (``state.py``), pure event builders (``output.py``), the
``Sink`` that drives both (``writer.py``)."""
