"""Fault injection on live traffic: rules (``rules``) and the per-flow stage (``stage``).

Sans-IO; the mitmproxy part is ``proxai.mitm.faults``. docs/design/faults.md has the rules,
docs/agent-testing.md the recipes.
"""
