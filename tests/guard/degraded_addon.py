"""mitmdump script for the degrade-path test: ProxAI as usual, on a mitmproxy that lacks one internal
the start-up check looks for, as a different mitmproxy version would: ``HttpStream`` no longer
declares ``response_body_buf`` (a declaration only: mitmproxy itself runs unchanged)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "addon"))

from mitmproxy.proxy.layers.http import HttpStream

from proxai.mitm.addon import ProxAI

del HttpStream.__annotations__["response_body_buf"]

addons = [ProxAI()]
