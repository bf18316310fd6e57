"""The core: the SSE scanner, the content decoders, the protocol-neutral model, request detection
and the typed errors (docs/design/core.md)."""
