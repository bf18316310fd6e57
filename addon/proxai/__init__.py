"""ProxAI: observe, guard and translate LLM API streams inside mitmproxy.

The package is split into a sans-IO core (everything outside ``proxai.mitm``) and a thin
mitmproxy shell (``proxai.mitm``). The core takes bytes, dicts and timestamps and returns
events, bytes and summaries; it never reads a clock, opens a socket or imports mitmproxy.
"""

__version__ = "0.1.0"
