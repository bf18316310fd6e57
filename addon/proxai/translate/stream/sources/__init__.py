"""Source-protocol wrappers of the protocols whose grammar (``proxai.protocols``) does not drive the
writers yet: each validates its protocol's event order a second time, keeps its own error texts
and drives a ``Sink`` (docs/design/protocol-grammars.md, "What is not yet one reading")."""
