"""Chat Completions target: state (``state.py``), pure chunk builders (``output.py``), the
``Sink`` that drives both (``writer.py``)."""
