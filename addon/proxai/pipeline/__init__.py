"""A flow's pipeline, sans-IO: the flow observer (bytes, timing, tail), the carrier that drives one
streamed response, and the bounded stages around it (docs/design/carrier.md)."""
