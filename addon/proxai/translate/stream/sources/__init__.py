"""Source-protocol wrappers: each validates its protocol's event order, keeps its own error
texts (seed 001 "protocol wrappers keep source-specific ordering and error texts") and drives a
``Sink``."""
