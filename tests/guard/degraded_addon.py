"""mitmdump script for the degrade-path test: ProxAI as usual, but the start-up check of the mitmproxy
internals reports one missing, as a different mitmproxy version would."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "addon"))

from proxai.mitm import injection
from proxai.mitm.addon import ProxAI

injection.check_internals = lambda: injection.InternalsReport(False, ("HttpStream.simulated_missing",))

addons = [ProxAI()]
