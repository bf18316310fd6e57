"""A mitmproxy script that loads only the visibility addon (the ProxAI view and commands).

The mitmweb / mitmdump tests load saved flows with ``-r``; mitmproxy runs the flow hooks for loaded
flows, and this keeps their recorded metadata exactly as saved so the rendered text is exact.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "addon"))

from proxai.mitm.commands import ViewOnly

addons = [ViewOnly()]
