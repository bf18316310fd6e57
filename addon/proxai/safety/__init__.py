"""Safety of what ProxAI writes: redaction of secrets and terminal-safe text (docs/security.md)."""
