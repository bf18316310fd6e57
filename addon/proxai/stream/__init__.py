"""The protocol-neutral stream layer shared by the grammars and the writers: the neutral calls a
grammar makes (``sink``). docs/design/translation.md describes them."""
