"""The mitmdump script of a checkout: ``mitmdump -s addon/proxai.py``. It puts the checkout's package
first on ``sys.path`` and runs the package's own script (``proxai/mitm/script/proxai_addon.py``, what
an installed ``proxai`` loads), a fresh run each time mitmproxy loads or reloads this file."""

import os
import runpy
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from proxai.mitm.launch import script_path

addons = runpy.run_path(str(script_path()))["addons"]
